/* What can change a tuning decision, as text and as a digest: CPU model and
 * the ISA features kernels use, cores, GPUs (name, compute capability), CUDA
 * and NVIDIA driver versions, library versions, aitune's version (see
 * docs/hardware.md). A tuned artifact or cache entry from another fingerprint
 * is not reused. The public ait_hw_fingerprint() returns the same text. */
#ifndef AIT_HW_FINGERPRINT_H
#define AIT_HW_FINGERPRINT_H

#include <stddef.h>

/* Human-readable fingerprint ("cpu=...;features=...;cores=2;aitune=0.1.0;...")
 * into buf; returns buf. Computed once per process. */
const char *ait_fingerprint_text(char *buf, size_t n);
/* SHA-256 of the text, hex (65 bytes with NUL). */
const char *ait_fingerprint_digest(char *hex65);
/* Explain how two fingerprint texts differ, key by key ("cpu=A -> cpu=B;
 * (absent) -> gpus=..."), into buf; "no difference" when none. */
const char *ait_fingerprint_diff(const char *a, const char *b, char *buf, size_t n);

/* SHA-256 helpers (OpenSSL's libcrypto). hex65 receives 64 hex chars + NUL. */
void ait_sha256_hex(const void *data, size_t len, char *hex65);
/* 0 on success; -1 with the last error naming path and why (a FIFO or a
 * folder is refused, not read: it goes through ait_open_regular). */
int ait_sha256_file(const char *path, char *hex65);

#endif
