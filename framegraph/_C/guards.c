/* guards.c: the guard program, the check a cache hit pays for, run without Python frames.
 *
 * framegraph/guard_program.py lowers a compiled entry's guard records into a flat list of
 * ops over numbered registers: reads put a value in a register (a local, a global, an
 * attribute or item of another register), checks test a register and stop the program at
 * the first that fails. Register order is the records' order, so a read never runs before
 * the type check that makes it safe, exactly as in the Python check function this replaces
 * (which stays available: config.c_guards = False).
 *
 * Tensors are the expensive check. For torch.Tensor and nn.Parameter the facts are read
 * through the getters of torch's own descriptors (handed over once by set_tensor_api), and
 * a tensor op on a module's parameter or buffer remembers the last tensor that passed it:
 * its address and its data_ptr. A tensor's dispatch keys and device change in place only
 * through `.data =`, `set_` or `swap_tensors`, which give the same object another tensor's
 * data; the same object with the same (non-null) data pointer skips those two reads, the
 * dearest ones. Type, dtype, requires_grad, sizes and strides are always read:
 * `requires_grad_()`, `resize_()` and `t_()` change them in place. The memo holds no
 * reference (a strong one would keep a deleted model's weights alive, a weak one makes
 * `swap_tensors` refuse the parameter); a parameter is replaced by assigning a new object,
 * made while the old one still lives, so a new tensor at a remembered address is not what a
 * module hands over. Complex tensors (a conjugate view shares the data pointer) and tensors
 * without storage are never remembered.
 */
#include "compat.h"
#include "guards.h"

#include <math.h>
#include <stdint.h>

#define OPS(X)                                                                              \
    X(LOCAL) X(GLOBAL) X(ATTR) X(ITEM) X(TYPE) X(CALL)                        /* reads */   \
    X(TYPE_IS) X(IS) X(ID) X(EQUALS) X(FLOAT) X(LEN) X(FALSY) X(DICT_KEYS)    /* checks */  \
    X(NOT_IN_DICT) X(HASATTR) X(ALIAS) X(DISTINCT) X(TENSOR) X(CALLS_ARE) X(PY)
#define AS_ENUM(name) OP_##name,
#define AS_NAME(name) #name,
enum { OPS(AS_ENUM) N_OPS };
static const char *const op_names[] = {OPS(AS_NAME)};

typedef struct {
    int code, dst, src;
    PyObject *arg;
    int *regs; /* DISTINCT: the registers that must hold distinct objects */
    Py_ssize_t n_regs;
    void *memo;        /* TENSOR: address of the last tensor that passed every read */
    void *memo_data;   /* ... and its data_ptr() then */
} Op;

typedef struct {
    PyObject_VAR_HEAD
    vectorcallfunc vectorcall;
    PyObject *dict; /* attributes tools hang on it, as on the Python check function */
    PyObject *weakrefs;
    PyObject *globals;
    Py_ssize_t n_regs;
    Py_ssize_t failed_at; /* index of the op that failed last, -1 when the last run passed */
    Op ops[1];
} GuardProgram;

/* ---- torch's tensor getters ------------------------------------------------- */

typedef struct {
    getter get;
    void *closure;
} Getter;
static Getter t_dtype, t_requires_grad, t_shape, t_device;
static PyObject *tensor_api = NULL; /* keeps the descriptors and dispatch_keys alive */
static PyObject *dispatch_keys = NULL, *s_stride, *s_data_ptr, *s_dict;
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

static PyObject *set_tensor_api(PyObject *m, PyObject *args)
{
    PyObject *dtype, *requires_grad, *shape, *device, *keys;
    if (!PyArg_ParseTuple(args, "OOOOO:set_tensor_api", &dtype, &requires_grad, &shape, &device, &keys))
        return NULL;
    if (getter_of(dtype, &t_dtype) < 0 || getter_of(requires_grad, &t_requires_grad) < 0 ||
        getter_of(shape, &t_shape) < 0 || getter_of(device, &t_device) < 0)
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

static int compare_owned(PyObject *value, PyObject *expected, int identity)
{
    if (value == NULL)
        return -1;
    int r = identity ? value == expected : PyObject_RichCompareBool(value, expected, Py_EQ);
    Py_DECREF(value);
    return r;
}

static void *data_ptr_of(PyObject *t)
{
    PyObject *p = PyObject_CallMethodNoArgs(t, s_data_ptr);
    void *result = p == NULL ? NULL : PyLong_AsVoidPtr(p);
    Py_XDECREF(p);
    if (PyErr_Occurred()) { /* no storage (sparse, nested): never remembered */
        PyErr_Clear();
        return NULL;
    }
    return result;
}

/* spec: (type, dtype, device, requires_grad, sizes, strides, dispatch_keys, fast, remember) */
static int check_tensor(Op *op, PyObject *t)
{
    PyObject *spec = op->arg;
    if ((PyObject *)Py_TYPE(t) != PyTuple_GET_ITEM(spec, 0))
        return 0;
    int fast = PyTuple_GET_ITEM(spec, 7) == Py_True, r;
    if ((r = compare_owned(tensor_fact(t, fast, &t_dtype, s_dtype), PyTuple_GET_ITEM(spec, 1), 1)) != 1 ||
        (r = compare_owned(tensor_fact(t, fast, &t_requires_grad, s_requires_grad), PyTuple_GET_ITEM(spec, 3), 1)) != 1)
        return r;
    PyObject *dims = tensor_fact(t, fast, &t_shape, s_shape);
    if (dims == NULL)
        return -1;
    r = dims_match(dims, PyTuple_GET_ITEM(spec, 4));
    Py_DECREF(dims);
    if (r != 1)
        return r;
    if ((dims = PyObject_CallMethodNoArgs(t, s_stride)) == NULL)
        return -1;
    r = dims_match(dims, PyTuple_GET_ITEM(spec, 5));
    Py_DECREF(dims);
    if (r != 1)
        return r;
    void *data = PyTuple_GET_ITEM(spec, 8) == Py_True ? data_ptr_of(t) : NULL;
    if (data != NULL && op->memo == (void *)t && data == op->memo_data)
        return 1;
    if ((r = compare_owned(tensor_fact(t, fast, &t_device, s_device), PyTuple_GET_ITEM(spec, 2), 0)) != 1 ||
        (r = compare_owned(PyObject_CallOneArg(dispatch_keys, t), PyTuple_GET_ITEM(spec, 6), 0)) != 1)
        return r;
    op->memo = data != NULL ? (void *)t : NULL;
    op->memo_data = data;
    return 1;
}

/* ---- the other checks ---------------------------------------------------------- */

static int same_float(PyObject *x, PyObject *expected)
{
    if (!PyFloat_CheckExact(x))
        return 0;
    double a = PyFloat_AS_DOUBLE(x), e = PyFloat_AS_DOUBLE(expected);
    if (isnan(e))
        return isnan(a);
    /* -0.0 == 0.0, yet 1/x tells them apart */
    return a == e && (e != 0.0 || !signbit(a) == !signbit(e));
}

/* expected: (type, keys, key types or None): list(x) == keys, key types compared too. */
static int dict_keys_match(PyObject *x, PyObject *expected)
{
    if ((PyObject *)Py_TYPE(x) != PyTuple_GET_ITEM(expected, 0))
        return 0;
    PyObject *keys = PyTuple_GET_ITEM(expected, 1), *types = PyTuple_GET_ITEM(expected, 2);
    PyObject *actual = PySequence_List(x);
    if (actual == NULL)
        return -1;
    int r = PyList_GET_SIZE(actual) == PyList_GET_SIZE(keys);
    for (Py_ssize_t i = 0; r == 1 && i < PyList_GET_SIZE(keys); i++) {
        PyObject *k = PyList_GET_ITEM(actual, i);
        if (types != Py_None && (PyObject *)Py_TYPE(k) != PyList_GET_ITEM(types, i))
            r = 0;
        else
            r = PyObject_RichCompareBool(k, PyList_GET_ITEM(keys, i), Py_EQ);
    }
    Py_DECREF(actual);
    return r;
}

static int none_in_dict(PyObject *x, PyObject *names)
{
    PyObject *d = PyObject_GetAttr(x, s_dict);
    if (d == NULL)
        return -1;
    int r = 1;
    for (Py_ssize_t i = 0; r == 1 && i < PyTuple_GET_SIZE(names); i++) {
        int found = PySequence_Contains(d, PyTuple_GET_ITEM(names, i));
        r = found < 0 ? -1 : !found;
    }
    Py_DECREF(d);
    return r;
}

/* A model's parameters make one DISTINCT over a hundred registers or more: insert the
 * pointers into an open-addressing table twice their count, instead of comparing every pair. */
static int all_distinct(PyObject **regs, Op *op)
{
    size_t size = 16;
    while (size < 2 * (size_t)op->n_regs)
        size *= 2;
    PyObject *small[256], **table = size <= 256 ? small : PyMem_Malloc(size * sizeof(PyObject *));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(table, 0, size * sizeof(PyObject *));
    int r = 1;
    for (Py_ssize_t i = 0; r && i < op->n_regs; i++) {
        PyObject *x = regs[op->regs[i]];
        size_t slot = ((uintptr_t)x >> 4) * 0x9E3779B97F4A7C15ull >> 32 & (size - 1);
        while (table[slot] != NULL && table[slot] != x)
            slot = (slot + 1) & (size - 1);
        r = table[slot] == NULL;
        table[slot] = x;
    }
    if (table != small)
        PyMem_Free(table);
    return r;
}

/* expected: ((fn, value), ...): each fn() is value. */
static int calls_are(PyObject *pairs)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pairs); i++) {
        PyObject *pair = PyTuple_GET_ITEM(pairs, i);
        int r = compare_owned(PyObject_CallNoArgs(PyTuple_GET_ITEM(pair, 0)), PyTuple_GET_ITEM(pair, 1), 1);
        if (r != 1)
            return r;
    }
    return 1;
}

static int truth_owned(PyObject *value)
{
    if (value == NULL)
        return -1;
    int r = PyObject_IsTrue(value);
    Py_DECREF(value);
    return r;
}

static PyObject *read_item(PyObject *base, PyObject *key)
{
    if (PyDict_CheckExact(base)) {
        PyObject *v = PyDict_GetItemWithError(base, key);
        if (v == NULL && !PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, key);
        return Py_XNewRef(v);
    }
    return PyObject_GetItem(base, key);
}

/* ---- running a program ------------------------------------------------------ */

/* 1: every check passed; 0: op `*failed` failed; -1: an exception (op `*failed` raised). */
static int run(GuardProgram *p, PyObject *L, PyObject **regs, Py_ssize_t *failed)
{
    for (Py_ssize_t i = 0; i < Py_SIZE(p); i++) {
        Op *op = &p->ops[i];
        PyObject *x = op->src >= 0 ? regs[op->src] : NULL, *v = NULL;
        int ok = 1;
        *failed = i;
        switch (op->code) {
        case OP_LOCAL: v = read_item(L, op->arg); break;
        case OP_GLOBAL: v = read_item(p->globals, op->arg); break;
        case OP_ATTR: v = PyObject_GetAttr(x, op->arg); break;
        case OP_ITEM: v = read_item(x, op->arg); break;
        case OP_TYPE: v = Py_NewRef((PyObject *)Py_TYPE(x)); break;
        case OP_CALL: v = PyObject_CallOneArg(op->arg, x); break;
        case OP_TYPE_IS: ok = (PyObject *)Py_TYPE(x) == op->arg; break;
        case OP_IS: ok = x == op->arg; break;
        case OP_ID: ok = fg_weakref_is(op->arg, x); break;
        case OP_EQUALS:
            ok = (PyObject *)Py_TYPE(x) != PyTuple_GET_ITEM(op->arg, 0)
                     ? 0 : PyObject_RichCompareBool(x, PyTuple_GET_ITEM(op->arg, 1), Py_EQ);
            break;
        case OP_FLOAT: ok = same_float(x, op->arg); break;
        case OP_LEN:
            if ((PyObject *)Py_TYPE(x) != PyTuple_GET_ITEM(op->arg, 0)) {
                ok = 0;
            } else {
                Py_ssize_t n = PyObject_Size(x);
                ok = n < 0 ? -1 : n == PyLong_AsSsize_t(PyTuple_GET_ITEM(op->arg, 1));
            }
            break;
        case OP_FALSY:
            ok = (PyObject *)Py_TYPE(x) == op->arg ? PyObject_Not(x) : 0;
            break;
        case OP_DICT_KEYS: ok = dict_keys_match(x, op->arg); break;
        case OP_NOT_IN_DICT: ok = none_in_dict(x, op->arg); break;
        case OP_HASATTR: {
            PyObject *found = NULL;
            int r = fg_lookup_attr(x, PyTuple_GET_ITEM(op->arg, 0), &found);
            Py_XDECREF(found);
            ok = r < 0 ? -1 : r == (PyTuple_GET_ITEM(op->arg, 1) == Py_True);
            break;
        }
        case OP_ALIAS: ok = x == regs[op->dst]; break;
        case OP_DISTINCT: ok = all_distinct(regs, op); break;
        case OP_TENSOR: ok = check_tensor(op, x); break;
        case OP_CALLS_ARE: ok = calls_are(op->arg); break;
        case OP_PY: ok = truth_owned(PyObject_CallOneArg(op->arg, L)); break;
        }
        if (op->code <= OP_CALL) {
            if (v == NULL)
                return -1;
            Py_XSETREF(regs[op->dst], v);
        }
        else if (ok != 1) {
            return ok;
        }
    }
    *failed = -1;
    return 1;
}

static PyObject *program_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kw)
{
    GuardProgram *p = (GuardProgram *)self;
    if (PyVectorcall_NARGS(nargsf) != 1 || kw != NULL || !PyDict_Check(args[0]))
        return PyErr_Format(PyExc_TypeError, "a guard program takes one dict (the frame's locals)");
    PyObject *small[64];
    PyObject **regs = p->n_regs <= 64 ? small : PyMem_Calloc(p->n_regs, sizeof(PyObject *));
    if (regs == NULL)
        return PyErr_NoMemory();
    memset(regs, 0, (p->n_regs <= 64 ? p->n_regs : 0) * sizeof(PyObject *));
    Py_INCREF(self); /* a check may run Python code that drops the last other reference */
    int r = run(p, args[0], regs, &p->failed_at);
    for (Py_ssize_t i = 0; i < p->n_regs; i++)
        Py_XDECREF(regs[i]);
    if (regs != small)
        PyMem_Free(regs);
    Py_DECREF(self);
    return r < 0 ? NULL : Py_NewRef(r ? Py_True : Py_False);
}

/* ---- the type -------------------------------------------------------------- */

/* written[r]: an earlier op reads into register r; a check or read of r needs one. */
static int parse_op(Op *op, PyObject *item, Py_ssize_t n_regs, PyObject *globals, char *written)
{
    int code, dst, src;
    PyObject *arg;
    if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "iiiO", &code, &dst, &src, &arg))
        goto bad;
    if (code < 0 || code >= N_OPS || dst < -1 || dst >= n_regs || src < -1 || src >= n_regs)
        goto bad;
    /* The evaluator trusts these shapes; say here, once, what is wrong. */
    int needs_src = code != OP_LOCAL && code != OP_GLOBAL && code != OP_DISTINCT &&
                    code != OP_CALLS_ARE && code != OP_PY;
    if ((code <= OP_CALL || code == OP_ALIAS) && dst < 0)
        goto bad;
    if (needs_src != (src >= 0) || (src >= 0 && !written[src]) || (code == OP_GLOBAL && globals == NULL))
        goto bad;
    if ((code <= OP_CALL && written[dst]) || (code == OP_ALIAS && !written[dst]))
        goto bad;
    if ((code == OP_EQUALS || code == OP_LEN || code == OP_HASATTR) &&
        !(PyTuple_Check(arg) && PyTuple_GET_SIZE(arg) == 2))
        goto bad;
    if ((code == OP_DICT_KEYS && !(PyTuple_Check(arg) && PyTuple_GET_SIZE(arg) == 3 &&
                                   PyList_Check(PyTuple_GET_ITEM(arg, 1)))) ||
        (code == OP_TENSOR && !(PyTuple_Check(arg) && PyTuple_GET_SIZE(arg) == 9 &&
                                PyTuple_Check(PyTuple_GET_ITEM(arg, 4)) &&
                                PyTuple_Check(PyTuple_GET_ITEM(arg, 5)))) ||
        ((code == OP_NOT_IN_DICT || code == OP_CALLS_ARE || code == OP_DISTINCT) && !PyTuple_Check(arg)) ||
        (code == OP_FLOAT && !PyFloat_CheckExact(arg)) ||
        (code == OP_ID && !PyWeakref_CheckRef(arg)))
        goto bad;
    if (code == OP_TENSOR && tensor_api == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "GuardProgram: set_tensor_api() was not called");
        return -1;
    }
    if (code == OP_DISTINCT) {
        op->n_regs = PyTuple_GET_SIZE(arg);
        if ((op->regs = PyMem_Calloc(op->n_regs + 1, sizeof(int))) == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < op->n_regs; i++) {
            long r = PyLong_AsLong(PyTuple_GET_ITEM(arg, i));
            if (r < 0 || r >= n_regs || !written[r])
                goto bad;
            op->regs[i] = (int)r;
        }
    }
    if (code <= OP_CALL)
        written[dst] = 1;
    op->code = code, op->dst = dst, op->src = src, op->arg = Py_NewRef(arg);
    return 0;
bad:
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "GuardProgram: malformed op %.200R", item);
    return -1;
}

static PyObject *program_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *ops, *globals;
    Py_ssize_t n_regs;
    static char *kwlist[] = {"ops", "n_regs", "globals", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!nO:GuardProgram", kwlist, &PyTuple_Type, &ops,
                                     &n_regs, &globals))
        return NULL;
    if (n_regs < 0 || (globals != Py_None && !PyDict_Check(globals)))
        return PyErr_Format(PyExc_ValueError, "GuardProgram: n_regs >= 0 and a globals dict or None");
    Py_ssize_t n = PyTuple_GET_SIZE(ops);
    GuardProgram *p = PyObject_GC_NewVar(GuardProgram, type, n);
    if (p == NULL)
        return NULL;
    memset(p->ops, 0, n * sizeof(Op));
    Py_SET_SIZE(p, 0); /* dealloc frees only the ops parsed so far */
    p->vectorcall = program_vectorcall;
    p->dict = p->weakrefs = NULL;
    p->globals = globals == Py_None ? NULL : Py_NewRef(globals);
    p->n_regs = n_regs;
    p->failed_at = -1;
    char *written = PyMem_Calloc(n_regs + 1, 1);
    if (written == NULL) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (parse_op(&p->ops[i], PyTuple_GET_ITEM(ops, i), n_regs, p->globals, written) < 0) {
            PyMem_Free(p->ops[i].regs);
            PyMem_Free(written);
            Py_DECREF(p);
            return NULL;
        }
        Py_SET_SIZE(p, i + 1);
    }
    PyMem_Free(written);
    PyObject_GC_Track(p);
    return (PyObject *)p;
}

static int program_traverse(GuardProgram *p, visitproc visit, void *arg)
{
    Py_VISIT(p->dict);
    Py_VISIT(p->globals);
    for (Py_ssize_t i = 0; i < Py_SIZE(p); i++)
        Py_VISIT(p->ops[i].arg);
    return 0;
}

static int program_clear(GuardProgram *p)
{
    Py_CLEAR(p->dict);
    Py_CLEAR(p->globals);
    for (Py_ssize_t i = 0; i < Py_SIZE(p); i++)
        Py_CLEAR(p->ops[i].arg);
    return 0;
}

static void program_dealloc(GuardProgram *p)
{
    PyObject_GC_UnTrack(p);
    if (p->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)p);
    program_clear(p);
    for (Py_ssize_t i = 0; i < Py_SIZE(p); i++)
        PyMem_Free(p->ops[i].regs);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *program_failed_at(GuardProgram *p, void *c)
{
    return PyLong_FromSsize_t(p->failed_at);
}

static PyObject *program_len(GuardProgram *p, void *c)
{
    return PyLong_FromSsize_t(Py_SIZE(p));
}

static PyGetSetDef program_getset[] = {
    {"failed_at", (getter)program_failed_at, NULL,
     "index of the op that failed or raised in the last run; -1 when it passed", NULL},
    {"n_ops", (getter)program_len, NULL, "number of ops", NULL},
    {NULL},
};

static PyTypeObject GuardProgram_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framegraph._C.GuardProgram",
    .tp_basicsize = offsetof(GuardProgram, ops),
    .tp_itemsize = sizeof(Op),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "GuardProgram(ops, n_regs, globals): a compiled guard; call it with the frame's "
              "locals. ops are (opcode, dst, src, arg) with opcodes from GUARD_OPS.",
    .tp_new = program_new,
    .tp_dealloc = (destructor)program_dealloc,
    .tp_traverse = (traverseproc)program_traverse,
    .tp_clear = (inquiry)program_clear,
    .tp_vectorcall_offset = offsetof(GuardProgram, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getset = program_getset,
    .tp_dictoffset = offsetof(GuardProgram, dict),
    .tp_weaklistoffset = offsetof(GuardProgram, weakrefs),
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
};

PyMethodDef fg_guard_methods[] = {
    {"set_tensor_api", set_tensor_api, METH_VARARGS,
     "set_tensor_api(dtype, requires_grad, shape, device, dispatch_keys): the getset "
     "descriptors of torch._C.TensorBase and torch._C._dispatch_keys, for tensor checks."},
    {NULL},
};

int fg_guards_init(PyObject *m)
{
    if (PyType_Ready(&GuardProgram_Type) < 0 ||
        PyModule_AddObjectRef(m, "GuardProgram", (PyObject *)&GuardProgram_Type) < 0)
        return -1;
    PyObject *names = PyTuple_New(N_OPS);
    if (names == NULL)
        return -1;
    for (int i = 0; i < N_OPS; i++)
        PyTuple_SET_ITEM(names, i, PyUnicode_FromString(op_names[i]));
    if (PyErr_Occurred() || PyModule_AddObject(m, "GUARD_OPS", names) < 0) {
        Py_DECREF(names);
        return -1;
    }
    if (PyModule_AddFunctions(m, fg_guard_methods) < 0)
        return -1;
    struct { PyObject **slot; const char *text; } strings[] = {
        {&s_stride, "stride"}, {&s_data_ptr, "data_ptr"}, {&s_dict, "__dict__"}, {&s_dtype, "dtype"},
        {&s_requires_grad, "requires_grad"}, {&s_shape, "shape"}, {&s_device, "device"},
    };
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        if (*strings[i].slot == NULL && (*strings[i].slot = PyUnicode_InternFromString(strings[i].text)) == NULL)
            return -1;
    return 0;
}
