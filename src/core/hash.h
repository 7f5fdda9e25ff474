/* The library's one non-cryptographic hash (FNV-1a, 64 bits) and the
 * checksum built on it. SHA-256 (hw/fingerprint.h) is for identities of
 * files; these are for hash tables and for catching damaged bytes. */
#ifndef AIT_CORE_HASH_H
#define AIT_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define AIT_FNV_OFFSET 1469598103934665603ull
#define AIT_FNV_PRIME 1099511628211ull

/* FNV-1a of n bytes, continuing from h (AIT_FNV_OFFSET to start). */
uint64_t ait_fnv1a64(uint64_t h, const void *data, size_t n);
/* FNV-1a over 8-byte little-endian words, then the tail bytes: the
 * checksum of saved state (backends/common/state_io.h), fast enough for
 * hundreds of megabytes of weights. */
uint64_t ait_checksum64(const void *data, size_t n);

#endif
