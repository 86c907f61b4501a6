/* compat.h: every CPython version difference of framegraph._C lives here.
 *
 * Supported: CPython 3.11.4+ (3.11.0-3.11.3 let BINARY_SUBSCR_GETITEM bypass the
 * PEP 523 hook, cpython gh-104405), 3.12 and 3.13. Only exported (PyAPI_FUNC)
 * symbols are used; from the internal headers we take struct layouts and static
 * inlines that reference nothing unexported. See /work/shared/notes/frame-hook.md.
 */
#ifndef FRAMEGRAPH_COMPAT_H
#define FRAMEGRAPH_COMPAT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0400 || PY_VERSION_HEX >= 0x030E0000
#error "framegraph._C supports CPython 3.11.4 to 3.13"
#endif

/* _PyInterpreterFrame. 3.11/3.12 ship pycore_frame.h without a Py_BUILD_CORE
 * guard; 3.13 refuses it without, so define it for this include only. */
#if PY_VERSION_HEX >= 0x030D0000
#  define Py_BUILD_CORE
#  include <internal/pycore_frame.h>
#  undef Py_BUILD_CORE
#else
#  include <internal/pycore_frame.h>
#endif

/* ---- frame fields ---------------------------------------------------------
 * FG_FRAME_FRESH: the frame was just pushed by _PyEval_Vector and has not run
 * one instruction (so arguments are bound, cells not yet made, free vars not
 * yet copied). */
#if PY_VERSION_HEX >= 0x030D0000
#  define FG_FRAME_CODE(f) ((PyCodeObject *)(f)->f_executable)
#  define FG_FRAME_FUNC(f) ((f)->f_funcobj)
#  define FG_FRAME_FRESH(f, co) ((f)->instr_ptr == _PyCode_CODE(co))
#elif PY_VERSION_HEX >= 0x030C0000
#  define FG_FRAME_CODE(f) ((f)->f_code)
#  define FG_FRAME_FUNC(f) ((f)->f_funcobj)
#  define FG_FRAME_FRESH(f, co) ((f)->prev_instr == _PyCode_CODE(co) - 1)
#else
#  define FG_FRAME_CODE(f) ((f)->f_code)
#  define FG_FRAME_FUNC(f) ((PyObject *)(f)->f_func)
#  define FG_FRAME_FRESH(f, co) ((f)->prev_instr == _PyCode_CODE(co) - 1)
#endif

/* ---- code extra slots: renamed PyUnstable_* in 3.12 ------------------------ */
#if PY_VERSION_HEX >= 0x030C0000
#  define FG_RequestCodeExtraIndex PyUnstable_Eval_RequestCodeExtraIndex
#  define FG_Code_GetExtra PyUnstable_Code_GetExtra
#  define FG_Code_SetExtra PyUnstable_Code_SetExtra
#else
#  define FG_RequestCodeExtraIndex _PyEval_RequestCodeExtraIndex
#  define FG_Code_GetExtra _PyCode_GetExtra
#  define FG_Code_SetExtra _PyCode_SetExtra
#endif

/* ---- uninstalling the hook when no thread uses it --------------------------
 * 3.11/3.12: uninstalling is a plain store and gives back inlined Python calls
 * (3.12 halves the usable recursion depth while any hook is installed).
 * 3.13: (un)installing invalidates all tier-2 executors, so install once. */
#if PY_VERSION_HEX >= 0x030D0000
#  define FG_UNINSTALL_WHEN_IDLE 0
#else
#  define FG_UNINSTALL_WHEN_IDLE 1
#endif

/* ---- the current exception as one object (PyErr_Fetch is deprecated in 3.12) */
#if PY_VERSION_HEX >= 0x030C0000
#  define fg_err_take PyErr_GetRaisedException
#  define fg_err_give PyErr_SetRaisedException
#else
static inline PyObject *fg_err_take(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (type == NULL)
        return NULL;
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL) {
        PyException_SetTraceback(value, tb);
        Py_DECREF(tb);
    }
    Py_DECREF(type);
    return value;
}
static inline void fg_err_give(PyObject *exc) /* steals exc */
{
    if (exc == NULL)
        return;
    PyErr_Restore(Py_NewRef(Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
}
#endif

/* ---- disposing of an intercepted frame we did not hand to the evaluator -----
 * Precondition: owner == FRAME_OWNED_BY_THREAD, frame_obj == NULL (we never
 * materialise it), the frame is the top of the thread's datastack, and it is not
 * linked as the current frame. */
#if PY_VERSION_HEX >= 0x030D0000
/* Exported in 3.13 (pycore_ceval.h is Py_BUILD_CORE only, so declare it). */
PyAPI_FUNC(void) _PyEval_FrameClearAndPop(PyThreadState *tstate, _PyInterpreterFrame *frame);
static inline void fg_dispose_frame(PyThreadState *ts, _PyInterpreterFrame *f)
{
    _PyEval_FrameClearAndPop(ts, f);
}
#elif PY_VERSION_HEX >= 0x030C0000
/* 3.12: the callee clears and pops, and neither is exported. This mirrors
 * clear_thread_frame + _PyFrame_ClearExceptCode (frame.c) + _PyThreadState_PopFrame
 * (pystate.c) of 3.12, minus take_ownership, which only matters when a frame
 * object exists. */
static inline void fg_dispose_frame(PyThreadState *ts, _PyInterpreterFrame *f)
{
    for (int i = 0; i < f->stacktop; i++)
        Py_XDECREF(f->localsplus[i]);
    Py_XDECREF(f->frame_obj);
    Py_XDECREF(f->f_locals);
    Py_DECREF(f->f_funcobj);
    Py_DECREF(f->f_code);
    PyObject **base = (PyObject **)f;
    _PyStackChunk *chunk = ts->datastack_chunk;
    if (base == &chunk->data[0]) {
        /* The frame opened this chunk: free it, resume the previous one. */
        _PyStackChunk *prev = chunk->previous;
        ts->datastack_top = &prev->data[prev->top];
        ts->datastack_chunk = prev;
        ts->datastack_limit = (PyObject **)(((char *)prev) + prev->size);
        PyObjectArenaAllocator arena;
        PyObject_GetArenaAllocator(&arena);
        arena.free(arena.ctx, chunk, chunk->size);
    }
    else {
        ts->datastack_top = base;
    }
}
#else
/* 3.11: _PyEval_Vector clears and pops the frame after the hook returns,
 * whatever the hook did. Clearing it here would be a double free. */
static inline void fg_dispose_frame(PyThreadState *ts, _PyInterpreterFrame *f)
{
    (void)ts;
    (void)f;
}
#endif

/* ---- weak references and optional attributes (guards.c) ----------------------
 * 3.13 deprecates PyWeakref_GetObject for PyWeakref_GetRef, and renames
 * _PyObject_LookupAttr to PyObject_GetOptionalAttr. */
#if PY_VERSION_HEX >= 0x030D0000
static inline int fg_weakref_is(PyObject *ref, PyObject *obj)
{
    PyObject *target = NULL;
    if (PyWeakref_GetRef(ref, &target) < 0)
        PyErr_Clear();
    Py_XDECREF(target); /* only compared, never used */
    return target == obj;
}
#  define fg_lookup_attr PyObject_GetOptionalAttr
#else
static inline int fg_weakref_is(PyObject *ref, PyObject *obj)
{
    return obj != Py_None && PyWeakref_GetObject(ref) == obj; /* a dead ref reads as None */
}
#  define fg_lookup_attr _PyObject_LookupAttr
#endif

/* ---- dict and type versions (guards.c's read memo) ----------------------------
 * A dict's ma_version_tag takes a fresh value from one process-wide counter when the dict is
 * made and at every mutation (3.13 keeps watcher bits in its low bits: a dict newly watched
 * reads as changed, which only costs a real read), and a type's tp_version_tag changes
 * whenever the type or a base is modified (to 0, "no tag", until a lookup assigns a fresh one;
 * before 3.13 a cleared Py_TPFLAGS_VALID_VERSION_TAG says "no tag").
 * 3.13 adds one hole: an attribute store through an object's inline values bumps neither its
 * materialized __dict__'s version nor, on 3.13.0, the dict's watchers (cpython gh-125608).
 * guard_memo.c's owns_values closes it for the objects a memo rests on. */
static inline uint64_t fg_dict_version(PyObject *d)
{
#  pragma GCC diagnostic push
#  pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return ((PyDictObject *)d)->ma_version_tag;
#  pragma GCC diagnostic pop
}
static inline unsigned int fg_type_version(PyTypeObject *t)
{
#if PY_VERSION_HEX >= 0x030D0000
    return t->tp_version_tag; /* 3.13 drops the flag: 0 is the invalid tag */
#else
    return (t->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ? t->tp_version_tag : 0;
#endif
}

#endif /* FRAMEGRAPH_COMPAT_H */
