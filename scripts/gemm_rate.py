#!/usr/bin/env python3
"""Matrix-product rates of PyTorch's BLAS on this machine.

It times torch.mm on random float32 and float64 matrices of the shapes the
dense DEQ of `deq bench --only peer` multiplies (a batch of 128 states of
128 units, the 784-pixel encoder) and of one large cube, and prints the best
GFLOP/s of five rounds for each shape and precision. BENCHMARKS.md uses
these rates, the fastest measured on this machine (not a proven peak of
the CPU), to estimate how long the matrix products of one dense training
epoch take at the least.

Usage (one and two BLAS threads):

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 scripts/gemm_rate.py --threads 1
    OPENBLAS_NUM_THREADS=2 /usr/bin/python3 scripts/gemm_rate.py --threads 2

It needs Debian's python3-torch; nothing in the project depends on it.
"""

import argparse
import time

import torch

SHAPES = [((128, 128, 128), 2000), ((128, 784, 128), 500), ((128, 128, 784), 500), ((2048, 2048, 2048), 3)]


def rate(m, k, n, dtype, reps):
    a = torch.rand(m, k, dtype=dtype)
    b = torch.rand(k, n, dtype=dtype)
    c = torch.empty(m, n, dtype=dtype)
    for _ in range(3):
        torch.mm(a, b, out=c)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(reps):
            torch.mm(a, b, out=c)
        best = min(best, (time.perf_counter() - start) / reps)
    return 2 * m * k * n / best / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (set OPENBLAS_NUM_THREADS to match)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for (m, k, n), reps in SHAPES:
        print(f"threads {args.threads}  {m}x{k}x{n}  float32 {rate(m, k, n, torch.float32, reps):6.1f} GFLOP/s  "
              f"float64 {rate(m, k, n, torch.float64, reps):6.1f} GFLOP/s")


if __name__ == "__main__":
    main()
