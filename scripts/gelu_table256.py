#!/usr/bin/env python3
"""Fit the table of gelu256 (src/backends/native/native_math.c) and print it as C.

    python3 scripts/gelu_table256.py

The AVX2 twin of scripts/gelu_table.py: 0.5 erf(a / sqrt 2) for a >= 0 in
8 pieces of width 1/S (S = 6.5 / 5.6), so that one vpermps picks each
lane's coefficient from one register (AVX2 has no two-table permute);
pieces 0-6 are degree-7 polynomials in d = a S - j, fitted as
gelu_table.py fits its pieces (minimax, coefficients rounded to float one
at a time); piece 7 is 0.5 exactly (erfc(a / sqrt 2) / 2 < 1.1e-8 from
a = 5.6 on). Needs numpy.
"""
import math

import numpy as np

import gelu_table as gt

PIECES, DEGREE = 8, 7
S = float(np.float32((PIECES - 1.5) / 5.6))


def main():
    gt.S, gt.DEGREE = S, DEGREE
    table = np.zeros((DEGREE + 1, PIECES))
    worst = 0.0
    for j in range(PIECES - 1):
        table[:, j], err = gt.fit_piece(j)
        worst = max(worst, err)
    table[0, PIECES - 1] = 0.5
    tail = 0.5 * math.erfc((PIECES - 1.5) / S / math.sqrt(2.0))
    print("/* S = %.9g; max error of the pieces %.3g, of the constant tail %.3g */" %
          (S, worst, tail))
    print("static const float gelu_tab8[%d][%d] = {" % (DEGREE + 1, PIECES))
    for k in range(DEGREE + 1):
        print("    {" + ", ".join(gt.c_float(v) for v in table[k]) + "},")
    print("};")


if __name__ == "__main__":
    main()
