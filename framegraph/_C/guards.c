/* guards.c: the guard program, the check a cache hit pays for, run without Python frames.
 *
 * framegraph/guard_program.py lowers a compiled entry's guard records into a flat list of
 * ops over numbered registers: reads put a value in a register (a local, a global, an
 * attribute or item of another register), checks test a register and stop the program at
 * the first that fails. The list is a tree of sources laid out depth first: a source's read,
 * its checks in the records' order, then its children, so a read never runs before the type
 * check of the object it reads from, as in the Python check function this replaces (which
 * stays available: config.c_guards = False). SKIP ops head subtrees a hit can jump over.
 *
 * Tensor checks are guard_tensor.c; the memos and the subtree skip that let a hit skip most
 * of the program are guard_memo.c.
 */
#include "guard_ops.h"
#include "guards.h"
#include "guard_tensor.h"

#include <math.h>

#define AS_NAME(name) #name,
static const char *const op_names[] = {OPS(AS_NAME)};
#undef AS_NAME
static PyObject *s_dict; /* "__dict__" */

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

/* The objects of the last pass, when they are all still there, are distinct without hashing:
 * distinct addresses are distinct objects. */
static int distinct(PyObject **regs, Op *op)
{
    Py_ssize_t i = 0;
    if (op->seen != NULL)
        while (i < op->n_regs && regs[op->regs[i]] == op->seen[i])
            i++;
    if (op->seen != NULL && i == op->n_regs)
        return 1;
    int r = all_distinct(regs, op);
    if (r == 1 && (op->seen != NULL || (op->seen = PyMem_Malloc(op->n_regs * sizeof(PyObject *))) != NULL))
        for (i = 0; i < op->n_regs; i++)
            op->seen[i] = regs[op->regs[i]];
    return r;
}

/* A builtin that takes no arguments (torch's state switches) is called as its own vectorcall
 * would call it, without the argument-count and recursion checks that cannot fail here: nine
 * of them are most of a small program's check. */
static inline PyObject *call_no_args(PyObject *f)
{
    if (PyCFunction_CheckExact(f) &&
        (PyCFunction_GET_FLAGS(f) & (METH_VARARGS | METH_FASTCALL | METH_NOARGS | METH_O | METH_KEYWORDS)) == METH_NOARGS)
        return PyCFunction_GET_FUNCTION(f)(PyCFunction_GET_SELF(f), NULL);
    return PyObject_CallNoArgs(f);
}

/* expected: ((fn, value), ...): each fn() is value. */
static int calls_are(PyObject *pairs)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pairs); i++) {
        PyObject *pair = PyTuple_GET_ITEM(pairs, i);
        int r = fg_compare_owned(call_no_args(PyTuple_GET_ITEM(pair, 0)), PyTuple_GET_ITEM(pair, 1), 1);
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

/* SKIP ranges nest (guard_program.py lays the program out as a tree); this many are followed
 * for arming at once, deeper ones just run. */
#define MAX_OPEN 64

/* 1: every check passed; 0: op `*failed` failed or raised an Exception; -1: a BaseException
 * that is not an Exception (op `*failed` raised it). */
static int run(GuardProgram *p, PyObject *L, PyObject **regs, Py_ssize_t *failed)
{
    Py_ssize_t open[MAX_OPEN]; /* SKIP ops running their range, to arm when it has all passed */
    int depth = 0;
    for (Py_ssize_t i = 0; i < Py_SIZE(p); i++) {
        while (depth > 0 && p->ops[open[depth - 1]].skip->end == i)
            fg_skip_arm(p, open[--depth], regs);
        Op *op = &p->ops[i];
        PyObject *x = op->src >= 0 ? regs[op->src] : NULL, *v = NULL;
        int ok = 1;
        *failed = i;
        int remembered = fg_check_remembers(op->code);
        if (remembered && fg_check_remembered(p, op, x))
            continue;
        switch (op->code) {
        case OP_LOCAL: v = fg_read_item(L, op->arg), op->m_gen++, op->m_out = v; break;
        case OP_GLOBAL: v = fg_memo_item(op, p->globals); break;
        case OP_ATTR: v = fg_memo_attr(op, x); break;
        case OP_ITEM: v = fg_memo_item(op, x); break;
        case OP_TYPE: v = fg_memo_type(op, x); break;
        case OP_CALL: v = PyObject_CallOneArg(op->arg, x), op->m_gen++, op->m_out = v; break;
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
        case OP_DISTINCT: ok = distinct(regs, op); break;
        case OP_TENSOR: ok = fg_check_tensor(op->arg, x, &op->memo, &op->memo_data); break;
        case OP_CALLS_ARE: ok = calls_are(op->arg); break;
        case OP_PY: ok = truth_owned(PyObject_CallOneArg(op->arg, L)); break;
        case OP_SKIP:
            switch (fg_skip_enter(p, op, regs)) {
            case 1: i = op->skip->end - 1; break;
            case 2: if (depth < MAX_OPEN) open[depth++] = i; break;
            }
            continue;
        }
        if (op->code <= OP_CALL) {
            if (v == NULL)
                return raised(); /* its memo was dropped with the failed read */
            Py_XSETREF(regs[op->dst], v);
            continue;
        }
        if (remembered)
            fg_check_record(p, op, x, ok);
        if (ok != 1)
            return ok < 0 ? raised() : 0;
    }
    while (depth > 0)
        fg_skip_arm(p, open[--depth], regs);
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

/* written[r]: an earlier op reads into register r; a check or read of r needs one. op is
 * number index of n. */
static int parse_op(Op *op, PyObject *item, Py_ssize_t n_regs, PyObject *globals, char *written,
                    Py_ssize_t index, Py_ssize_t n)
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
        (code == OP_TENSOR && !fg_tensor_spec_ok(arg)) ||
        ((code == OP_NOT_IN_DICT || code == OP_CALLS_ARE || code == OP_DISTINCT) && !PyTuple_Check(arg)) ||
        (code == OP_FLOAT && !PyFloat_CheckExact(arg)) ||
        (code == OP_ID && !PyWeakref_CheckRef(arg)))
        goto bad;
    if (code == OP_TENSOR && !fg_tensor_api_ready()) {
        PyErr_SetString(PyExc_RuntimeError, "GuardProgram: set_tensor_api() was not called");
        return -1;
    }
    PyObject *regs = arg;
    if (code == OP_SKIP) { /* (end, exports): the registers it hands over are written in its range */
        long end;
        if (dst != -1 || !PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != 2 ||
            !PyTuple_Check(regs = PyTuple_GET_ITEM(arg, 1)) ||
            (end = PyLong_AsLong(PyTuple_GET_ITEM(arg, 0))) <= index || end > n)
            goto bad;
        if ((op->skip = PyMem_Calloc(1, sizeof(Skip))) == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        op->skip->end = end;
        op->skip->blocked = -1;
    }
    if (code == OP_DISTINCT || code == OP_SKIP) {
        op->n_regs = PyTuple_GET_SIZE(regs);
        if ((op->regs = PyMem_Calloc(op->n_regs + 1, sizeof(int))) == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < op->n_regs; i++) {
            long r = PyLong_AsLong(PyTuple_GET_ITEM(regs, i));
            if (r < 0 || r >= n_regs || (code == OP_DISTINCT && !written[r]))
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

/* The registers op i reads, into uses[0..]: its count. */
static Py_ssize_t uses_of(Op *op, int *uses, Py_ssize_t room)
{
    Py_ssize_t k = 0;
    if (op->src >= 0)
        uses[k++] = op->src;
    if (op->code == OP_ALIAS)
        uses[k++] = op->dst;
    if (op->code == OP_DISTINCT)
        for (Py_ssize_t i = 0; i < op->n_regs && k < room; i++)
            uses[k++] = op->regs[i];
    return k;
}

/* What a jump over a SKIP range relies on: ranges nest; each register it hands over is read
 * into in the range; and each register read into in the range that an op after it reads is
 * handed over (the jump leaves every other register of the range empty). */
static int check_skips(GuardProgram *p)
{
    Py_ssize_t n = Py_SIZE(p), depth = 0, max_uses = 2;
    for (Py_ssize_t i = 0; i < n; i++)
        if (p->ops[i].code == OP_DISTINCT && p->ops[i].n_regs + 2 > max_uses)
            max_uses = p->ops[i].n_regs + 2;
    Py_ssize_t *last = PyMem_Malloc((p->n_regs + 1) * sizeof(Py_ssize_t)), *ends = PyMem_Malloc((n + 1) * sizeof(Py_ssize_t));
    char *handed = PyMem_Calloc(p->n_regs + 1, 1);
    int *uses = PyMem_Malloc(max_uses * sizeof(int)), ok = 1;
    if (last == NULL || ends == NULL || handed == NULL || uses == NULL) {
        ok = -1;
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t r = 0; r <= p->n_regs; r++)
        last[r] = -1;
    for (Py_ssize_t i = 0; i < n; i++)
        for (Py_ssize_t k = uses_of(&p->ops[i], uses, max_uses); k-- > 0;)
            last[uses[k]] = i;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        Op *op = &p->ops[i];
        if (op->code != OP_SKIP)
            continue;
        Py_ssize_t end = op->skip->end;
        while (depth > 0 && ends[depth - 1] <= i)
            depth--;
        if (depth > 0 && end > ends[depth - 1])
            ok = 0;
        ends[depth++] = end;
        for (Py_ssize_t k = 0; k < op->n_regs; k++) {
            int made = p->producer[op->regs[k]];
            ok = ok && made > i && made < end;
            handed[op->regs[k]] = 1;
        }
        for (Py_ssize_t j = i + 1; ok && j < end; j++)
            if (p->ops[j].code <= OP_CALL && last[p->ops[j].dst] >= end && !handed[p->ops[j].dst])
                ok = 0;
        for (Py_ssize_t k = 0; k < op->n_regs; k++)
            handed[op->regs[k]] = 0;
        if (!ok)
            PyErr_Format(PyExc_ValueError, "GuardProgram: malformed op %zd: a SKIP range that does not "
                         "nest, or does not hand over what is read after it", i);
    }
    ok = ok ? 0 : -1;
done:
    PyMem_Free(last), PyMem_Free(ends), PyMem_Free(handed), PyMem_Free(uses);
    return ok;
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
        if (parse_op(&p->ops[i], PyTuple_GET_ITEM(ops, i), n_regs, p->globals, written, i, n) < 0) {
            PyMem_Free(p->ops[i].regs);
            fg_skip_free(p->ops[i].skip);
            PyMem_Free(written);
            Py_DECREF(p);
            return NULL;
        }
        Py_SET_SIZE(p, i + 1);
    }
    PyMem_Free(written);
    if ((p->producer = PyMem_Malloc((n_regs + 1) * sizeof(int))) == NULL) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t r = 0; r <= n_regs; r++)
        p->producer[r] = -1;
    for (Py_ssize_t i = 0; i < n; i++)
        if (p->ops[i].code <= OP_CALL)
            p->producer[p->ops[i].dst] = (int)i;
    if (check_skips(p) < 0) {
        Py_DECREF(p);
        return NULL;
    }
    PyObject_GC_Track(p);
    return (PyObject *)p;
}

static int program_traverse(GuardProgram *p, visitproc visit, void *arg)
{
    Py_VISIT(p->dict);
    Py_VISIT(p->globals);
    for (Py_ssize_t i = 0; i < Py_SIZE(p); i++) {
        Py_VISIT(p->ops[i].arg);
        int r = fg_skip_traverse(p->ops[i].skip, visit, arg);
        if (r != 0)
            return r;
    }
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
    for (Py_ssize_t i = 0; i < Py_SIZE(p); i++) {
        PyMem_Free(p->ops[i].regs);
        PyMem_Free(p->ops[i].seen);
        fg_skip_free(p->ops[i].skip);
    }
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

static PyObject *program_skips(GuardProgram *p, void *c)
{
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < Py_SIZE(p); i++) {
        Skip *s = p->ops[i].skip;
        if (s == NULL)
            continue;
        PyObject *item = Py_BuildValue("(nnOn)", i, s->end, s->armed ? Py_True : Py_False, s->blocked);
        if (item == NULL || PyList_Append(out, item) < 0)
            Py_CLEAR(out);
        Py_XDECREF(item);
    }
    return out;
}

static PyGetSetDef program_getset[] = {
    {"failed_at", (getter)program_failed_at, NULL,
     "index of the op that failed or raised in the last run; -1 when it passed", NULL},
    {"n_ops", (getter)program_len, NULL, "number of ops", NULL},
    {"skips", (getter)program_skips, NULL,
     "[(index, end, armed, blocked)] of each SKIP op: armed ones jump over ops index+1 .. end-1 "
     "while their witnesses hold; blocked: the op whose memo did not cover it when it last "
     "failed to arm (-1: none, or no versioned witness on its root)", NULL},
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
    {"set_tensor_shim", fg_set_tensor_shim, METH_VARARGS,
     "set_tensor_shim(cdata, dtype, dim, sizes, strides, data_ptr, device_type, device_index): "
     "TensorBase's _cdata getset descriptor and the addresses of torch's aoti_torch_get_* functions "
     "of those names."},
    {"tensor_shim_numbers", fg_tensor_shim_numbers, METH_O,
     "tensor_shim_numbers(t): (scalar type, device type, device index) as the shim reads them "
     "from t, or None."},
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
    return fg_memo_init();
}
