/* framegraph._C: the PEP 523 frame hook and one Python callback; the per-code guard
 * cache is cache.c, the guard programs guards.c.
 *
 * While a thread has a callback installed (set_eval_frame), every fresh Python
 * function frame of that thread reaches fg_eval_frame before its first instruction.
 * The frame's code object carries, in one co_extra slot, either SKIP or an
 * ExtraState holding a chain of CacheEntry(check_fn, code), newest/MRU first.
 *   - SKIP: run the frame as is.
 *   - RUN_EAGERLY: run the frame as is, with the hook off for this thread until it returns
 *     (a compiled graph's code: what it calls is not the program's to compile).
 *   - The first entry whose check_fn(f_locals) is true: run its code instead,
 *     without calling the callback; the entry moves to the front.
 *   - Otherwise call callback(frame_info) with the hook disabled for this thread;
 *     it returns None (mark SKIP), False (run as is) or (check_fn, code).
 *
 * Running a replacement ("approach ii" of notes/frame-hook.md): build a function
 * from the new code with the frame's globals and closure, vectorcall it with the
 * frame's already-bound arguments, then dispose of the untouched original frame the
 * way the running CPython expects (compat.h). No PyFrameObject is ever made for the
 * intercepted frame, and no private CPython function is copied.
 *
 * Re-entrancy: guards, the callback and the guard error hook are Python code; they
 * may re-enter the hook (it is disabled for this thread meanwhile), call reset_code
 * or skip_code on the code being looked up, or change the callback. So we hold strong
 * references across every call-out and re-read the code's extra slot afterwards.
 * All state is static: one interpreter per process, GIL held throughout.
 */
#include "cache.h"
#include "guards.h"

/* ---- module state ----------------------------------------------------------- */

static Py_tss_t tss_callback = Py_tss_NEEDS_INIT; /* strong ref; NULL means None */
static _PyFrameEvalFunction previous_eval = NULL; /* what we chain to */
static int hook_installed = 0;
static Py_ssize_t active_threads = 0;           /* threads with a callback set */
static PyTypeObject *FrameInfo_Type = NULL;

#define RUN_ONLY Py_False /* callback value: look up, never compile */

/* Another frame hook (torch.compile's) may chain to ours while ours chains to it: it keeps the
 * evaluator it found when it installed itself and calls that one, and either may install
 * itself again over the other later. Then each would hand every frame to the other for ever
 * (as tail calls: a hang, not a stack overflow). So the frame ours hands down last is
 * remembered, per thread, and if it comes back to ours, CPython's own evaluator runs it:
 * every hook in the chain has had it by then. */
static _Thread_local _PyInterpreterFrame *handed_down = NULL;

static PyObject *chain(PyThreadState *ts, _PyInterpreterFrame *f, int throw_flag)
{
    if (previous_eval == _PyEval_EvalFrameDefault)
        return _PyEval_EvalFrameDefault(ts, f, throw_flag);
    _PyInterpreterFrame *outer = handed_down;
    handed_down = f;
    PyObject *result = previous_eval(ts, f, throw_flag);
    handed_down = outer;
    return result;
}

/* ---- frame views -------------------------------------------------------------- */

/* f_locals: argument names (positional, keyword-only, *args, **kwargs) -> values, plus
 * free variable names -> the values in the function's closure cells (empty cells are
 * left out). At hook time an argument that is also a cell still holds its raw value
 * in its slot, and free-var slots are not filled yet. */
static PyObject *frame_locals(_PyInterpreterFrame *f, PyCodeObject *co, PyObject *closure)
{
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    PyObject *names = co->co_localsplusnames;
    int nargs = co->co_argcount + co->co_kwonlyargcount +
                ((co->co_flags & CO_VARARGS) != 0) + ((co->co_flags & CO_VARKEYWORDS) != 0);
    for (int i = 0; i < nargs; i++) {
        PyObject *v = f->localsplus[i];
        if (v != NULL && PyDict_SetItem(d, PyTuple_GET_ITEM(names, i), v) < 0)
            goto error;
    }
    if (closure != NULL) {
        int first = co->co_nlocalsplus - co->co_nfreevars;
        for (int i = 0; i < co->co_nfreevars && i < PyTuple_GET_SIZE(closure); i++) {
            PyObject *v = PyCell_GET(PyTuple_GET_ITEM(closure, i));
            if (v != NULL && PyDict_SetItem(d, PyTuple_GET_ITEM(names, first + i), v) < 0)
                goto error;
        }
    }
    return d;
error:
    Py_DECREF(d);
    return NULL;
}

static PyStructSequence_Field frame_info_fields[] = {
    {"f_code", "the code object about to run"},
    {"f_globals", "the frame's globals dict"},
    {"f_builtins", "the frame's builtins dict"},
    {"f_locals", "argument and free-variable names -> values (the guards' input)"},
    {"closure", "the function's closure: tuple of cells, or None"},
    {"f_func", "the function object being called"},
    {NULL},
};

static PyStructSequence_Desc frame_info_desc = {
    "framegraph._C.FrameInfo",
    "What the callback gets for an intercepted frame.",
    frame_info_fields,
    6,
};

static PyObject *make_frame_info(_PyInterpreterFrame *f, PyCodeObject *co, PyObject *func,
                                 PyObject *f_locals)
{
    PyObject *info = PyStructSequence_New(FrameInfo_Type);
    if (info == NULL)
        return NULL;
    PyObject *closure = PyFunction_GET_CLOSURE(func);
    PyObject *items[6] = {(PyObject *)co, f->f_globals, f->f_builtins, f_locals,
                          closure ? closure : Py_None, func};
    for (int i = 0; i < 6; i++)
        PyStructSequence_SET_ITEM(info, i, Py_NewRef(items[i]));
    return info;
}

/* ---- validating a callback result -------------------------------------------- */

#define SIG_FLAGS (CO_VARARGS | CO_VARKEYWORDS)

/* Compares `count` names of a's localsplus from a_start with b's from b_start. */
static int same_names_at(PyCodeObject *a, int a_start, PyCodeObject *b, int b_start, int count)
{
    for (int i = 0; i < count; i++) {
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(a->co_localsplusnames, a_start + i),
                                          PyTuple_GET_ITEM(b->co_localsplusnames, b_start + i), Py_EQ);
        if (eq <= 0)
            return eq;
    }
    return 1;
}

static int same_names(PyCodeObject *a, PyCodeObject *b, int start, int stop)
{
    return same_names_at(a, start, b, start, stop - start);
}

static PyObject *describe_signature(PyCodeObject *c)
{
    return PyUnicode_FromFormat(
        "(argcount=%d, posonlyargcount=%d, kwonlyargcount=%d, varargs=%s, varkw=%s, varnames=%R)",
        c->co_argcount, c->co_posonlyargcount, c->co_kwonlyargcount,
        (c->co_flags & CO_VARARGS) ? "True" : "False",
        (c->co_flags & CO_VARKEYWORDS) ? "True" : "False", c->co_localsplusnames);
}

/* The replacement receives the frame's bound arguments by position (positional and
 * *args) and by name (keyword-only and **kwargs items), and the frame's closure.
 * Returns 0 if `nc` can take them exactly as the original would, else TypeError. */
static int check_replacement(PyCodeObject *co, PyCodeObject *nc, PyObject *closure)
{
    int ok = co->co_argcount == nc->co_argcount &&
             co->co_posonlyargcount == nc->co_posonlyargcount &&
             co->co_kwonlyargcount == nc->co_kwonlyargcount &&
             (co->co_flags & SIG_FLAGS) == (nc->co_flags & SIG_FLAGS);
    if (ok) {
        /* Keyword-only names always matter; positional-or-keyword names matter when
         * **kwargs items are passed by name too (they must not collide). */
        int start = (co->co_flags & CO_VARKEYWORDS) ? co->co_posonlyargcount : co->co_argcount;
        ok = same_names(co, nc, start, co->co_argcount + co->co_kwonlyargcount);
        if (ok < 0)
            return -1;
    }
    if (!ok) {
        PyObject *want = describe_signature(co), *got = describe_signature(nc);
        if (want && got)
            PyErr_Format(PyExc_TypeError,
                         "framegraph: replacement code for %U must take the same arguments: "
                         "expected %U, got %U", co->co_qualname, want, got);
        Py_XDECREF(want);
        Py_XDECREF(got);
        return -1;
    }
    Py_ssize_t ncells = closure ? PyTuple_GET_SIZE(closure) : 0;
    if (nc->co_nfreevars != ncells) {
        PyErr_Format(PyExc_TypeError,
                     "framegraph: replacement code for %U must have %zd free variables "
                     "(one per closure cell), got %d", co->co_qualname, ncells, nc->co_nfreevars);
        return -1;
    }
    /* Cells are bound by position: the free variable names must line up too. They are
     * the last slots of each code, which may have different numbers of other locals. */
    ok = same_names_at(co, co->co_nlocalsplus - co->co_nfreevars,
                       nc, nc->co_nlocalsplus - nc->co_nfreevars, ncells);
    if (!ok) {
        PyObject *want = PyErr_Occurred() ? NULL : PyCode_GetFreevars(co);
        PyObject *got = want ? PyCode_GetFreevars(nc) : NULL;
        if (want && got)
            PyErr_Format(PyExc_TypeError,
                         "framegraph: replacement code for %U must have the free variables %R, "
                         "got %R", co->co_qualname, want, got);
        Py_XDECREF(want);
        Py_XDECREF(got);
        return -1;
    }
    return 0;
}

/* Turns the callback's result into the code to run. Returns a new reference to a code
 * object (co itself: run as is) or NULL with an error set. */
static PyObject *handle_result(PyCodeObject *co, PyObject *closure, PyObject *result)
{
    if (result == Py_None) { /* never look at this code again */
        if (fg_set_extra(co, SKIP) < 0)
            return NULL;
        return Py_NewRef(co);
    }
    if (result == RUN_ONLY)
        return Py_NewRef(co);
    if (!PyTuple_Check(result) || PyTuple_GET_SIZE(result) != 2 ||
        !PyCallable_Check(PyTuple_GET_ITEM(result, 0)) ||
        !PyCode_Check(PyTuple_GET_ITEM(result, 1))) {
        PyErr_Format(PyExc_TypeError,
                     "framegraph: the eval-frame callback must return None, False or a "
                     "(check_fn: callable, code: code object) tuple, got %.200R", result);
        return NULL;
    }
    PyObject *check_fn = PyTuple_GET_ITEM(result, 0);
    PyCodeObject *nc = (PyCodeObject *)PyTuple_GET_ITEM(result, 1);
    if (nc == co) { /* a guarded "run as is"; None avoids a code -> extra -> code loop */
        if (fg_add_entry(co, check_fn, Py_None) < 0)
            return NULL;
        return Py_NewRef(co);
    }
    if (check_replacement(co, nc, closure) < 0)
        return NULL;
    /* Our own vectorcall of nc must not be intercepted again. */
    if (fg_set_extra(nc, SKIP) < 0 || fg_add_entry(co, check_fn, (PyObject *)nc) < 0)
        return NULL;
    return Py_NewRef(nc);
}

/* ---- running the replacement ------------------------------------------------- */

#define SMALL_ARGS 8

/* Call `nc` as the function the frame belongs to, passing the frame's bound
 * arguments (borrowed: the untouched frame keeps them alive until disposal). */
static PyObject *call_replacement(_PyInterpreterFrame *f, PyCodeObject *co, PyObject *func,
                                  PyCodeObject *nc)
{
    PyObject *fn = PyFunction_New((PyObject *)nc, f->f_globals);
    if (fn == NULL)
        return NULL;
    PyObject *closure = PyFunction_GET_CLOSURE(func);
    if (closure != NULL && PyFunction_SetClosure(fn, closure) < 0) {
        Py_DECREF(fn);
        return NULL;
    }
    /* PyFunction_New re-derives builtins from globals; keep the frame's. */
    PyFunctionObject *fo = (PyFunctionObject *)fn;
    if (fo->func_builtins != f->f_builtins)
        Py_SETREF(fo->func_builtins, Py_NewRef(f->f_builtins));
    PyObject **L = f->localsplus;
    int npos = co->co_argcount, nkwonly = co->co_kwonlyargcount, slot = npos + nkwonly;
    PyObject *varargs = (co->co_flags & CO_VARARGS) ? L[slot++] : NULL;
    PyObject *varkw = (co->co_flags & CO_VARKEYWORDS) ? L[slot++] : NULL;
    Py_ssize_t nvar = varargs ? PyTuple_GET_SIZE(varargs) : 0;
    Py_ssize_t nkw = nkwonly + (varkw ? PyDict_GET_SIZE(varkw) : 0);
    Py_ssize_t total = npos + nvar + nkw;

    PyObject *small[SMALL_ARGS], **args = small, *kwnames = NULL, *result = NULL;
    if (total > SMALL_ARGS && (args = PyMem_Malloc(total * sizeof(PyObject *))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (int i = 0; i < npos; i++)
        args[i] = L[i];
    for (Py_ssize_t i = 0; i < nvar; i++)
        args[npos + i] = PyTuple_GET_ITEM(varargs, i);
    if (nkw > 0) {
        if ((kwnames = PyTuple_New(nkw)) == NULL)
            goto done;
        Py_ssize_t k = 0, pos = 0;
        PyObject *key, *value;
        for (; k < nkwonly; k++) {
            PyTuple_SET_ITEM(kwnames, k, Py_NewRef(PyTuple_GET_ITEM(co->co_localsplusnames, npos + k)));
            args[npos + nvar + k] = L[npos + k];
        }
        while (varkw && PyDict_Next(varkw, &pos, &key, &value)) {
            PyTuple_SET_ITEM(kwnames, k, Py_NewRef(key));
            args[npos + nvar + k++] = value;
        }
    }
    for (Py_ssize_t i = 0; i < total; i++) {
        if (args[i] == NULL) { /* cannot happen for a frame from _PyEval_Vector */
            PyErr_SetString(PyExc_SystemError, "framegraph: unbound argument in a fresh frame");
            goto done;
        }
    }
    result = PyObject_Vectorcall(fn, args, npos + nvar, kwnames);
done:
    Py_XDECREF(kwnames);
    if (args != small)
        PyMem_Free(args);
    Py_DECREF(fn);
    return result;
}

/* ---- the hook ------------------------------------------------------------------ */

#define NOT_FUNCTION_LIKE (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR | CO_ITERABLE_COROUTINE)

/* Hand the thread's callback back after a call-out, unless the call-out installed a
 * different one (then that one stays, and `callback` is no longer counted). */
static void update_hook(int delta);
static void restore_callback(PyObject *callback)
{
    if (PyThread_tss_get(&tss_callback) == NULL && PyThread_tss_set(&tss_callback, callback) == 0)
        return;
    Py_DECREF(callback);
    update_hook(-1);
}

/* The frame is ours (not handed to the evaluator): look up, maybe call the callback,
 * run something, and dispose of the frame on every path. */
static PyObject *intercept(PyThreadState *ts, _PyInterpreterFrame *f, PyCodeObject *co,
                           PyObject *func, PyObject *callback)
{
    PyObject *closure = PyFunction_GET_CLOSURE(func), *result = NULL;
    PyObject *to_run = NULL; /* code to run; co means the original, as is */
    /* Guards and the callback run with the hook disabled for this thread. We take
     * over the TLS's reference to callback until restore_callback. This comes first:
     * even building f_locals may run finalizers, i.e. Python code. */
    if (PyThread_tss_set(&tss_callback, NULL) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "framegraph: cannot set thread-local state");
        goto dispose;
    }
    PyObject *f_locals = frame_locals(f, co, closure);
    /* Guards are bookkeeping: tracers and profilers do not see them (nor the guard
     * error hook), so a traced cache hit looks like the eager call. The callback,
     * i.e. the compiler, stays visible to debuggers and coverage. */
    PyThreadState_EnterTracing(ts);
    CacheEntry *hit = f_locals ? fg_lookup(co, f_locals) : NULL;
    PyThreadState_LeaveTracing(ts);
    if (hit != NULL) {
        to_run = Py_NewRef(hit->code == Py_None ? (PyObject *)co : hit->code);
        Py_DECREF(hit);
    }
    else if (PyErr_Occurred()) {
        /* building f_locals or a guard failed */
    }
    else if (callback == RUN_ONLY) {
        to_run = Py_NewRef(co);
    }
    else {
        PyObject *info = make_frame_info(f, co, func, f_locals);
        PyObject *r = info ? PyObject_CallOneArg(callback, info) : NULL;
        Py_XDECREF(info);
        if (r != NULL) {
            to_run = handle_result(co, closure, r);
            Py_DECREF(r);
        }
    }
    restore_callback(callback);
    Py_XDECREF(f_locals);
    if (to_run == NULL)
        goto dispose;
    if (to_run == (PyObject *)co) { /* the default evaluator takes the frame over */
        Py_DECREF(to_run);
        return chain(ts, f, 0);
    }
    result = call_replacement(f, co, func, (PyCodeObject *)to_run);
    Py_DECREF(to_run);
dispose:
    fg_dispose_frame(ts, f);
    return result;
}

/* A compiled graph's code runs with the hook off, as torch.compile runs its graphs inside
 * `disable`: fx writes a call of `torch.index_select` as that name, and a library that
 * replaced it with a Python wrapper (torch_geometric does) would otherwise have the wrapper,
 * which the trace went through, compiled again from inside the graph, for ever. */
static PyObject *run_eagerly(PyThreadState *ts, _PyInterpreterFrame *f, int throw_flag, PyObject *callback)
{
    /* We take over the TLS's reference until restore_callback, as intercept does. */
    if (PyThread_tss_set(&tss_callback, NULL) != 0)
        return chain(ts, f, throw_flag);
    PyObject *result = chain(ts, f, throw_flag);
    restore_callback(callback);
    return result;
}

static PyObject *fg_eval_frame(PyThreadState *ts, _PyInterpreterFrame *f, int throw_flag)
{
    if (f == handed_down) /* back from the hook below ours, which chained to ours */
        return _PyEval_EvalFrameDefault(ts, f, throw_flag);
    PyObject *callback = PyThread_tss_get(&tss_callback);
    /* Fast exits: hook off for this thread, generator .throw(), or inside a trace or
     * profile function. */
    if (callback == NULL || throw_flag || ts->tracing)
        return chain(ts, f, throw_flag);
    PyCodeObject *co = FG_FRAME_CODE(f);
    PyObject *func = FG_FRAME_FUNC(f);
    /* Only fresh function frames: not generator resumes, module/class/exec bodies
     * (they have f_locals), nor generator or coroutine code (left alone: eager). */
    if (f->owner != FRAME_OWNED_BY_THREAD || f->f_locals != NULL || !FG_FRAME_FRESH(f, co) ||
        (co->co_flags & (CO_OPTIMIZED | NOT_FUNCTION_LIKE)) != CO_OPTIMIZED ||
        func == NULL || !PyFunction_Check(func))
        return chain(ts, f, throw_flag);
    ExtraState *st = fg_get_extra(co);
    if (st == SKIP || (st == NULL && callback == RUN_ONLY))
        return chain(ts, f, throw_flag);
    if (st == RUN_EAGERLY)
        return run_eagerly(ts, f, throw_flag, callback);
    return intercept(ts, f, co, func, callback);
}

/* Install the C hook while some thread has a callback (3.13: once, for good). */
static void update_hook(int delta)
{
    active_threads += delta;
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (active_threads > 0 && !hook_installed) {
        previous_eval = _PyInterpreterState_GetEvalFrameFunc(interp);
        _PyInterpreterState_SetEvalFrameFunc(interp, fg_eval_frame);
        hook_installed = 1;
    }
    else if (active_threads <= 0 && hook_installed && FG_UNINSTALL_WHEN_IDLE) {
        active_threads = 0;
        if (_PyInterpreterState_GetEvalFrameFunc(interp) == fg_eval_frame)
            _PyInterpreterState_SetEvalFrameFunc(interp, previous_eval);
        hook_installed = 0;
    }
}

/* ---- module functions ---------------------------------------------------------- */

static PyObject *set_eval_frame(PyObject *m, PyObject *callback)
{
    if (callback != Py_None && callback != RUN_ONLY && !PyCallable_Check(callback))
        return PyErr_Format(PyExc_TypeError,
                            "set_eval_frame() expects None, False (run-only) or a callable, "
                            "got %.200s", Py_TYPE(callback)->tp_name);
    PyObject *old = PyThread_tss_get(&tss_callback);
    PyObject *new = callback == Py_None ? NULL : Py_NewRef(callback);
    if (PyThread_tss_set(&tss_callback, new) != 0) {
        Py_XDECREF(new);
        PyErr_SetString(PyExc_RuntimeError, "set_eval_frame: cannot set thread-local state");
        return NULL;
    }
    if ((old == NULL) != (new == NULL))
        update_hook(new != NULL ? 1 : -1);
    return old != NULL ? old : Py_NewRef(Py_None); /* the TLS reference moves to the caller */
}

static PyObject *skip_code(PyObject *m, PyObject *arg)
{
    PyCodeObject *co = fg_code_arg(arg, "skip_code");
    if (co == NULL || fg_set_extra(co, SKIP) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *run_eagerly_inside(PyObject *m, PyObject *arg)
{
    PyCodeObject *co = fg_code_arg(arg, "run_eagerly_inside");
    if (co == NULL || fg_set_extra(co, RUN_EAGERLY) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *reset_code(PyObject *m, PyObject *arg)
{
    PyCodeObject *co = fg_code_arg(arg, "reset_code");
    if (co == NULL || (fg_get_extra(co) != NULL && fg_set_extra(co, NULL) < 0))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *unsupported(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "unsupported() takes 2 arguments (%zd given)", nargs);
    return Py_NewRef(args[1]);
}

static PyMethodDef methods[] = {
    {"set_eval_frame", set_eval_frame, METH_O,
     "set_eval_frame(callback) -> previous. callback: None (off), False (run-only: use "
     "cached entries, never call back) or callable(frame_info). Per thread."},
    {"skip_code", skip_code, METH_O, "skip_code(code): never intercept frames of code."},
    {"run_eagerly_inside", run_eagerly_inside, METH_O,
     "run_eagerly_inside(code): never intercept frames of code, and run what they call with the "
     "hook off (a compiled graph's code)."},
    {"reset_code", reset_code, METH_O, "reset_code(code): drop code's cache entries / skip mark."},
    {"unsupported", (PyCFunction)(void (*)(void))unsupported, METH_FASTCALL,
     "unsupported(a, b) -> b. A C function the translator cannot trace into."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "framegraph._C",
    "PEP 523 frame hook with a per-code guard cache (see framegraph/eval_frame.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__C(void)
{
    if (FrameInfo_Type == NULL && (FrameInfo_Type = PyStructSequence_NewType(&frame_info_desc)) == NULL)
        return NULL;
    if (!PyThread_tss_is_created(&tss_callback) && PyThread_tss_create(&tss_callback) != 0) {
        PyErr_SetString(PyExc_ImportError, "framegraph._C: cannot create thread-local key");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL || fg_cache_init(m) < 0 || fg_guards_init(m) < 0) {
        Py_XDECREF(m);
        return NULL;
    }
    return m;
}
