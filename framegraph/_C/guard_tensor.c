/* guard_tensor.c: the guard program's tensor check (TENSOR ops of guards.c).
 *
 * Tensors are the guard program's expensive check. For torch.Tensor and nn.Parameter the
 * facts are read through torch's own getters and method descriptors (handed over once by
 * set_tensor_api: no attribute lookup, no bound method), strides by is_contiguous() where
 * that decides them (it allocates nothing; stride() makes a tuple of new ints), and
 * a tensor op on a module's parameter or buffer remembers the last tensor that passed it:
 * its address and its data_ptr. A tensor's dispatch keys and device change in place only
 * through `.data =`, `set_` or `swap_tensors`, which give the same object another tensor's
 * data; the same object with the same (non-null) data pointer skips those two reads, the
 * dearest ones. Type, dtype, requires_grad, sizes and strides are always read:
 * `requires_grad_()`, `resize_()` and `t_()` change them in place, and `.data =` a view of the
 * tensor's own storage changes them with neither the data pointer nor `_version` moving. The memo holds no
 * reference (a strong one would keep a deleted model's weights alive, a weak one makes
 * `swap_tensors` refuse the parameter); a parameter is replaced by assigning a new object,
 * made while the old one still lives, so a new tensor at a remembered address is not what a
 * module hands over. Complex tensors (a conjugate view shares the data pointer) and tensors
 * without storage are never remembered.
 *
 * Where torch's stable C shim is handed over (set_tensor_shim: torch 2.13, whose shim
 * reports a failure without logging it), a dense tensor's dtype, device, sizes, strides and
 * data pointer are read through it from the TensorImpl that `_cdata` names, with no Python
 * object made per fact (the device getter makes a torch.device on every read): an at::Tensor
 * is one TensorImpl pointer, so the address of a variable holding `_cdata` is a valid handle
 * to it. Any shim failure (sparse, nested or batched tensors, whose sizes or strides are not
 * plain) takes the Python path instead.
 */
#include "compat.h"
#include "guard_tensor.h"

typedef struct {
    getter get;
    void *closure;
} Getter;
static Getter t_dtype, t_requires_grad, t_shape, t_device;
static PyObject *tensor_api = NULL; /* keeps the descriptors and dispatch_keys alive */
/* TensorBase's method descriptors, called with the tensor as their first argument: no
 * attribute lookup and no bound method on each check. */
static PyObject *m_stride, *m_data_ptr, *m_is_contiguous;
static PyObject *dispatch_keys = NULL, *s_stride, *s_data_ptr;
static PyObject *s_dtype, *s_requires_grad, *s_shape, *s_device;

/* torch's stable C shim (torch/csrc/inductor/aoti_torch/c/shim.h): each returns 0 on success. */
typedef int32_t (*shim_i32)(void *, int32_t *);
typedef int32_t (*shim_i64)(void *, int64_t *);
typedef int32_t (*shim_dims)(void *, int64_t **);
typedef int32_t (*shim_ptr)(void *, void **);
static struct {
    Getter cdata;
    shim_i32 dtype, device_type, device_index;
    shim_i64 dim;
    shim_dims sizes, strides;
    shim_ptr data_ptr;
    PyObject *cdata_descr; /* kept alive: the getter and the type it reads from are its */
    int ready;
} shim;

static int getter_of(PyObject *descr, Getter *out)
{
    if (!PyObject_TypeCheck(descr, &PyGetSetDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "set_tensor_api: expected a getset descriptor, got %.200s",
                     Py_TYPE(descr)->tp_name);
        return -1;
    }
    out->get = ((PyGetSetDescrObject *)descr)->d_getset->get;
    out->closure = ((PyGetSetDescrObject *)descr)->d_getset->closure;
    return 0;
}

static int method_of(PyObject *descr, PyObject **out)
{
    if (!PyObject_TypeCheck(descr, &PyMethodDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "set_tensor_api: expected a method descriptor, got %.200s",
                     Py_TYPE(descr)->tp_name);
        return -1;
    }
    *out = descr;
    return 0;
}

PyObject *fg_set_tensor_api(PyObject *m, PyObject *args)
{
    PyObject *dtype, *requires_grad, *shape, *device, *keys, *stride, *data_ptr, *is_contiguous;
    if (!PyArg_ParseTuple(args, "OOOOOOOO:set_tensor_api", &dtype, &requires_grad, &shape, &device, &keys,
                          &stride, &data_ptr, &is_contiguous))
        return NULL;
    if (getter_of(dtype, &t_dtype) < 0 || getter_of(requires_grad, &t_requires_grad) < 0 ||
        getter_of(shape, &t_shape) < 0 || getter_of(device, &t_device) < 0 ||
        method_of(stride, &m_stride) < 0 || method_of(data_ptr, &m_data_ptr) < 0 ||
        method_of(is_contiguous, &m_is_contiguous) < 0)
        return NULL;
    Py_XSETREF(tensor_api, Py_NewRef(args));
    dispatch_keys = keys;
    Py_RETURN_NONE;
}

/* fast: the tensor's type is torch.Tensor or nn.Parameter, whose getters nothing overrides. */
static inline PyObject *tensor_fact(PyObject *t, int fast, Getter *g, PyObject *name)
{
    return fast ? g->get(t, g->closure) : PyObject_GetAttr(t, name);
}

static inline PyObject *tensor_call(PyObject *t, int fast, PyObject *method, PyObject *name)
{
    return fast ? PyObject_Vectorcall(method, &t, 1, NULL) : PyObject_CallMethodNoArgs(t, name);
}

/* 1 when `actual` (a tuple) has expected's length and agrees wherever expected is not None. */
static int dims_match(PyObject *actual, PyObject *expected)
{
    if (!PyTuple_Check(actual) || PyTuple_GET_SIZE(actual) != PyTuple_GET_SIZE(expected))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(expected); i++) {
        PyObject *e = PyTuple_GET_ITEM(expected, i);
        if (e == Py_None)
            continue;
        int r = PyObject_RichCompareBool(PyTuple_GET_ITEM(actual, i), e, Py_EQ);
        if (r != 1)
            return r;
    }
    return 1;
}

static void *data_ptr_of(PyObject *t, int fast)
{
    PyObject *p = tensor_call(t, fast, m_data_ptr, s_data_ptr);
    void *result = p == NULL ? NULL : PyLong_AsVoidPtr(p);
    Py_XDECREF(p);
    if (PyErr_Occurred()) { /* no storage (sparse, nested): never remembered */
        PyErr_Clear();
        return NULL;
    }
    return result;
}

static void *fn_of(PyObject *address)
{
    void *p = PyLong_AsVoidPtr(address);
    if (p == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "set_tensor_shim: a null function address");
    return p;
}

PyObject *fg_set_tensor_shim(PyObject *m, PyObject *args)
{
    PyObject *cdata, *dtype, *dim, *sizes, *strides, *data_ptr, *device_type, *device_index;
    if (!PyArg_ParseTuple(args, "OO!O!O!O!O!O!O!:set_tensor_shim", &cdata, &PyLong_Type, &dtype, &PyLong_Type, &dim,
                          &PyLong_Type, &sizes, &PyLong_Type, &strides, &PyLong_Type, &data_ptr, &PyLong_Type,
                          &device_type, &PyLong_Type, &device_index))
        return NULL;
    shim.ready = 0;
    if (getter_of(cdata, &shim.cdata) < 0 || (shim.dtype = (shim_i32)fn_of(dtype)) == NULL ||
        (shim.device_type = (shim_i32)fn_of(device_type)) == NULL ||
        (shim.device_index = (shim_i32)fn_of(device_index)) == NULL ||
        (shim.dim = (shim_i64)fn_of(dim)) == NULL || (shim.sizes = (shim_dims)fn_of(sizes)) == NULL ||
        (shim.strides = (shim_dims)fn_of(strides)) == NULL || (shim.data_ptr = (shim_ptr)fn_of(data_ptr)) == NULL)
        return NULL;
    Py_XSETREF(shim.cdata_descr, Py_NewRef(cdata));
    shim.ready = 1;
    Py_RETURN_NONE;
}

/* The TensorImpl address of a torch.Tensor or nn.Parameter (exact types: nothing overrides
 * `_cdata`), or NULL with no error set when it cannot be read. */
static void *impl_of(PyObject *t)
{
    PyObject *address = shim.cdata.get(t, shim.cdata.closure);
    void *impl = address == NULL ? NULL : PyLong_AsVoidPtr(address);
    Py_XDECREF(address);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    return impl;
}

PyObject *fg_tensor_shim_numbers(PyObject *m, PyObject *t)
{
    void *impl;
    int32_t dtype, device_type, device_index;
    if (!shim.ready || !PyObject_TypeCheck(t, PyDescr_TYPE(shim.cdata_descr)) || (impl = impl_of(t)) == NULL ||
        shim.dtype(&impl, &dtype) != 0 || shim.device_type(&impl, &device_type) != 0 ||
        shim.device_index(&impl, &device_index) != 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(iii)", (int)dtype, (int)device_type, (int)device_index);
}

int fg_tensor_spec_ok(PyObject *spec)
{
    if (!(PyTuple_Check(spec) && PyTuple_GET_SIZE(spec) == 11 && PyTuple_Check(PyTuple_GET_ITEM(spec, 4)) &&
          PyTuple_Check(PyTuple_GET_ITEM(spec, 5))))
        return 0;
    PyObject *facts = PyTuple_GET_ITEM(spec, 10);
    if (facts == Py_None)
        return 1;
    if (!(PyTuple_Check(facts) && PyTuple_GET_SIZE(facts) == 5 && PyLong_Check(PyTuple_GET_ITEM(facts, 0)) &&
          (PyTuple_GET_ITEM(facts, 3) == Py_None ||
           (PyLong_Check(PyTuple_GET_ITEM(facts, 3)) && PyLong_Check(PyTuple_GET_ITEM(facts, 4))))))
        return 0;
    PyObject *sizes = PyTuple_GET_ITEM(facts, 1), *strides = PyTuple_GET_ITEM(facts, 2);
    return PyBytes_Check(sizes) && PyBytes_Check(strides) && PyBytes_GET_SIZE(sizes) == PyBytes_GET_SIZE(strides) &&
           PyBytes_GET_SIZE(sizes) % sizeof(int64_t) == 0;
}

/* -1 in `expected` (packed int64) matches any value: a dynamic dimension. */
static int packed_match(const int64_t *actual, PyObject *expected, int64_t n)
{
    const int64_t *e = (const int64_t *)PyBytes_AS_STRING(expected);
    for (int64_t i = 0; i < n; i++)
        if (e[i] != -1 && e[i] != actual[i])
            return 0;
    return 1;
}

/* The shim's reading of everything but dispatch keys (and the device, when the facts do not
 * name it: *device is then 0): 1, 0, or 2 when the shim cannot read this tensor (the Python
 * path decides). *data: its data pointer, or NULL. */
static int check_by_shim(PyObject *spec, PyObject *t, void **data, int *device)
{
    PyObject *facts = PyTuple_GET_ITEM(spec, 10);
    void *impl = impl_of(t);
    int32_t dtype, device_type, device_index;
    int64_t dim, *sizes, *strides;
    *device = PyTuple_GET_ITEM(facts, 3) != Py_None;
    if (impl == NULL || shim.dtype(&impl, &dtype) != 0 || shim.dim(&impl, &dim) != 0 ||
        shim.sizes(&impl, &sizes) != 0 || shim.strides(&impl, &strides) != 0 ||
        (*device && (shim.device_type(&impl, &device_type) != 0 || shim.device_index(&impl, &device_index) != 0)))
        return 2;
    if (dtype != PyLong_AsLong(PyTuple_GET_ITEM(facts, 0)) ||
        (*device && (device_type != PyLong_AsLong(PyTuple_GET_ITEM(facts, 3)) ||
                     device_index != PyLong_AsLong(PyTuple_GET_ITEM(facts, 4)))))
        return 0;
    int r = fg_compare_owned(t_requires_grad.get(t, t_requires_grad.closure), PyTuple_GET_ITEM(spec, 3), 1);
    if (r != 1)
        return r;
    PyObject *want_sizes = PyTuple_GET_ITEM(facts, 1);
    if (dim != (int64_t)(PyBytes_GET_SIZE(want_sizes) / sizeof(int64_t)) || !packed_match(sizes, want_sizes, dim) ||
        !packed_match(strides, PyTuple_GET_ITEM(facts, 2), dim))
        return 0;
    if (PyTuple_GET_ITEM(spec, 8) != Py_True || shim.data_ptr(&impl, data) != 0)
        *data = NULL;
    return 1;
}

int fg_check_tensor(PyObject *spec, PyObject *t, void **memo, void **memo_data)
{
    if ((PyObject *)Py_TYPE(t) != PyTuple_GET_ITEM(spec, 0))
        return 0;
    int fast = PyTuple_GET_ITEM(spec, 7) == Py_True, r, device = 0;
    void *data;
    if (fast && shim.ready && PyTuple_GET_ITEM(spec, 10) != Py_None &&
        (r = check_by_shim(spec, t, &data, &device)) != 2) {
        if (r != 1)
            return r;
        goto identity;
    }
    if ((r = fg_compare_owned(tensor_fact(t, fast, &t_dtype, s_dtype), PyTuple_GET_ITEM(spec, 1), 1)) != 1 ||
        (r = fg_compare_owned(tensor_fact(t, fast, &t_requires_grad, s_requires_grad), PyTuple_GET_ITEM(spec, 3), 1)) != 1)
        return r;
    PyObject *dims = tensor_fact(t, fast, &t_shape, s_shape);
    if (dims == NULL)
        return -1;
    r = dims_match(dims, PyTuple_GET_ITEM(spec, 4));
    Py_DECREF(dims);
    if (r != 1)
        return r;
    if (fast && PyTuple_GET_ITEM(spec, 9) == Py_True) {
        /* The sizes matched and none is below 2: contiguous means exactly the expected strides. */
        if ((r = fg_compare_owned(PyObject_Vectorcall(m_is_contiguous, &t, 1, NULL), Py_True, 1)) != 1)
            return r;
    } else {
        if ((dims = tensor_call(t, fast, m_stride, s_stride)) == NULL)
            return -1;
        r = dims_match(dims, PyTuple_GET_ITEM(spec, 5));
        Py_DECREF(dims);
        if (r != 1)
            return r;
    }
    data = PyTuple_GET_ITEM(spec, 8) == Py_True ? data_ptr_of(t, fast) : NULL;
identity:
    if (data != NULL && *memo == (void *)t && data == *memo_data)
        return 1;
    if ((!device &&
         (r = fg_compare_owned(tensor_fact(t, fast, &t_device, s_device), PyTuple_GET_ITEM(spec, 2), 0)) != 1) ||
        (r = fg_compare_owned(PyObject_CallOneArg(dispatch_keys, t), PyTuple_GET_ITEM(spec, 6), 0)) != 1)
        return r;
    *memo = data != NULL ? (void *)t : NULL;
    *memo_data = data;
    return 1;
}

int fg_tensor_api_ready(void)
{
    return tensor_api != NULL;
}

int fg_tensor_init(void)
{
    struct { PyObject **slot; const char *text; } strings[] = {
        {&s_stride, "stride"}, {&s_data_ptr, "data_ptr"}, {&s_dtype, "dtype"},
        {&s_requires_grad, "requires_grad"}, {&s_shape, "shape"}, {&s_device, "device"},
    };
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        if (*strings[i].slot == NULL && (*strings[i].slot = PyUnicode_InternFromString(strings[i].text)) == NULL)
            return -1;
    return 0;
}
