/* Host-side preparation of a strided copy (cuk_strided_copy, cuda_eltwise.cu),
 * plain C without CUDA headers so that tests check it on the CPU.
 *
 * A strided copy writes out[i] = in[base + sum(coord_k * st[k])] over the
 * contiguous output of dims[0..rank) (adjacent dims already merged by
 * cu_emit_copy). Most copies keep the innermost axis (swin_t's window
 * partitions and rolls, slices of the channel axis): then the innermost run
 * is whole units of 16, 8 or 4 bytes, and copying those units needs 8, 4
 * or 2 times fewer threads and index computations, which dominate the
 * copy of 2-byte elements. */
#ifndef AIT_BACKENDS_CUDA_COPY_H
#define AIT_BACKENDS_CUDA_COPY_H

#include <stdbool.h>
#include <stdint.h>

/* Widen the element of a strided copy to the largest unit V of 16, 8 or 4
 * bytes (more than esize) for which the innermost axis is contiguous (stride
 * 1) and a whole number of units long, every other stride and the base are
 * whole units and both pointers are V-aligned: dims, strides, base and n
 * are rescaled to units. Returns the new element size (esize when nothing
 * fits; the copy is then unchanged). */
static inline int cuk_copy_widen(int esize, int rank, int64_t *n, int64_t *base, int64_t *dims,
                                 int64_t *st, uintptr_t in, uintptr_t out) {
  if (rank < 1 || esize < 1) return esize;
  int r = rank - 1;
  for (int V = 16; V > esize && V >= 4; V /= 2) {
    int64_t k = V / esize;
    if (V % esize || st[r] != 1 || dims[r] % k || *base % k || (in | out) % (uintptr_t)V) continue;
    bool ok = true;
    for (int d = 0; d < r && ok; d++)
      ok = st[d] % k == 0;
    if (!ok) continue;
    dims[r] /= k;
    for (int d = 0; d < r; d++)
      st[d] /= k;
    *base /= k;
    *n /= k;
    return V;
  }
  return esize;
}

/* Every offset of the copy (and n) fits in a signed 32-bit index, so the
 * kernel's coordinate arithmetic can be 32-bit (64-bit division is several
 * times slower on the GPU). */
static inline bool cuk_copy_fits32(int rank, int64_t n, int64_t base, const int64_t *dims,
                                   const int64_t *st) {
  const int64_t lim = INT32_MAX;
  if (n > lim || base > lim || base < -lim) return false;
  int64_t hi = base, lo = base;
  for (int d = 0; d < rank; d++) {
    if (dims[d] > lim || st[d] > lim || st[d] < -lim) return false;
    int64_t span = (dims[d] - 1) * st[d];
    if (span > 0)
      hi += span;
    else
      lo += span;
    if (hi > lim || lo < -lim) return false;
  }
  return lo >= 0;
}

#endif
