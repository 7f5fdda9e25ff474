#!/usr/bin/env python3
"""Fit the table of gelu512 (src/backends/native/native_math.c) and print it as C.

    python3 scripts/gelu_table.py

0.5 erf(a / sqrt 2) for a >= 0 in 32 pieces of width 1/S: piece j covers
a S in [j - 1/2, j + 1/2) and is a degree-4 polynomial in d = a S - j.
Piece 0 has no constant term (the function is odd, so tiny x give x / 2);
piece 31 is 0.5 exactly (erfc(a / sqrt 2) / 2 < 3e-8 from a = 30.5 / S on).
Each piece is a minimax fit (Lawson's iteration on Chebyshev points), and
its coefficients are rounded to float one at a time from the constant up,
the later ones refitted to what the rounding left. Needs numpy.
"""
import math

import numpy as np

S = float(np.float32(5.6))  # pieces per unit of a, as the kernel's float
PIECES, DEGREE = 32, 4


def target(a):
    return np.array([0.5 * math.erf(t / math.sqrt(2.0)) for t in a])


def minimax(d, f, powers, iters=200):
    """Coefficients of sum c_k d^k over `powers` with the least max error."""
    v = np.stack([d**k for k in powers], 1)
    w = np.ones_like(d)
    for _ in range(iters):
        sw = np.sqrt(w)
        c = np.linalg.lstsq(v * sw[:, None], f * sw, rcond=None)[0]
        r = np.abs(v @ c - f)
        w = w * r
        w /= w.sum()
    return c


def fit_piece(j):
    lo = -0.5 if j else 0.0
    t = np.cos(np.pi * (np.arange(400) + 0.5) / 400)
    d = lo + (0.5 - lo) * (t + 1) / 2
    f = target((j + d) / S)
    coef = np.zeros(DEGREE + 1)
    first = 1 if j == 0 else 0
    for k in range(first, DEGREE + 1):
        c = minimax(d, f - np.polyval(coef[::-1], d), range(k, DEGREE + 1))
        coef[k] = float(np.float32(c[0]))
    dd = np.linspace(lo, 0.5, 20001)
    err = np.max(np.abs(np.polyval(coef[::-1], dd) - target((j + dd) / S)))
    return coef, err


def c_float(v):
    s = "%.9g" % v
    return s + ("f" if ("." in s or "e" in s) else ".0f")


def main():
    table = np.zeros((DEGREE + 1, PIECES))
    worst = 0.0
    for j in range(PIECES - 1):
        table[:, j], err = fit_piece(j)
        worst = max(worst, err)
    table[0, PIECES - 1] = 0.5
    tail = 0.5 * math.erfc(30.5 / S / math.sqrt(2.0))
    print("/* S = %.9g; max error of the pieces %.3g, of the constant tail %.3g */" %
          (S, worst, tail))
    print("static const float gelu_tab[%d][%d] = {" % (DEGREE + 1, PIECES))
    for k in range(DEGREE + 1):
        print("    {" + ", ".join(c_float(v) for v in table[k]) + "},")
    print("};")


if __name__ == "__main__":
    main()
