/* FusedConvNhwc's stems straight from the graph's NCHW input: a window
 * conv of 1-4 input channels (an image's 3) into at most 64 outputs
 * (MobileNetV3's 16, MnasNet's 32), kernel up to 7x7, any stride and
 * padding, no dilation. Per output row the kernel rows' input rows are
 * copied, zero-padded, into a small buffer (plain row copies: a plane's
 * row is contiguous in NCHW), and tiles of pixels x output vectors run on
 * it with every tap a broadcast: no padded NHWC copy of the whole image
 * (its scalar reorder cost a third of the stem), no implicit-GEMM panels
 * (16 outputs were one AVX-512 vector: the panel set-up outweighed the
 * multiply-adds), and the activation past the clamp (HardSwish) in
 * registers. native_nhwc_stem3_tmpl.h, at AVX2 (native_nhwc_stem3256.c)
 * and AVX-512 (native_nhwc_stem3512.c). */
#ifndef AIT_NATIVE_NHWC_STEM3_H
#define AIT_NATIVE_NHWC_STEM3_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/native/native.h"

/* Whether c runs on the stem rows at that level (c->post: applied there). */
bool nat_nhwc256_stem3_fits(const nat_nhwc *c);
bool nat_nhwc512_stem3_fits(const nat_nhwc *c);
/* Output rows [r0, r1) of N*OH (row r at c->y + (r - c->y_r0) OW M). */
void nat_nhwc256_stem3(const nat_nhwc *c, int64_t r0, int64_t r1);
void nat_nhwc512_stem3(const nat_nhwc *c, int64_t r0, int64_t r1);

#endif
