/* Private to src/onnx/: functions that take generated protobuf-c types. */
#ifndef AIT_ONNX_PRIV_H
#define AIT_ONNX_PRIV_H

#include "onnx/onnx.pb-c.h"
#include "onnx/onnx_io.h"

ait_status ait_onnx_tensor_decode(const Onnx__TensorProto *tp, const char *base_dir,
                                  ait_tensor **out);
/* The raw_data bytes of t as a file holds them: t->data itself (*owned =
 * NULL), or for the sub-byte types a packed copy in *owned the caller
 * frees. */
ait_status ait_onnx_raw_data(const ait_tensor *t, uint8_t **data, size_t *len, uint8_t **owned);

#endif
