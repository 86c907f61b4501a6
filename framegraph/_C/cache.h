/* cache.h: the per-code guard cache (cache.c), as the hook (eval_frame.c) uses it. */
#ifndef FRAMEGRAPH_CACHE_H
#define FRAMEGRAPH_CACHE_H

#include "compat.h"

typedef struct CacheEntry {
    PyObject_HEAD
    PyObject *check_fn;
    PyObject *code; /* replacement code, or None: run the original code as is */
    struct CacheEntry *next;
} CacheEntry;

/* What our co_extra slot points to: NULL (nothing cached), SKIP, or a PyMem_Raw-allocated
 * ExtraState. The pointer is stable while the code has entries; `head` is mutated in
 * place rather than re-stored, because SetExtra frees the old value. The slot's references
 * are invisible to the GC, so nothing reachable from an entry should lead back to its code. */
typedef struct {
    CacheEntry *head; /* strong */
} ExtraState;

#define SKIP ((ExtraState *)1)
/* Like SKIP, and what the frame calls runs with the hook off (as inside `disable`): a
 * compiled graph's own code. */
#define RUN_EAGERLY ((ExtraState *)2)
/* Whether st is an ExtraState of ours, not NULL or one of the marks above. */
#define FG_HAS_STATE(st) ((uintptr_t)(st) > (uintptr_t)RUN_EAGERLY)

ExtraState *fg_get_extra(PyCodeObject *co);
int fg_set_extra(PyCodeObject *co, ExtraState *st);
/* Add an entry, first; a "run as is" entry (code None) goes behind every compiled one.
 * Steals nothing. */
int fg_add_entry(PyCodeObject *co, PyObject *check_fn, PyObject *code);
/* A new reference to the first entry whose guard passes (moved to the front), or NULL: a miss
 * when no error is set. A guard that raises is reported to the guard error hook first. */
CacheEntry *fg_lookup(PyCodeObject *co, PyObject *f_locals);
/* arg as a code object, or NULL with a TypeError naming fname. */
PyCodeObject *fg_code_arg(PyObject *arg, const char *fname);
/* Adds CacheEntry, set_guard_error_hook and _debug_get_cache_entry_list; takes the extra slot. */
int fg_cache_init(PyObject *m);

#endif /* FRAMEGRAPH_CACHE_H */
