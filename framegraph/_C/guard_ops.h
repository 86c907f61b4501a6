/* guard_ops.h: the guard program's ops and state, shared by its evaluator (guards.c) and its
 * memos (guard_memo.c). */
#ifndef FRAMEGRAPH_GUARD_OPS_H
#define FRAMEGRAPH_GUARD_OPS_H

#include "compat.h"

#include <stdint.h>

#define OPS(X)                                                                              \
    X(LOCAL) X(GLOBAL) X(ATTR) X(ITEM) X(TYPE) X(CALL)                        /* reads */   \
    X(TYPE_IS) X(IS) X(ID) X(EQUALS) X(FLOAT) X(LEN) X(FALSY) X(DICT_KEYS)    /* checks */  \
    X(NOT_IN_DICT) X(HASATTR) X(ALIAS) X(DISTINCT) X(TENSOR) X(CALLS_ARE) X(PY)             \
    X(SKIP)                                                                   /* control */
#define AS_ENUM(name) OP_##name,
enum { OPS(AS_ENUM) N_OPS };
#undef AS_ENUM

/* What a memo rests on (guard_memo.c): nothing yet, a dict's version, an object's type and
 * instance dict, a type's version tags, an object's type, a function's field, or the identity
 * of an immutable input alone. */
enum { M_NONE, M_DICT, M_OBJ, M_TYPE, M_CLASS, M_FIELD, M_IDENTITY };

typedef struct Witness Witness;

/* A SKIP op's state: the subtree of ops it may jump over, and the witnesses that prove them
 * unchanged since they last all passed. */
typedef struct {
    Py_ssize_t end;    /* the first op after the subtree */
    PyObject *root;    /* borrowed: the subtree root's value when armed, only compared */
    Witness *w;
    Py_ssize_t n, cap;
    Py_ssize_t root_at; /* the witness on the root's own dict or __dict__ */
    Py_ssize_t blocked; /* why the last arming failed: the op not covered, or -1 (no root witness) */
    PyObject **held;    /* strong: code objects and immutable tuples read from functions' fields */
    Py_ssize_t n_held, cap_held;
    int armed;
    int failures;      /* validations or armings that failed since the last jump */
    int countdown;     /* runs to wait before arming again */
} Skip;

typedef struct {
    int code, dst, src;
    PyObject *arg;
    int *regs; /* DISTINCT: the registers that must hold distinct objects; SKIP: the registers
                * the subtree writes that ops after it read */
    Py_ssize_t n_regs;
    void *memo;        /* TENSOR: address of the last tensor that passed every read */
    void *memo_data;   /* ... and its data_ptr() then */
    PyObject **seen;   /* DISTINCT: the objects of the last pass (only compared) */
    Skip *skip;        /* SKIP */
    /* The read and check memos (guard_memo.c). Borrowed and never followed before they are
     * validated against live objects. */
    PyObject *m_in, *m_dict, *m_out;
    PyTypeObject *m_type;
    unsigned int m_tag;
    int m_kind;
    uint64_t m_version; /* a dict's version; for M_TYPE, the version tag of m_in itself */
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

/* ---- guard_memo.c ---- */
PyObject *fg_read_item(PyObject *base, PyObject *key);
/* A read through its memo: the remembered value while the memo holds, else a real read,
 * remembered when it can be. New reference, or NULL with an error set. */
PyObject *fg_memo_item(Op *op, PyObject *base);
PyObject *fg_memo_attr(Op *op, PyObject *x);
PyObject *fg_memo_type(Op *op, PyObject *x);
/* Checks whose answer a memo covers: 1 when it holds for input x (the check passes again). */
int fg_check_remembered(GuardProgram *p, Op *op, PyObject *x);
/* After a check ran on x: remember it (ok == 1) or forget it. */
void fg_check_record(GuardProgram *p, Op *op, PyObject *x, int ok);
static inline int fg_check_remembers(int code)
{
    return code == OP_EQUALS || code == OP_FLOAT || code == OP_FALSY || code == OP_LEN ||
           code == OP_DICT_KEYS || code == OP_NOT_IN_DICT || code == OP_HASATTR;
}
/* SKIP: 1 when the subtree was jumped over (its exported registers are set), 0 when it must
 * run, 2 when it must run and should be armed when it has all passed. */
int fg_skip_enter(GuardProgram *p, Op *op, PyObject **regs);
/* The subtree of SKIP op `index` has just all passed: arm it if every op in it is covered. */
void fg_skip_arm(GuardProgram *p, Py_ssize_t index, PyObject **regs);
void fg_skip_free(Skip *skip);
int fg_skip_traverse(Skip *skip, visitproc visit, void *arg);
int fg_memo_init(void);

#endif /* FRAMEGRAPH_GUARD_OPS_H */
