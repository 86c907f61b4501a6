/* cache.c: the per-code guard cache of framegraph._C.
 *
 * A code object's co_extra slot (one index for the process) holds NULL, SKIP, RUN_EAGERLY or an
 * ExtraState: a chain of CacheEntry(check_fn, code), most recently used first, entries that
 * run the original code as is (code None) last. The hook
 * (eval_frame.c) looks a frame up here and adds the entries its callback returns.
 */
#include "cache.h"

static Py_ssize_t extra_index = -1;       /* our co_extra slot */
static PyObject *guard_error_hook = NULL; /* called when a guard raises */

/* ---- CacheEntry -------------------------------------------------------------- */


static int entry_traverse(CacheEntry *e, visitproc visit, void *arg)
{
    Py_VISIT(e->check_fn);
    Py_VISIT(e->code);
    Py_VISIT(e->next);
    return 0;
}

static int entry_clear(CacheEntry *e)
{
    Py_CLEAR(e->check_fn);
    Py_CLEAR(e->code);
    Py_CLEAR(e->next);
    return 0;
}

static void entry_dealloc(CacheEntry *e)
{
    PyObject_GC_UnTrack(e);
    /* Unlink iteratively: a long chain must not recurse once per entry. */
    CacheEntry *next = e->next;
    e->next = NULL;
    while (next != NULL && Py_REFCNT(next) == 1) {
        CacheEntry *after = next->next;
        next->next = NULL;
        Py_DECREF(next);
        next = after;
    }
    Py_XDECREF(next);
    entry_clear(e);
    PyObject_GC_Del(e);
}

static PyObject *entry_get_check_fn(CacheEntry *e, void *c) { return Py_NewRef(e->check_fn ? e->check_fn : Py_None); }
static PyObject *entry_get_code(CacheEntry *e, void *c) { return Py_NewRef(e->code ? e->code : Py_None); }
static PyObject *entry_get_next(CacheEntry *e, void *c) { return Py_NewRef(e->next ? (PyObject *)e->next : Py_None); }

static PyGetSetDef entry_getset[] = {
    {"check_fn", (getter)entry_get_check_fn, NULL, "guard: check_fn(f_locals) -> bool", NULL},
    {"code", (getter)entry_get_code, NULL, "replacement code (None: run the original as is)", NULL},
    {"next", (getter)entry_get_next, NULL, "next (older / less recently used) entry or None", NULL},
    {NULL},
};

static PyTypeObject CacheEntry_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "framegraph._C.CacheEntry",
    .tp_doc = "One guarded replacement of a code object (read-only).",
    .tp_basicsize = sizeof(CacheEntry),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_getset = entry_getset,
};

/* ---- ExtraState: what our co_extra slot points to (see cache.h) ---------------- */

static void free_extra(void *p) /* called by code_dealloc and SetExtra, GIL held */
{
    if (!FG_HAS_STATE(p))
        return;
    CacheEntry *head = ((ExtraState *)p)->head;
    PyMem_RawFree(p);
    Py_XDECREF(head);
}

ExtraState *fg_get_extra(PyCodeObject *co)
{
    void *p = NULL;
    if (FG_Code_GetExtra((PyObject *)co, extra_index, &p) < 0)
        PyErr_Clear();
    return (ExtraState *)p;
}

int fg_set_extra(PyCodeObject *co, ExtraState *st)
{
    return FG_Code_SetExtra((PyObject *)co, extra_index, st);
}

/* Add a new entry; steals nothing. A compiled entry goes first; a "run as is" entry (code
 * None) goes last, behind every compiled entry: it only spares translating a variant that
 * cannot compile, and must never shadow an entry that fits the same call. */
int fg_add_entry(PyCodeObject *co, PyObject *check_fn, PyObject *code)
{
    CacheEntry *e = PyObject_GC_New(CacheEntry, &CacheEntry_Type);
    if (e == NULL)
        return -1;
    e->check_fn = Py_NewRef(check_fn);
    e->code = Py_NewRef(code);
    e->next = NULL;
    PyObject_GC_Track(e);
    ExtraState *st = fg_get_extra(co);
    if (!FG_HAS_STATE(st)) {
        st = PyMem_RawMalloc(sizeof(ExtraState));
        if (st == NULL) {
            Py_DECREF(e);
            PyErr_NoMemory();
            return -1;
        }
        st->head = e;
        if (fg_set_extra(co, st) < 0) {
            free_extra(st);
            return -1;
        }
        return 0;
    }
    if (code != Py_None || st->head->code == Py_None) {
        e->next = st->head; /* takes over the state's reference */
        st->head = e;
        return 0;
    }
    CacheEntry *last = st->head;
    while (last->next != NULL && last->next->code != Py_None)
        last = last->next;
    e->next = last->next; /* takes over last's reference */
    last->next = e;
    return 0;
}

/* Move e to the front of co's chain if it is still in it; "run as is" entries stay behind
 * the compiled ones. No refcount changes and no calls out: the chain is never seen
 * half-updated. */
static void move_to_front(PyCodeObject *co, CacheEntry *e)
{
    ExtraState *st = fg_get_extra(co);
    if (!FG_HAS_STATE(st) || st->head == e || e->code == Py_None)
        return;
    for (CacheEntry *prev = st->head; prev != NULL; prev = prev->next) {
        if (prev->next == e) {
            prev->next = e->next;
            e->next = st->head;
            st->head = e;
            return;
        }
    }
}

/* ---- guards ------------------------------------------------------------------- */

/* A guard raised: tell the guard error hook, then let the guard's exception
 * propagate (an exception raised by the hook replaces it, chained). */
static void report_guard_error(PyObject *check_fn, PyCodeObject *co, PyObject *f_locals,
                               Py_ssize_t index, int is_last)
{
    if (guard_error_hook == NULL)
        return;
    PyObject *hook = Py_NewRef(guard_error_hook);
    PyObject *exc = fg_err_take();
    PyObject *r = PyObject_CallFunction(hook, "OOOnO", check_fn, (PyObject *)co, f_locals,
                                        index, is_last ? Py_True : Py_False);
    Py_DECREF(hook);
    if (r == NULL) {
        PyObject *exc2 = fg_err_take();
        PyException_SetContext(exc2, exc); /* steals exc */
        fg_err_give(exc2);
        return;
    }
    Py_DECREF(r);
    fg_err_give(exc);
}

/* Walk co's chain. Returns a new reference to the first entry whose guard passes (and
 * moves it to the front), or NULL: a miss if no error is set. */
CacheEntry *fg_lookup(PyCodeObject *co, PyObject *f_locals)
{
    ExtraState *st = fg_get_extra(co);
    if (!FG_HAS_STATE(st))
        return NULL;
    CacheEntry *e = st->head;
    Py_XINCREF(e);
    for (Py_ssize_t index = 0; e != NULL; index++) {
        if (e->check_fn != NULL && e->code != NULL) {
            PyObject *check_fn = Py_NewRef(e->check_fn);
            PyObject *r = PyObject_CallOneArg(check_fn, f_locals);
            int ok = r == NULL ? -1 : r == Py_True ? 1 : PyObject_IsTrue(r);
            Py_XDECREF(r);
            if (ok < 0) {
                report_guard_error(check_fn, co, f_locals, index, e->next == NULL);
                Py_DECREF(check_fn);
                Py_DECREF(e);
                return NULL;
            }
            Py_DECREF(check_fn);
            if (ok) {
                move_to_front(co, e); /* re-reads the slot: the guard may have reset it */
                return e;
            }
        }
        /* e holds its next, so the walk stays valid even if the chain was reset. */
        CacheEntry *next = e->next;
        Py_XINCREF(next);
        Py_DECREF(e);
        e = next;
    }
    return NULL;
}

/* ---- module functions ---------------------------------------------------------- */

PyCodeObject *fg_code_arg(PyObject *arg, const char *fname)
{
    if (!PyCode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s() expects a code object, got %.200s", fname,
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return (PyCodeObject *)arg;
}

static PyObject *set_guard_error_hook(PyObject *m, PyObject *fn)
{
    if (fn != Py_None && !PyCallable_Check(fn))
        return PyErr_Format(PyExc_TypeError,
                            "set_guard_error_hook() expects None or a callable, got %.200s",
                            Py_TYPE(fn)->tp_name);
    Py_XSETREF(guard_error_hook, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyObject *debug_get_cache_entry_list(PyObject *m, PyObject *arg)
{
    PyCodeObject *co = fg_code_arg(arg, "_debug_get_cache_entry_list");
    if (co == NULL)
        return NULL;
    PyObject *list = PyList_New(0);
    ExtraState *st = fg_get_extra(co);
    if (list == NULL || !FG_HAS_STATE(st))
        return list;
    for (CacheEntry *e = st->head; e != NULL; e = e->next) {
        if (PyList_Append(list, (PyObject *)e) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

static PyMethodDef cache_methods[] = {
    {"set_guard_error_hook", set_guard_error_hook, METH_O,
     "set_guard_error_hook(fn | None); fn(check_fn, code, f_locals, index, is_last) is called "
     "when a guard raises, before the exception propagates."},
    {"_debug_get_cache_entry_list", debug_get_cache_entry_list, METH_O,
     "_debug_get_cache_entry_list(code) -> list[CacheEntry], most recently used first."},
    {NULL},
};

int fg_cache_init(PyObject *m)
{
    /* Extra indices are per process and never released: refuse to burn a second. */
    if (extra_index != -1) {
        PyErr_SetString(PyExc_ImportError, "framegraph._C cannot be loaded twice in one process");
        return -1;
    }
    if (PyType_Ready(&CacheEntry_Type) < 0 ||
        PyModule_AddObjectRef(m, "CacheEntry", (PyObject *)&CacheEntry_Type) < 0 ||
        PyModule_AddFunctions(m, cache_methods) < 0)
        return -1;
    extra_index = FG_RequestCodeExtraIndex(free_extra);
    if (extra_index < 0) {
        PyErr_SetString(PyExc_ImportError, "framegraph._C: no free code extra index");
        return -1;
    }
    return 0;
}
