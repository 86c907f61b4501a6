/* guard_tensor.h: the tensor check guards.c's TENSOR ops call (guard_tensor.c). */
#ifndef FRAMEGRAPH_GUARD_TENSOR_H
#define FRAMEGRAPH_GUARD_TENSOR_H

#include <Python.h>

/* spec: (type, dtype, device, requires_grad, sizes, strides, dispatch_keys, fast, remember,
 * contiguous), sizes and strides with None where dynamic; contiguous: the strides are the
 * contiguous ones for sizes that are all static and at least 2, so is_contiguous() decides
 * them (fast types only). memo/memo_data: the op's remembered tensor
 * (address, data_ptr), updated here. 1 passes, 0 fails, -1 raised. */
int fg_check_tensor(PyObject *spec, PyObject *t, void **memo, void **memo_data);
/* set_tensor_api(dtype, requires_grad, shape, device, dispatch_keys, stride, data_ptr,
 * is_contiguous), for the module. */
PyObject *fg_set_tensor_api(PyObject *m, PyObject *args);
int fg_tensor_api_ready(void);
/* value (a new reference, or NULL with an error) is expected, by identity or by ==;
 * consumes value. 1, 0, or -1 on error. */
static inline int fg_compare_owned(PyObject *value, PyObject *expected, int identity)
{
    if (value == NULL)
        return -1;
    int r = identity ? value == expected : PyObject_RichCompareBool(value, expected, Py_EQ);
    Py_DECREF(value);
    return r;
}
int fg_tensor_init(void);

#endif /* FRAMEGRAPH_GUARD_TENSOR_H */
