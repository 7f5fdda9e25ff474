/* Sequence and optional value files (onnx-data.proto's SequenceProto and
 * OptionalProto, src/onnx/proto/onnx_data.proto) <-> ait_tensor of kind
 * sequence / none, for the test layout's input_K.pb and output_K.pb.
 * Sequences hold tensors (the only kind aitune's runtime has); sequences of
 * sequences, maps and sparse tensors are refused by name. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "onnx/onnx_data.pb-c.h"
#include "onnx/onnx_priv.h"

enum { ELEM_UNDEFINED = 0, ELEM_TENSOR = 1, ELEM_SPARSE = 2, ELEM_SEQUENCE = 3, ELEM_MAP = 4 };

static const char *elem_name(int e) {
  static const char *names[] = {"nothing",  "tensor", "sparse tensor",
                                "sequence", "map",    "optional"};
  return e >= 0 && e <= 5 ? names[e] : "an unknown element type";
}

static ait_status decode_sequence(const Onnx__SequenceProto *sp, const char *dir, ait_dtype elem,
                                  ait_tensor **out) {
  if (sp->n_sequence_values || sp->n_map_values || sp->n_optional_values ||
      sp->n_sparse_tensor_values ||
      (sp->has_elem_type && sp->elem_type != ELEM_TENSOR && sp->elem_type != ELEM_UNDEFINED))
    return ait_err(AIT_E_UNSUPPORTED, "a sequence of %s is not supported (only of tensors)",
                   elem_name(sp->has_elem_type ? sp->elem_type : ELEM_SEQUENCE));
  ait_dtype dt = sp->n_tensor_values ? (ait_dtype)sp->tensor_values[0]->data_type : elem;
  ait_tensor *seq = ait_sequence_new(dt);
  if (!seq) return ait_err(AIT_E_NOMEM, "out of memory");
  for (size_t i = 0; i < sp->n_tensor_values; i++) {
    ait_tensor *t = NULL;
    ait_status st = ait_onnx_tensor_decode(sp->tensor_values[i], dir, 0, &t);
    if (!st && t->dtype != dt)
      st = ait_err(AIT_E_INVALID_MODEL, "sequence item %zu is %s, the first is %s", i,
                   ait_dtype_name(t->dtype), ait_dtype_name(dt));
    if (!st)
      st = ait_sequence_push(seq, t); /* takes t, also on failure */
    else
      ait_tensor_free(t);
    if (st) {
      ait_tensor_free(seq);
      return ait_err_prefix(st, "sequence item %zu", i);
    }
  }
  *out = seq;
  return AIT_OK;
}

static ait_status decode_optional(const Onnx__OptionalProto *op, const char *dir, ait_dtype elem,
                                  ait_tensor **out) {
  int e = op->has_elem_type ? op->elem_type : ELEM_UNDEFINED;
  if (e == ELEM_TENSOR && op->tensor_value)
    return ait_onnx_tensor_decode(op->tensor_value, dir, 0, out);
  if (e == ELEM_SEQUENCE && op->sequence_value)
    return decode_sequence(op->sequence_value, dir, elem, out);
  if (e == ELEM_UNDEFINED || (!op->tensor_value && !op->sequence_value && !op->map_value &&
                              !op->optional_value && !op->sparse_tensor_value)) {
    *out = ait_none_new();
    return *out ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  }
  return ait_err(AIT_E_UNSUPPORTED, "an optional of %s is not supported", elem_name(e));
}

ait_status ait_value_file_read(const char *path, ait_value_type type, ait_dtype elem,
                               ait_tensor **out) {
  if (type == AIT_VT_TENSOR) return ait_tensor_file_read(path, out, NULL);
  void *data;
  size_t size;
  AIT_TRY(ait_read_file(path, &data, &size));
  const ProtobufCMessageDescriptor *d = type == AIT_VT_SEQUENCE ? &onnx__sequence_proto__descriptor
                                                                : &onnx__optional_proto__descriptor;
  const char *what = type == AIT_VT_SEQUENCE ? "SequenceProto" : "OptionalProto";
  ait_status st = AIT_OK;
  if (!ait_onnx_depth_ok(data, (const uint8_t *)data + size, d, 1, AIT_MAX_MESSAGE_DEPTH)) {
    free(data);
    return ait_err(AIT_E_INVALID_MODEL, "%s: messages nest more than %d deep", path,
                   AIT_MAX_MESSAGE_DEPTH);
  }
  ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, size, data);
  free(data);
  if (!m) return ait_err(AIT_E_PARSE, "'%s' is not a serialized ONNX %s", path, what);
  char *dir = ait_path_dir(path);
  if (type == AIT_VT_SEQUENCE)
    st = decode_sequence((const Onnx__SequenceProto *)m, dir, elem, out);
  else
    st = decode_optional((const Onnx__OptionalProto *)m, dir, elem, out);
  free(dir);
  protobuf_c_message_free_unpacked(m, NULL);
  if (st) return ait_err_prefix(st, "%s", path);
  return AIT_OK;
}

/* ---- writing -------------------------------------------------------------- */

/* seq's items as TensorProtos in *tps (pointers into *sc, n of each). */
static ait_status fill_sequence(const ait_tensor *seq, Onnx__SequenceProto *sp,
                                Onnx__TensorProto **tps, Onnx__TensorProto *store,
                                ait_tp_scratch *sc) {
  onnx__sequence_proto__init(sp);
  sp->has_elem_type = 1;
  sp->elem_type = ELEM_TENSOR;
  for (int i = 0; i < seq->n_items; i++) {
    AIT_TRY(ait_onnx_tensor_proto(seq->items[i], "", &store[i], &sc[i]));
    tps[i] = &store[i];
  }
  sp->n_tensor_values = (size_t)seq->n_items;
  sp->tensor_values = tps;
  return AIT_OK;
}

ait_status ait_value_file_write(const char *path, const ait_tensor *t, ait_value_type type,
                                const char *name) {
  if (type == AIT_VT_TENSOR) return ait_tensor_file_write(path, t, name);
  if (type == AIT_VT_SEQUENCE && t->kind != AIT_KIND_SEQUENCE)
    return ait_err(AIT_E_INVALID_ARG, "'%s': a sequence was declared, the value is not one", path);
  const ait_tensor *seq = t->kind == AIT_KIND_SEQUENCE ? t : NULL;
  int n = seq ? seq->n_items : 1;
  Onnx__TensorProto **tps = calloc((size_t)n + 1, sizeof *tps);
  Onnx__TensorProto *store = calloc((size_t)n + 1, sizeof *store);
  ait_tp_scratch *sc = calloc((size_t)n + 1, sizeof *sc);
  ait_status st = tps && store && sc ? AIT_OK : ait_err(AIT_E_NOMEM, "out of memory");
  Onnx__SequenceProto sp;
  Onnx__OptionalProto op;
  onnx__optional_proto__init(&op);
  ProtobufCMessage *top = type == AIT_VT_SEQUENCE ? &sp.base : &op.base;
  if (!st && seq) st = fill_sequence(seq, &sp, tps, store, sc);
  if (!st && type == AIT_VT_OPTIONAL) {
    op.name = (char *)(name ? name : "");
    op.has_elem_type = 1;
    op.elem_type = seq ? ELEM_SEQUENCE : t->kind == AIT_KIND_NONE ? ELEM_UNDEFINED : ELEM_TENSOR;
    if (seq) op.sequence_value = &sp;
    if (t->kind == AIT_KIND_TENSOR) {
      st = ait_onnx_tensor_proto(t, "", &store[0], &sc[0]);
      op.tensor_value = &store[0];
    }
  } else if (!st) {
    sp.name = (char *)(name ? name : "");
  }
  size_t len = st ? 0 : protobuf_c_message_get_packed_size(top);
  uint8_t *buf = st ? NULL : malloc(len ? len : 1);
  if (!st && !buf) st = ait_err(AIT_E_NOMEM, "out of memory");
  if (!st) {
    protobuf_c_message_pack(top, buf);
    st = ait_write_file_atomic(path, buf, len);
  }
  for (int i = 0; sc && i < n; i++)
    ait_tp_scratch_free(&sc[i]);
  free(buf), free(tps), free(store), free(sc);
  return st;
}
