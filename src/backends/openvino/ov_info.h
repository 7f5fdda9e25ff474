/* What the rest of aitune asks about OpenVINO without its headers (they
 * exist only in builds that found them): its version for the fingerprint,
 * and how often a model was compiled (tests prove a load imports). Both
 * answer in stub builds too. */
#ifndef AIT_BACKENDS_OV_INFO_H
#define AIT_BACKENDS_OV_INFO_H

#include <stddef.h>

/* OpenVINO's build number ("2026.4.1-22982-..."), or "none" when the backend
 * is built without it or the library does not load. Loads the library. */
const char *ov_info_version(char *buf, size_t n);
/* Models compiled by ov_core_compile_model in this process so far (imports
 * do not count). */
unsigned long ov_info_compiles(void);
/* The backend counts one compile (backend_openvino.c). */
void ov_info_count_compile(void);

#endif
