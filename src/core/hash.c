/* FNV-1a and the saved-state checksum (see hash.h). */
#include "core/hash.h"

#include <string.h>

uint64_t ait_fnv1a64(uint64_t h, const void *data, size_t n) {
  const uint8_t *p = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * AIT_FNV_PRIME;
  return h;
}

uint64_t ait_checksum64(const void *data, size_t n) {
  const uint8_t *p = data;
  uint64_t h = AIT_FNV_OFFSET, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, p + i, 8);
    h = (h ^ w) * AIT_FNV_PRIME;
  }
  return ait_fnv1a64(h, p + i, n - i);
}
