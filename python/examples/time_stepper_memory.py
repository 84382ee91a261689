"""Peak memory and time of one gradient through a 400-step Fisher-KPP loop
on a 256 x 256 state written with torch: nefi.TimeStepper's block replay
(`blocks`) against autograd through the whole loop (`full`). Run each in
its own process (the peak resident set is per process), and once with
`baseline` (the imports and a field alone):

    for m in baseline blocks full; do PYTHONPATH=python \\
        FIELDKIT_CORE_DIR=build/release/python/fieldkit OMP_NUM_THREADS=1 \\
        .venv/bin/python python/examples/time_stepper_memory.py $m; done
"""
import resource
import sys
import time

import numpy as np
import torch

import fieldkit.nefi as nefi

N, STEPS = 256, 400


def lap(u):
    p = torch.nn.functional.pad(u[None, None], (1, 1, 1, 1), mode="replicate")[0, 0]
    return (p[2:, 1:-1] + p[:-2, 1:-1] + p[1:-1, 2:] + p[1:-1, :-2] - 4 * u) * N * N


def step(u, field, k, dt=2e-6):
    return u + dt * (lap(u) + 20 * u * (1 - u))


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "blocks"
    x = np.random.default_rng(0).random((N, N)) * 0.5
    t = time.perf_counter()
    if mode == "blocks":
        total = nefi.TimeStepper(step, STEPS).vjp(x, np.ones((1, N, N))).sum()
    elif mode == "full":
        f = torch.tensor(x, requires_grad=True)
        u = f
        for k in range(STEPS):
            u = step(u, f, k)
        u.sum().backward()
        total = f.grad.sum().item()
    else:
        total = float(torch.tensor(x).sum())
    mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{mode}: peak {mb:.0f} MB, {time.perf_counter() - t:.2f} s, gradient sum {total:.6g}")


if __name__ == "__main__":
    main()
