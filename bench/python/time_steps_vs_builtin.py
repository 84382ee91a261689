"""A release's transport written as a TimeStepper of
nefi.advection_diffusion_step (torch, one Python call per step, its gradient
replayed in blocks) beside the built-in operator (C++, no Python per step,
its gradient the exact transpose) on the same problem: side^2 cells, a
swirling flow per cell and a diffusivity, upwind, the same substeps (the
built-in's own count), seen at the end. Both give the same values (checked
here); the ratios say what writing the loop in Python costs. Best of
--repeat wall times, in ms.

    OMP_NUM_THREADS=1 PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \\
        .venv/bin/python bench/python/time_steps_vs_builtin.py [--side 64]
"""
import argparse

import numpy as np
import torch

import fieldkit.nefi as nefi
from best_time import best_ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=64)
    parser.add_argument("--substeps", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n, S = args.side, args.substeps
    nefi.set_num_threads(int(torch.get_num_threads()))
    c = (np.arange(n) + 0.5) / n - 0.5
    x, z = np.meshgrid(c, c, indexing="ij")
    velocity = [np.sin(3 * z) + 0.2, x - 0.1]
    D = 1e-4
    release = np.exp(-20 * (x * x + z * z))
    h = (1 / n, 1 / n)
    bound = nefi.stable_dt(h, velocity=velocity, diffusivity=D, boundary="closed", safety=0.9)
    t = (S - 0.5) * bound  # the built-in's count: ceil(t / bound) = S
    op = nefi.operators.advection_diffusion((n, n), [t], velocity=velocity, diffusivity=D,
                                            courant=0.9, scheme="upwind")
    v = [torch.tensor(a) for a in velocity]
    stepper = nefi.TimeStepper(
        lambda cc, field, k: nefi.advection_diffusion_step(cc, t / S, h, v, D), S)
    want, got = op(release), stepper(release)
    err = float(np.abs(want.reshape(got.shape) - got).max())
    g = np.random.default_rng(0).standard_normal(want.shape)
    rows = [("apply", lambda: op(release), lambda: stepper(release)),
            ("apply + vjp", lambda: (op(release), op.vjp(release, g)),
             lambda: (stepper(release), stepper.vjp(release, g)))]
    print(f"side {n}, {S} substeps, {torch.get_num_threads()} thread(s); the two differ by "
          f"{err:.1e} at most")
    print("| path | built-in ms | TimeStepper ms | ratio |")
    print("|---|---|---|---|")
    for name, built_in, python in rows:
        a, b = best_ms(built_in, args.repeat), best_ms(python, args.repeat)
        print(f"| {name} | {a:.2f} | {b:.2f} | {b / a:.1f}x |")


if __name__ == "__main__":
    main()
