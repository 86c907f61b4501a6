/* Placeholder until the frame hook lands: an importable, empty extension. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "framegraph._C", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__C(void) { return PyModule_Create(&module); }
