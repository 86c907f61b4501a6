/* guards.c: the guard program, the check a cache hit pays for, run without Python frames.
 *
 * framegraph/guard_program.py lowers a compiled entry's guard records into a flat list of
 * ops over numbered registers: reads put a value in a register (a local, a global, an
 * attribute or item of another register), checks test a register and stop the program at
 * the first that fails. Register order is the records' order, so a read never runs before
 * the type check that makes it safe, exactly as in the Python check function this replaces
 * (which stays available: config.c_guards = False).
 *
 * Tensor checks are guard_tensor.c; the memos that let a hit skip most reads are below.
 */
#include "compat.h"
#include "guards.h"
#include "guard_tensor.h"

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
static PyObject *s_dict; /* "__dict__" */

typedef struct {
    int code, dst, src;
    PyObject *arg;
    int *regs; /* DISTINCT: the registers that must hold distinct objects */
    Py_ssize_t n_regs;
    void *memo;        /* TENSOR: address of the last tensor that passed every read */
    void *memo_data;   /* ... and its data_ptr() then */
    /* The read and check memos (see "memos" below). Borrowed and never followed before
     * they are validated against live objects. */
    PyObject *m_in, *m_dict, *m_out;
    PyTypeObject *m_type;
    unsigned int m_tag;
    uint64_t m_version;
    uint64_t m_gen; /* reads: bumped at every real read; checks: their input read's, when passed */
} Op;

typedef struct {
    PyObject_VAR_HEAD
    vectorcallfunc vectorcall;
    PyObject *dict; /* attributes tools hang on it, as on the Python check function */
    PyObject *weakrefs;
    PyObject *globals;
    Py_ssize_t n_regs;
    Py_ssize_t failed_at; /* index of the op that failed last, -1 when the last run passed */
    int *producer;        /* register -> index of the op that reads into it */
    Op ops[1];
} GuardProgram;

/* ---- checks ---------------------------------------------------------------- */


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
        int r = fg_compare_owned(PyObject_CallNoArgs(PyTuple_GET_ITEM(pair, 0)), PyTuple_GET_ITEM(pair, 1), 1);
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

/* ---- memos -------------------------------------------------------------------
 * Most of a module's guard reads walk dicts that do not change between calls
 * (`module._modules['blocks']._parameters['weight']`), and most of its checks test values
 * those reads return (hook tables empty, `eps == 1e-05`). On 3.11 and 3.12 every dict
 * state has its own version (compat.h), so:
 *   - an ITEM of a dict or OrderedDict, or a GLOBAL, is the value it was while the dict
 *     is the same object at the same version;
 *   - an ATTR is the value it was while the object, its type (at the same version tag) and
 *     its instance __dict__ (at the same version) are the same, provided the value came
 *     from that __dict__ through the generic lookup, with no data descriptor of that name
 *     on the type (a property is computed at every read, and never remembered);
 *   - a check passes again when its input is the object it passed on (the read that
 *     produced it has not read for real since: m_gen) and the dict its answer depends on
 *     (the input itself, or the input's __dict__ for NOT_IN_DICT) has the same version.
 *     Only checks whose answer a dict version covers are remembered: equality with an int,
 *     float, str, bytes, bool or None; emptiness, length and keys of a dict.
 * A read that is not remembered bumps m_gen, so checks on its value run again. */

#if FG_READ_MEMO
static PyObject *object_getattribute, *s_getattribute;

static PyObject *instance_dict(PyObject *x)
{
    PyObject **slot = _PyObject_GetDictPtr(x);
    return slot != NULL && *slot != NULL && PyDict_CheckExact(*slot) ? *slot : NULL;
}

static int versioned_dict(PyObject *d)
{
    return PyDict_CheckExact(d) || PyODict_CheckExact(d);
}

static int item_memo_holds(Op *op, PyObject *base)
{
    return op->m_in == base && versioned_dict(base) && fg_dict_version(base) == op->m_version;
}

static void item_memo_record(Op *op, PyObject *base, PyObject *v)
{
    op->m_gen++;
    op->m_in = versioned_dict(base) ? base : NULL;
    op->m_version = op->m_in != NULL ? fg_dict_version(base) : 0;
    op->m_out = v;
}

/* Each comparison guards the next one's dereference: x is live, so its type is, and its
 * __dict__ when it is the remembered one. */
static int attr_memo_holds(Op *op, PyObject *x)
{
    return op->m_in == x && Py_TYPE(x) == op->m_type && fg_type_version(op->m_type) == op->m_tag &&
           instance_dict(x) == op->m_dict && fg_dict_version(op->m_dict) == op->m_version;
}

/* The object's own __dict__ answers name by the generic lookup, and will while its type
 * and that dict keep their versions. */
static int plain_attribute(PyObject *x, PyObject *name, PyObject *value, PyObject *d)
{
    PyTypeObject *tp = Py_TYPE(x);
    if (d == NULL || _PyType_Lookup(tp, s_getattribute) != object_getattribute)
        return 0;
    PyObject *descr = _PyType_Lookup(tp, name);
    if (descr != NULL && Py_TYPE(descr)->tp_descr_set != NULL)
        return 0;
    PyObject *found = value == NULL ? NULL : PyDict_GetItemWithError(d, name);
    PyErr_Clear();
    return value == NULL || found == value;
}

static void attr_memo_record(Op *op, PyObject *x, PyObject *v)
{
    op->m_gen++;
    op->m_in = NULL;
    PyObject *d = instance_dict(x);
    unsigned int tag;
    if (!plain_attribute(x, op->arg, v, d) || (tag = fg_type_version(Py_TYPE(x))) == 0)
        return;
    op->m_in = x, op->m_type = Py_TYPE(x), op->m_tag = tag, op->m_dict = d;
    op->m_version = fg_dict_version(d), op->m_out = v;
}

static int remembers(int code)
{
    return code == OP_EQUALS || code == OP_FLOAT || code == OP_FALSY || code == OP_LEN ||
           code == OP_DICT_KEYS || code == OP_NOT_IN_DICT;
}

static int check_memo_holds(GuardProgram *p, Op *op, PyObject *x)
{
    if (op->m_in != x || p->ops[p->producer[op->src]].m_gen != op->m_gen)
        return 0;
    if (op->code == OP_NOT_IN_DICT &&
        (Py_TYPE(x) != op->m_type || fg_type_version(op->m_type) != op->m_tag || instance_dict(x) != op->m_dict))
        return 0;
    return op->m_dict == NULL || fg_dict_version(op->m_dict) == op->m_version;
}

static void check_memo_record(GuardProgram *p, Op *op, PyObject *x)
{
    PyTypeObject *t = Py_TYPE(x);
    PyObject *d = NULL;
    int ok;
    switch (op->code) {
    case OP_EQUALS: case OP_FLOAT:
        ok = t == &PyLong_Type || t == &PyFloat_Type || t == &PyUnicode_Type || t == &PyBool_Type ||
             t == &PyBytes_Type || x == Py_None;
        break;
    case OP_DICT_KEYS: /* an OrderedDict reorders without a new version */
        ok = PyDict_CheckExact(x), d = x;
        break;
    case OP_NOT_IN_DICT:
        d = instance_dict(x);
        ok = plain_attribute(x, s_dict, NULL, d) && (op->m_tag = fg_type_version(t)) != 0;
        op->m_type = t;
        break;
    default: /* FALSY, LEN */
        ok = versioned_dict(x), d = x;
    }
    op->m_in = ok ? x : NULL;
    op->m_gen = p->ops[p->producer[op->src]].m_gen;
    op->m_dict = d;
    op->m_version = ok && d != NULL ? fg_dict_version(d) : 0;
}
#endif

#if FG_READ_MEMO
/* A read through its memo: the remembered value while the memo holds, else a real read,
 * remembered when it can be. */
static PyObject *read_remembered(Op *op, PyObject *x, PyObject *(*read)(PyObject *, PyObject *),
                                 int (*holds)(Op *, PyObject *), void (*record)(Op *, PyObject *, PyObject *))
{
    if (holds(op, x))
        return Py_NewRef(op->m_out);
    PyObject *v = read(x, op->arg);
    if (v != NULL)
        record(op, x, v);
    else
        op->m_gen++, op->m_in = NULL;
    return v;
}
#  define READ_ITEM(op, x) read_remembered(op, x, read_item, item_memo_holds, item_memo_record)
#  define READ_ATTR(op, x) read_remembered(op, x, PyObject_GetAttr, attr_memo_holds, attr_memo_record)
#else
#  define READ_ITEM(op, x) read_item(x, (op)->arg)
#  define READ_ATTR(op, x) PyObject_GetAttr(x, (op)->arg)
#endif

/* ---- running a program ------------------------------------------------------ */

/* An op raised. A read that raises (a deleted global, an attribute now None instead of a
 * submodule, an item gone, a property that fails) means the frame is not the one the entry
 * was compiled for: the check fails, so the next entry is tried or the frame recompiles,
 * where the translation meets the same state and the program raises what eager raises.
 * Only what is not an Exception (KeyboardInterrupt, SystemExit) propagates. */
static int raised(void)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception))
        return -1;
    PyErr_Clear();
    return 0;
}

/* 1: every check passed; 0: op `*failed` failed or raised an Exception; -1: a BaseException
 * that is not an Exception (op `*failed` raised it). */
static int run(GuardProgram *p, PyObject *L, PyObject **regs, Py_ssize_t *failed)
{
    for (Py_ssize_t i = 0; i < Py_SIZE(p); i++) {
        Op *op = &p->ops[i];
        PyObject *x = op->src >= 0 ? regs[op->src] : NULL, *v = NULL;
        int ok = 1;
        *failed = i;
#if FG_READ_MEMO
        int remembered = remembers(op->code);
        if (remembered && check_memo_holds(p, op, x))
            continue;
#endif
        switch (op->code) {
        case OP_LOCAL: v = read_item(L, op->arg), op->m_gen++; break;
        case OP_GLOBAL: v = READ_ITEM(op, p->globals); break;
        case OP_ATTR: v = READ_ATTR(op, x); break;
        case OP_ITEM: v = READ_ITEM(op, x); break;
        case OP_TYPE: v = Py_NewRef((PyObject *)Py_TYPE(x)), op->m_gen++; break;
        case OP_CALL: v = PyObject_CallOneArg(op->arg, x), op->m_gen++; break;
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
        case OP_TENSOR: ok = fg_check_tensor(op->arg, x, &op->memo, &op->memo_data); break;
        case OP_CALLS_ARE: ok = calls_are(op->arg); break;
        case OP_PY: ok = truth_owned(PyObject_CallOneArg(op->arg, L)); break;
        }
        if (op->code <= OP_CALL) {
            if (v == NULL)
                return raised(); /* its memo was dropped with the failed read */
            Py_XSETREF(regs[op->dst], v);
            continue;
        }
#if FG_READ_MEMO
        if (remembered) {
            if (ok == 1)
                check_memo_record(p, op, x);
            else
                op->m_in = NULL;
        }
#endif
        if (ok != 1)
            return ok < 0 ? raised() : 0;
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
        (code == OP_TENSOR && !(PyTuple_Check(arg) && PyTuple_GET_SIZE(arg) == 10 &&
                                PyTuple_Check(PyTuple_GET_ITEM(arg, 4)) &&
                                PyTuple_Check(PyTuple_GET_ITEM(arg, 5)))) ||
        ((code == OP_NOT_IN_DICT || code == OP_CALLS_ARE || code == OP_DISTINCT) && !PyTuple_Check(arg)) ||
        (code == OP_FLOAT && !PyFloat_CheckExact(arg)) ||
        (code == OP_ID && !PyWeakref_CheckRef(arg)))
        goto bad;
    if (code == OP_TENSOR && !fg_tensor_api_ready()) {
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
    p->producer = NULL;
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
    if ((p->producer = PyMem_Calloc(n_regs + 1, sizeof(int))) == NULL) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (p->ops[i].code <= OP_CALL)
            p->producer[p->ops[i].dst] = (int)i;
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
    PyMem_Free(p->producer);
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

static PyMethodDef guard_methods[] = {
    {"set_tensor_api", fg_set_tensor_api, METH_VARARGS,
     "set_tensor_api(dtype, requires_grad, shape, device, dispatch_keys, stride, data_ptr, "
     "is_contiguous): the getset descriptors of torch._C.TensorBase, torch._C._dispatch_keys "
     "and TensorBase's method descriptors, for tensor checks."},
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
    if (PyModule_AddFunctions(m, guard_methods) < 0 || fg_tensor_init() < 0)
        return -1;
    if (s_dict == NULL && (s_dict = PyUnicode_InternFromString("__dict__")) == NULL)
        return -1;
#if FG_READ_MEMO
    if (s_getattribute == NULL && (s_getattribute = PyUnicode_InternFromString("__getattribute__")) == NULL)
        return -1;
    object_getattribute = _PyType_Lookup(&PyBaseObject_Type, s_getattribute); /* object's dict keeps it */
    if (object_getattribute == NULL) {
        PyErr_SetString(PyExc_ImportError, "framegraph._C: object.__getattribute__ not found");
        return -1;
    }
#endif
    return 0;
}
