/* The options of backend `openvino`, shared by the real backend
 * (backend_openvino.c) and its stub (backend_openvino_stub.c), so a
 * configuration such as "openvino:hint=throughput" parses the same in a
 * build without OpenVINO. Included once by each. */
#ifndef AIT_BACKENDS_OV_OPTIONS_H
#define AIT_BACKENDS_OV_OPTIONS_H

#include "backends/backend.h"

static const ait_option_def ov_options[] = {
    {"threads", AIT_OPT_INT, "auto", "1..256",
     "OpenVINO's inference threads (auto: the cores this process may use)"},
    {"precision", AIT_OPT_ENUM, "f32", "f32|bf16|f16",
     "inference precision hint: bf16 where the CPU has AVX512-BF16 or AMX-BF16, f16 where it has "
     "AVX512-FP16 (judged as bf16 / fp16)"},
    {"hint", AIT_OPT_ENUM, "latency", "latency|throughput",
     "PERFORMANCE_HINT: latency (one stream with every thread) or throughput (several streams; "
     "one request at a time then uses only one stream's threads)"},
    {"streams", AIT_OPT_INT, "auto", "1..64", "NUM_STREAMS (auto: what the hint picks)"},
    {"pinning", AIT_OPT_ENUM, "auto", "auto|on|off",
     "ENABLE_CPU_PINNING: auto leaves it to OpenVINO (on Linux it pins its worker threads, not "
     "the caller's), as OpenVINO alone runs"},
    {"dynamic", AIT_OPT_BOOL, "off", NULL,
     "on: compile once with the model's symbolic dimensions left dynamic; off: one compiled model "
     "per input shape, reshaped to static shapes"},
};

#endif
