/* Private to src/onnx/: functions that take generated protobuf-c types. */
#ifndef AIT_ONNX_PRIV_H
#define AIT_ONNX_PRIV_H

#include "onnx/onnx.pb-c.h"
#include "onnx/onnx_io.h"

/* Decode a TensorProto (external data relative to base_dir) into a new
 * tensor; one of more than max_bytes bytes in memory (<= 0: the default
 * AIT_DEFAULT_MAX_TENSOR_BYTES) is refused before anything is allocated. */
ait_status ait_onnx_tensor_decode(const Onnx__TensorProto *tp, const char *base_dir,
                                  int64_t max_bytes, ait_tensor **out);
/* The raw_data bytes of t as a file holds them: t->data itself (*owned =
 * NULL), or for the sub-byte types a packed copy in *owned the caller
 * frees. */
/* Whether the message at [p, end) of type d nests at most max_depth deep
 * (depth: its own level, 1 at the top); scanned on the wire before
 * protobuf-c's recursive unpack sees it. */
bool ait_onnx_depth_ok(const uint8_t *p, const uint8_t *end, const ProtobufCMessageDescriptor *d,
                       int depth, int max_depth);
ait_status ait_onnx_raw_data(const ait_tensor *t, uint8_t **data, size_t *len, uint8_t **owned);

/* A TensorProto (raw data, or string_data) describing t, whose pointers
 * reach into t and into *sc: valid while both live; ait_tp_scratch_free
 * releases sc (also after a failure). */
typedef struct ait_tp_scratch {
  int64_t dims[AIT_MAX_RANK];
  ProtobufCBinaryData *strs;
  uint8_t *packed;
} ait_tp_scratch;
ait_status ait_onnx_tensor_proto(const ait_tensor *t, const char *name, Onnx__TensorProto *tp,
                                 ait_tp_scratch *sc);
void ait_tp_scratch_free(ait_tp_scratch *sc);

#endif
