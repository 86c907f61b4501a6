/* guards.h: what eval_frame.c's module init needs from guards.c. */
#ifndef FRAMEGRAPH_GUARDS_H
#define FRAMEGRAPH_GUARDS_H

#include <Python.h>

/* Adds GuardProgram, GUARD_OPS and set_tensor_api to the module. */
int fg_guards_init(PyObject *m);

#endif /* FRAMEGRAPH_GUARDS_H */
