/* guard_memo.c: what lets a cache hit skip most of its guard program.
 *
 * Most of a module's guard reads walk dicts that do not change between calls
 * (`module._modules['blocks']._parameters['weight']`), and most of its checks test values
 * those reads return (hook tables empty, `eps == 1e-05`). On 3.11 and 3.12 every dict state
 * has its own version and every type state its own version tag (compat.h), so:
 *   - an ITEM of a dict or OrderedDict, or a GLOBAL, is the value it was while the dict is the
 *     same object at the same version (M_DICT);
 *   - an ATTR of an object is the value it was while the object, its type (at the same version
 *     tag) and its instance __dict__ (at the same version) are the same, provided the value came
 *     from that __dict__ through the generic lookup, with no data descriptor of that name on
 *     the type: a property is computed at every read, and never remembered (M_OBJ);
 *   - an ATTR of a class is the value it was while the class and its metaclass keep their
 *     version tags, provided the value was found in the class's MRO as is (not made by a
 *     descriptor) and the metaclass neither overrides attribute lookup nor has a data
 *     descriptor of that name (M_TYPE);
 *   - `type(x)` is the class it was while x is the same object of that class (M_CLASS);
 *   - a function's `__code__`, `__defaults__`, `__kwdefaults__` or `__module__` is what it was
 *     while the function's field holds the same object (M_FIELD: assigning them sets the field);
 *   - a check passes again when its input is the object it passed on (the read that produced
 *     it has not read for real since: m_gen) and what its answer depends on is unchanged: the
 *     input's own state when it is a dict, an object's type and __dict__ (NOT_IN_DICT), a
 *     class's version tags (HASATTR), or nothing when the input is immutable (M_IDENTITY:
 *     equality with an int, float, str, bytes, bool, None or a tuple of them).
 * A read that is not remembered bumps m_gen, so checks on its value run again.
 *
 * The subtree skip. The program is laid out as a tree (guard_program.py): each source's
 * read, its checks, then its children's, so the ops about one object (a module and all its
 * submodules) form one range. A SKIP op heads such a range. When every op of the range has
 * passed and each is covered by a memo, the SKIP op is armed: it keeps the range's
 * witnesses, the conditions those memos rest on (which dicts at which versions, which
 * objects of which types, which classes at which tags), once each, in op order. At the next
 * run, if the root register holds the same object and every witness holds, every op of the
 * range would give what it gave, so the program jumps to the range's end, handing the
 * registers that later ops read (the tensors a deferred TENSOR check tests) their remembered
 * values. Witnesses are borrowed pointers, each followed only after an earlier one proved it
 * alive: the root is held by its register and its own versioned witness is checked first (a
 * new object at a freed object's address has a new dict, whose version no old dict had), and
 * every later object is held by a container an earlier witness proved unchanged. A SKIP whose
 * witnesses keep failing (a subtree that changes every call) waits longer and longer before
 * it arms again, so it costs nothing once it gives up; the SKIPs nested in it still work.
 */
#include "guard_ops.h"

PyObject *fg_read_item(PyObject *base, PyObject *key)
{
    if (PyDict_CheckExact(base)) {
        PyObject *v = PyDict_GetItemWithError(base, key);
        if (v == NULL && !PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, key);
        return Py_XNewRef(v);
    }
    return PyObject_GetItem(base, key);
}

static PyObject *object_getattribute, *s_getattribute, *s_dict;
static getter instance_dict_getter; /* what `__dict__` of a plain class's instance reads with */

struct Witness {
    int kind; /* M_DICT, M_OBJ, M_TYPE or M_CLASS */
    PyObject *obj;
    PyTypeObject *type;
    unsigned int tag;
    PyObject *dict;
    uint64_t version;
};

static PyObject *instance_dict(PyObject *x)
{
    PyObject **slot = _PyObject_GetDictPtr(x);
    return slot != NULL && *slot != NULL && PyDict_CheckExact(*slot) ? *slot : NULL;
}

static int versioned_dict(PyObject *d)
{
    return PyDict_CheckExact(d) || PyODict_CheckExact(d);
}

/* Each comparison guards the next one's dereference: x is live, so its type is, and its
 * __dict__ when it is the remembered one. */
static inline int obj_holds(PyObject *x, PyTypeObject *t, unsigned int tag, PyObject *d, uint64_t version)
{
    return Py_TYPE(x) == t && fg_type_version(t) == tag && instance_dict(x) == d && fg_dict_version(d) == version;
}

/* x is a class (its metaclass is the remembered one) whose tags have not moved. */
static inline int type_holds(PyObject *x, PyTypeObject *meta, unsigned int meta_tag, uint64_t tag)
{
    return Py_TYPE(x) == meta && fg_type_version(meta) == meta_tag && fg_type_version((PyTypeObject *)x) == tag;
}

/* The object's own __dict__ answers name by the generic lookup, and will while its type
 * and that dict keep their versions. A plain module (`torch.nn.functional`) looks up the
 * same way before its __getattr__ fallback, which never runs for a name it holds. */
static int plain_attribute(PyObject *x, PyObject *name, PyObject *value, PyObject *d)
{
    PyTypeObject *tp = Py_TYPE(x);
    if (d == NULL || (tp != &PyModule_Type && _PyType_Lookup(tp, s_getattribute) != object_getattribute))
        return 0;
    PyObject *descr = _PyType_Lookup(tp, name);
    if (descr != NULL && Py_TYPE(descr)->tp_descr_set != NULL)
        return 0;
    PyObject *found = PyDict_GetItemWithError(d, name);
    PyErr_Clear();
    return found == value;
}

/* name on class t resolves to value, found in t's MRO and returned as is (a plain object or
 * a function, whose __get__ without an instance is itself), while t and its metaclass keep
 * their tags; or, for value NULL, is absent from the metaclass, so whether t has it is a
 * fact of t's MRO alone. */
static int plain_class_attribute(PyTypeObject *t, PyObject *name, PyObject *value)
{
    PyTypeObject *meta = Py_TYPE(t);
    if (meta->tp_getattro != PyType_Type.tp_getattro)
        return 0;
    PyObject *meta_attr = _PyType_Lookup(meta, name);
    if (value == NULL)
        return meta_attr == NULL;
    if (meta_attr != NULL && Py_TYPE(meta_attr)->tp_descr_set != NULL)
        return 0;
    return _PyType_Lookup(t, name) == value && (Py_TYPE(value)->tp_descr_get == NULL || PyFunction_Check(value));
}

/* `x.__dict__` is x's own __dict__ d, read by the getter every plain class has, and will be
 * while x's type keeps its tag. */
static int plain_dict_attribute(PyObject *x, PyObject *d)
{
    PyTypeObject *tp = Py_TYPE(x);
    if (d == NULL || _PyType_Lookup(tp, s_getattribute) != object_getattribute)
        return 0;
    PyObject *descr = _PyType_Lookup(tp, s_dict);
    return descr != NULL && Py_IS_TYPE(descr, &PyGetSetDescr_Type) &&
           ((PyGetSetDescrObject *)descr)->d_getset->get == instance_dict_getter;
}

/* On 3.13 an instance's attributes may live in inline values that its __dict__ only points
 * at, where a store bumps no version. Assigning the object its own __dict__ moves the values
 * into the dict for good: from then on every store, del and dict write bumps the version
 * (checked by running code on 3.13.0: tests/capture/test_guard_skips.py), and nothing a
 * program can see has changed. 0: the values stay inline, so no memo may rest on d's version. */
static int owns_values(PyObject *x, PyObject *d)
{
#if PY_VERSION_HEX >= 0x030D0000
    if (!(Py_TYPE(x)->tp_flags & Py_TPFLAGS_INLINE_VALUES))
        return 1;
    if (!plain_dict_attribute(x, d) || PyObject_GenericSetAttr(x, s_dict, d) < 0 || instance_dict(x) != d) {
        PyErr_Clear();
        return 0;
    }
#endif
    return 1;
}

/* The field of a function behind attribute name, by number, or -1: its getter reads the
 * field as is (None when empty), and a data descriptor wins over the function's __dict__. */
static const char *const function_fields[] = {"__code__", "__defaults__", "__kwdefaults__", "__module__"};

static int function_field(PyObject *name)
{
    for (int i = 0; i < 4; i++)
        if (PyUnicode_CompareWithASCIIString(name, function_fields[i]) == 0)
            return i;
    return -1;
}

static PyObject *field_of(PyObject *f, unsigned int field)
{
    switch (field) {
    case 0: return PyFunction_GET_CODE(f);
    case 1: return PyFunction_GET_DEFAULTS(f);
    case 2: return PyFunction_GET_KW_DEFAULTS(f);
    default: return PyFunction_GET_MODULE(f);
    }
}

static int immutable(PyObject *x, int depth)
{
    PyTypeObject *t = Py_TYPE(x);
    if (t == &PyLong_Type || t == &PyFloat_Type || t == &PyUnicode_Type || t == &PyBool_Type ||
        t == &PyBytes_Type || x == Py_None)
        return 1;
    if (t != &PyTuple_Type || depth > 2)
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(x); i++)
        if (!immutable(PyTuple_GET_ITEM(x, i), depth + 1))
            return 0;
    return 1;
}

/* ---- reads ------------------------------------------------------------------ */

static void read_for_real(Op *op, PyObject *x, PyObject *v)
{
    op->m_gen++;
    op->m_kind = M_NONE;
    op->m_in = v == NULL ? NULL : x;
    op->m_out = v;
}

PyObject *fg_memo_item(Op *op, PyObject *base)
{
    if (op->m_kind == M_DICT && op->m_in == base && versioned_dict(base) && fg_dict_version(base) == op->m_version)
        return Py_NewRef(op->m_out);
    PyObject *v = fg_read_item(base, op->arg);
    read_for_real(op, base, v);
    if (v != NULL && versioned_dict(base))
        op->m_kind = M_DICT, op->m_version = fg_dict_version(base);
    else if (v != NULL && PyTuple_CheckExact(base))
        op->m_kind = M_IDENTITY; /* only for the subtree skip: the tuple itself is not vouched for */
    return v;
}

PyObject *fg_memo_attr(Op *op, PyObject *x)
{
    if (op->m_in == x && ((op->m_kind == M_OBJ && obj_holds(x, op->m_type, op->m_tag, op->m_dict, op->m_version)) ||
                          (op->m_kind == M_TYPE && type_holds(x, op->m_type, op->m_tag, op->m_version))))
        return Py_NewRef(op->m_out);
    if (op->m_in == x && op->m_kind == M_FIELD && PyFunction_Check(x) && field_of(x, op->m_tag) == op->m_dict) {
        op->m_gen++; /* the field's object now, but maybe not the one it held then (see fg_memo_type) */
        return Py_NewRef(op->m_out);
    }
    PyObject *v = PyObject_GetAttr(x, op->arg);
    read_for_real(op, x, v);
    if (v == NULL)
        return NULL;
    PyTypeObject *tp = Py_TYPE(x);
    int field;
    if (PyFunction_Check(x) && (field = function_field(op->arg)) >= 0) {
        PyObject *held = field_of(x, field);
        if (held == v || (held == NULL && v == Py_None))
            op->m_kind = M_FIELD, op->m_tag = field, op->m_dict = held;
        return v;
    }
    /* Tags are read after the lookups, which give a type without one a tag. */
    if (PyType_Check(x)) {
        unsigned int meta_tag, tag;
        if (plain_class_attribute((PyTypeObject *)x, op->arg, v) && (meta_tag = fg_type_version(tp)) != 0 &&
            (tag = fg_type_version((PyTypeObject *)x)) != 0)
            op->m_kind = M_TYPE, op->m_type = tp, op->m_tag = meta_tag, op->m_version = tag;
        return v;
    }
    PyObject *d = instance_dict(x);
    unsigned int tag;
    if (plain_attribute(x, op->arg, v, d) && owns_values(x, d) && (tag = fg_type_version(tp)) != 0)
        op->m_kind = M_OBJ, op->m_type = tp, op->m_tag = tag, op->m_dict = d, op->m_version = fg_dict_version(d);
    return v;
}

/* Its value is only as good as the address it was read at (a class made at a dead one's
 * address), so it bumps m_gen at every run. */
PyObject *fg_memo_type(Op *op, PyObject *x)
{
    PyObject *t = (PyObject *)Py_TYPE(x);
    op->m_gen++;
    op->m_kind = M_CLASS, op->m_in = x, op->m_out = t;
    return Py_NewRef(t);
}

/* ---- checks ----------------------------------------------------------------- */

/* A dict's version, an object's __dict__ version and a class's tag name one state of one
 * object for good (a new object at a dead one's address gets new ones), so those memos are
 * checked on the live input alone. Only M_IDENTITY trusts the address: its input must come
 * from a read that did not read for real since, and whose value is held by a container a
 * version covers (m_gen: reads that cannot vouch for that bump it at every run). */
int fg_check_remembered(GuardProgram *p, Op *op, PyObject *x)
{
    if (op->m_in != x)
        return 0;
    switch (op->m_kind) {
    case M_IDENTITY: return p->ops[p->producer[op->src]].m_gen == op->m_gen;
    case M_DICT: return versioned_dict(x) && fg_dict_version(x) == op->m_version;
    case M_OBJ: return obj_holds(x, op->m_type, op->m_tag, op->m_dict, op->m_version);
    case M_TYPE: return type_holds(x, op->m_type, op->m_tag, op->m_version);
    default: return 0;
    }
}

void fg_check_record(GuardProgram *p, Op *op, PyObject *x, int ok)
{
    op->m_kind = M_NONE;
    op->m_in = NULL;
    if (ok != 1)
        return;
    PyTypeObject *t = Py_TYPE(x);
    switch (op->code) {
    case OP_EQUALS: case OP_FLOAT:
        if (immutable(x, 0))
            op->m_kind = M_IDENTITY;
        break;
    case OP_DICT_KEYS: /* an OrderedDict reorders without a new version */
        if (PyDict_CheckExact(x))
            op->m_kind = M_DICT, op->m_version = fg_dict_version(x);
        break;
    case OP_LEN: case OP_FALSY:
        if (versioned_dict(x))
            op->m_kind = M_DICT, op->m_version = fg_dict_version(x);
        else if (t == &PyTuple_Type || t == &PyUnicode_Type || t == &PyBytes_Type)
            op->m_kind = M_IDENTITY;
        break;
    case OP_NOT_IN_DICT: {
        PyObject *d = instance_dict(x);
        unsigned int tag;
        if (plain_dict_attribute(x, d) && owns_values(x, d) && (tag = fg_type_version(t)) != 0)
            op->m_kind = M_OBJ, op->m_type = t, op->m_tag = tag, op->m_dict = d, op->m_version = fg_dict_version(d);
        break;
    }
    case OP_HASATTR: {
        unsigned int meta_tag, tag;
        if (PyType_Check(x) && plain_class_attribute((PyTypeObject *)x, PyTuple_GET_ITEM(op->arg, 0), NULL) &&
            (meta_tag = fg_type_version(t)) != 0 && (tag = fg_type_version((PyTypeObject *)x)) != 0)
            op->m_kind = M_TYPE, op->m_type = t, op->m_tag = meta_tag, op->m_version = tag;
        break;
    }
    }
    if (op->m_kind != M_NONE) {
        op->m_in = x;
        op->m_gen = p->ops[p->producer[op->src]].m_gen;
    }
}

/* ---- the subtree skip --------------------------------------------------------- */

static int witness_holds(const Witness *w)
{
    switch (w->kind) {
    case M_DICT: return Py_TYPE(w->obj) == w->type && fg_dict_version(w->obj) == w->version;
    case M_OBJ: return obj_holds(w->obj, w->type, w->tag, w->dict, w->version);
    case M_TYPE: return type_holds(w->obj, w->type, w->tag, w->version);
    case M_FIELD: return PyFunction_Check(w->obj) && field_of(w->obj, w->tag) == w->dict;
    default: return Py_TYPE(w->obj) == w->type; /* M_CLASS */
    }
}

static void release(Skip *s)
{
    while (s->n_held > 0)
        Py_DECREF(s->held[--s->n_held]);
}

/* Exponential back-off: 1, 3, 7 ... 1023 runs without arming. */
static void back_off(Skip *s)
{
    release(s);
    if (s->failures < 10)
        s->failures++;
    s->countdown = (1 << s->failures) - 1;
}

int fg_skip_enter(GuardProgram *p, Op *op, PyObject **regs)
{
    Skip *s = op->skip;
    if (s->armed) {
        /* the root's versioned witness first: it tells a new object at the root's address */
        Py_ssize_t i = 0;
        if (regs[op->src] == s->root && witness_holds(&s->w[s->root_at]))
            while (i < s->n && witness_holds(&s->w[i]))
                i++;
        else
            i = -1;
        if (i == s->n) {
            s->failures = 0;
            for (Py_ssize_t k = 0; k < op->n_regs; k++)
                Py_XSETREF(regs[op->regs[k]], Py_NewRef(p->ops[p->producer[op->regs[k]]].m_out));
            return 1;
        }
        s->armed = 0;
        back_off(s);
    }
    if (s->countdown > 0) {
        s->countdown--;
        return 0;
    }
    return 2;
}

/* The witnesses already taken, by (object, kind, and field for M_FIELD): a subtree names each
 * dict many times. */
typedef struct {
    Witness **slots;
    size_t mask;
} Seen;

static Witness *seen_slot(Seen *seen, Witness *all, const Witness *w)
{
    size_t h = (((uintptr_t)w->obj >> 4) * 0x9E3779B97F4A7C15ull + (size_t)w->kind) >> 29;
    for (size_t i = h & seen->mask;; i = (i + 1) & seen->mask) {
        Witness *found = seen->slots[i];
        if (found == NULL) {
            seen->slots[i] = all;
            return NULL;
        }
        if (found->obj == w->obj && found->kind == w->kind && (w->kind != M_FIELD || found->tag == w->tag))
            return found;
    }
}

static int same_witness(const Witness *a, const Witness *b)
{
    return a->kind == b->kind && a->obj == b->obj && a->type == b->type && a->tag == b->tag &&
           a->dict == b->dict && a->version == b->version;
}

/* Arming: the witnesses of a range, once each, and which registers hold an object known to
 * be the one recorded (anchored: held by a container a version covers, or carrying a version
 * of its own), not merely one at the same address. */
typedef struct {
    Skip *s;
    Seen seen;
    char *anchored;
    PyObject *root;
    Py_ssize_t at;  /* the op being covered, for `blocked` */
    int covered;
} Arming;

static void take(Arming *a, Witness w)
{
    Witness *found = seen_slot(&a->seen, &a->s->w[a->s->n], &w);
    if (found != NULL) {
        /* one object seen two ways in one run: something changed it midway */
        if (!same_witness(found, &w))
            a->covered = 0, a->s->blocked = a->at;
        return;
    }
    if (a->s->root_at < 0 && w.obj == a->root && (w.kind == M_OBJ || w.kind == M_DICT || w.kind == M_TYPE))
        a->s->root_at = a->s->n;
    a->s->w[a->s->n++] = w;
}

/* Covers op (or clears a->covered): what it rests on goes into the witnesses. */
static void cover(GuardProgram *p, Arming *a, Op *op)
{
    int code = op->code, read = code <= OP_CALL;
    Witness w = {0};
    switch (code) {
    case OP_SKIP: case OP_IS: /* IS compares with an object the op holds: the address is enough */
        return;
    case OP_ID: /* the weak reference's object is alive while the input is the one recorded */
        if (!a->anchored[op->src])
            a->covered = 0;
        return;
    case OP_TYPE_IS: /* checked as it stands: its input's class is the one the op holds */
        w.kind = M_CLASS, w.obj = p->ops[p->producer[op->src]].m_out, w.type = (PyTypeObject *)op->arg;
        take(a, w);
        return;
    case OP_GLOBAL: case OP_ATTR: case OP_ITEM: case OP_TYPE:
    case OP_EQUALS: case OP_FLOAT: case OP_LEN: case OP_FALSY: case OP_DICT_KEYS: case OP_NOT_IN_DICT:
    case OP_HASATTR:
        break;
    default:
        a->covered = 0;
        return;
    }
    if (op->m_in == NULL || op->m_kind == M_NONE || (op->m_kind == M_IDENTITY && !a->anchored[op->src])) {
        a->covered = 0;
        return;
    }
    w.obj = op->m_in, w.kind = op->m_kind;
    switch (op->m_kind) {
    case M_DICT: w.type = Py_TYPE(op->m_in), w.version = op->m_version; break;
    case M_OBJ: w.type = op->m_type, w.tag = op->m_tag, w.dict = op->m_dict, w.version = op->m_version; break;
    case M_TYPE: w.type = op->m_type, w.tag = op->m_tag, w.version = op->m_version; break;
    case M_CLASS: w.type = (PyTypeObject *)op->m_out; break;
    case M_FIELD: w.tag = op->m_tag, w.dict = op->m_dict; break;
    }
    if (op->m_kind != M_IDENTITY)
        take(a, w);
    if (!read)
        return;
    int anchored = op->m_kind == M_DICT || op->m_kind == M_OBJ || op->m_kind == M_TYPE || op->m_kind == M_IDENTITY;
    if (op->m_kind == M_FIELD && (PyCode_Check(op->m_out) || immutable(op->m_out, 0))) {
        /* A field is only an address: the object it held could die and another take its place
         * in the field. Held here, it cannot; a code object or a tuple of constants keeps no
         * model alive. */
        Skip *s = a->s;
        if (s->n_held == s->cap_held) {
            PyObject **more = PyMem_Realloc(s->held, (s->cap_held * 2 + 8) * sizeof(PyObject *));
            if (more == NULL) {
                a->covered = 0;
                return;
            }
            s->held = more, s->cap_held = s->cap_held * 2 + 8;
        }
        s->held[s->n_held++] = Py_NewRef(op->m_out);
        anchored = 1;
    }
    PyTypeObject *t = (PyTypeObject *)op->m_out, *meta;
    unsigned int tag, meta_tag;
    if (op->m_kind == M_CLASS && (tag = fg_type_version(t)) != 0 && (meta_tag = fg_type_version(meta = Py_TYPE(t))) != 0) {
        /* a class with a tag is the one recorded while it keeps that tag */
        Witness tw = {M_TYPE, (PyObject *)t, meta, meta_tag, NULL, tag};
        take(a, tw);
        anchored = 1;
    }
    a->anchored[op->dst] = (char)anchored;
}

void fg_skip_arm(GuardProgram *p, Py_ssize_t index, PyObject **regs)
{
    Op *sop = &p->ops[index];
    Skip *s = sop->skip;
    Py_ssize_t span = s->end - index - 1, room = 2 * span + 1; /* a TYPE read takes two */
    size_t size = 16;
    while (size < 2 * (size_t)room)
        size *= 2;
    Arming a = {s, {PyMem_Calloc(size, sizeof(Witness *)), size - 1}, PyMem_Calloc(p->n_regs + 1, 1),
                regs[sop->src], index, 1};
    if (a.seen.slots == NULL || a.anchored == NULL ||
        (s->cap < room && (s->w = PyMem_Realloc(s->w, (s->cap = room) * sizeof(Witness))) == NULL)) {
        PyMem_Free(a.seen.slots), PyMem_Free(a.anchored);
        s->cap = 0, s->n = 0;
        back_off(s);
        return;
    }
    release(s);
    s->n = 0, s->root_at = -1, s->blocked = -1;
    a.anchored[sop->src] = 1; /* by its own versioned witness, checked first */
    for (Py_ssize_t i = index + 1; a.covered && i < s->end; i++) {
        a.at = i;
        cover(p, &a, &p->ops[i]);
        if (!a.covered && s->blocked < 0)
            s->blocked = i;
    }
    PyMem_Free(a.seen.slots), PyMem_Free(a.anchored);
    if (!a.covered || s->root_at < 0) {
        s->n = 0;
        back_off(s);
        return;
    }
    s->root = a.root;
    s->armed = 1;
}

void fg_skip_free(Skip *skip)
{
    if (skip != NULL) {
        release(skip);
        PyMem_Free(skip->held);
        PyMem_Free(skip->w);
        PyMem_Free(skip);
    }
}

int fg_skip_traverse(Skip *skip, visitproc visit, void *arg)
{
    for (Py_ssize_t i = 0; skip != NULL && i < skip->n_held; i++)
        Py_VISIT(skip->held[i]);
    return 0;
}

int fg_memo_init(void)
{
    if (s_getattribute == NULL && (s_getattribute = PyUnicode_InternFromString("__getattribute__")) == NULL)
        return -1;
    if (s_dict == NULL && (s_dict = PyUnicode_InternFromString("__dict__")) == NULL)
        return -1;
    object_getattribute = _PyType_Lookup(&PyBaseObject_Type, s_getattribute); /* object's dict keeps it */
    if (object_getattribute == NULL) {
        PyErr_SetString(PyExc_ImportError, "framegraph._C: object.__getattribute__ not found");
        return -1;
    }
    /* A class made here only to read its __dict__ descriptor's getter, then dropped. */
    PyObject *plain = PyObject_CallFunction((PyObject *)&PyType_Type, "s()N", "plain", PyDict_New());
    PyObject *descr = plain == NULL ? NULL : _PyType_Lookup((PyTypeObject *)plain, s_dict);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyGetSetDescr_Type)) {
        Py_XDECREF(plain);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ImportError, "framegraph._C: no __dict__ descriptor on a plain class");
        return -1;
    }
    instance_dict_getter = ((PyGetSetDescrObject *)descr)->d_getset->get;
    Py_DECREF(plain);
    return 0;
}
