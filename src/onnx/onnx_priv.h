/* Private to src/onnx/: functions that take generated protobuf-c types. */
#ifndef AIT_ONNX_PRIV_H
#define AIT_ONNX_PRIV_H

#include "onnx/onnx.pb-c.h"
#include "onnx/onnx_io.h"

ait_status ait_onnx_tensor_decode(const Onnx__TensorProto *tp, const char *base_dir,
                                  ait_tensor **out);

#endif
