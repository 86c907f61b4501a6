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

int fg_check_tensor(PyObject *spec, PyObject *t, void **memo, void **memo_data)
{
    if ((PyObject *)Py_TYPE(t) != PyTuple_GET_ITEM(spec, 0))
        return 0;
    int fast = PyTuple_GET_ITEM(spec, 7) == Py_True, r;
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
    void *data = PyTuple_GET_ITEM(spec, 8) == Py_True ? data_ptr_of(t, fast) : NULL;
    if (data != NULL && *memo == (void *)t && data == *memo_data)
        return 1;
    if ((r = fg_compare_owned(tensor_fact(t, fast, &t_device, s_device), PyTuple_GET_ITEM(spec, 2), 0)) != 1 ||
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
