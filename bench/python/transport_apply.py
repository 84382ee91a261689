"""The advection-diffusion operator's apply and vector-Jacobian product on
the CPU, with the diffusivity map or the velocity as the unknown beside a
release (the control: the same flow, grid and substeps, whose stencils are
built once), on side^2 cells in a swirling flow per cell, Lax-Wendroff, 20
substeps in two intervals. A coefficient's apply builds its stencils for
each field, so its ratio to the release's is what the plan's assembly
costs, comparable across machines. Best of --repeat wall times, in ms.

    OMP_NUM_THREADS=2 PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python bench/python/transport_apply.py [--side 256]
"""
import argparse

import numpy as np

import fieldkit.nefi as nefi
from best_time import best_ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    n = args.side
    c = (np.arange(n) + 0.5) / n - 0.5
    x, z = np.meshgrid(c, c, indexing="ij")
    velocity = (np.sin(3 * z) + 0.2, x - 0.1)
    release = np.exp(-20 * (x * x + z * z))
    D = 1e-4 * (1 + 0.5 * np.sin(7 * x) * np.cos(5 * z))
    tau = 1 / (1.2 * n)  # about the flow's bound: 10 substeps an interval
    times = [10 * tau, 20 * tau]
    ops = nefi.operators
    by_d = ops.advection_diffusion((n, n), times, velocity=velocity, unknown="diffusivity",
                                   release=release)
    by_release = ops.advection_diffusion((n, n), times, velocity=velocity, diffusivity=1e-4)
    by_v = ops.advection_diffusion((n, n), times, unknown="velocity", release=release,
                                   diffusivity=1e-4)
    v = np.stack(velocity)
    g = np.ones((2, n, n))
    rows = [
        ("diffusivity apply", best_ms(lambda: by_d(D), args.repeat)),
        ("diffusivity apply + vjp", best_ms(lambda: by_d.vjp(D, g), args.repeat)),
        ("release apply", best_ms(lambda: by_release(release), args.repeat)),
        ("release apply + vjp", best_ms(lambda: by_release.vjp(release, g), args.repeat)),
        ("velocity apply", best_ms(lambda: by_v(v), args.repeat)),
        ("velocity apply + vjp", best_ms(lambda: by_v.vjp(v, g), args.repeat)),
    ]
    for name, ms in rows:
        print(f"{name:26s} {ms:8.1f} ms")
    for name, a, b in (("diffusivity", 0, 1), ("velocity", 4, 5)):
        print(f"{name} / release apply: {rows[a][1] / rows[2][1]:.2f}x, "
              f"apply + vjp: {rows[b][1] / rows[3][1]:.2f}x")


if __name__ == "__main__":
    main()
