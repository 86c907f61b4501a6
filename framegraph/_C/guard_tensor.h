/* guard_tensor.h: the tensor check guards.c's TENSOR ops call (guard_tensor.c). */
#ifndef FRAMEGRAPH_GUARD_TENSOR_H
#define FRAMEGRAPH_GUARD_TENSOR_H

#include <Python.h>

/* spec: (type, dtype, device, requires_grad, sizes, strides, dispatch_keys, fast, remember,
 * contiguous, shim_facts), sizes and strides with None where dynamic; contiguous: the strides
 * are the contiguous ones for sizes that are all static and at least 2, so is_contiguous()
 * decides them (fast types only); shim_facts: None, or (scalar type number, sizes, strides,
 * device type number, device index) for the C shim, sizes and strides packed as native int64
 * with -1 where dynamic, the device numbers None where the shim's are not known.
 * memo/memo_data: the op's remembered tensor
 * (address, data_ptr), updated here. 1 passes, 0 fails, -1 raised. */
int fg_check_tensor(PyObject *spec, PyObject *t, void **memo, void **memo_data);
/* set_tensor_api(dtype, requires_grad, shape, device, dispatch_keys, stride, data_ptr,
 * is_contiguous), for the module. */
PyObject *fg_set_tensor_api(PyObject *m, PyObject *args);
int fg_tensor_api_ready(void);
/* set_tensor_shim(TensorBase._cdata, then the addresses of torch's aoti_torch_get_dtype,
 * _get_dim, _get_sizes, _get_strides, _get_data_ptr, _get_device_type and _get_device_index). */
PyObject *fg_set_tensor_shim(PyObject *m, PyObject *args);
/* tensor_shim_numbers(t): (scalar type, device type, device index) as the shim reports them
 * for t, or None. */
PyObject *fg_tensor_shim_numbers(PyObject *m, PyObject *t);
/* 1 when spec has the shape fg_check_tensor reads. */
int fg_tensor_spec_ok(PyObject *spec);
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
