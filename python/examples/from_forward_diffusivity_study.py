"""A diffusivity map from a tracer's spreading: the known release (16 puffs
over a closed box) spreads for 0.4 time units through D = 2e-3 with a disc
of 8e-3 (centre (0.6, 0.4), radius 0.2), seen over the whole n x n grid at
t = 0.1, 0.2, 0.4 with 1 % noise; each row a from_forward fit of the map
through nefi.operators.advection_diffusion(..., unknown="diffusivity"):
PSNR over D's range, the disc's and the rest's mean, chi, steps and
seconds (the table in docs/performance.md). The last row shows what a
prior without an upper bound costs: the start's search of constants tries
diffusivities up to 1e4, whose explicit steps are many.

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \\
        .venv/bin/python python/examples/from_forward_diffusivity_study.py [--n 32]
"""
import argparse
import time

import numpy as np

import fieldkit.nefi as nefi

ROWS = [("grid", "bounded(0, 0.02) + tv"), ("grid", "bounded(0, 0.02) + smooth"),
        ("grid", "bounded(0, 0.02)"), ("neural", "bounded(0, 0.02)"),
        ("grid", "positive + tv")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=32)
    n = ap.parse_args().n
    nefi.set_num_threads(1)
    c = (np.arange(n) + 0.5) / n
    x, y = np.meshgrid(c, c, indexing="ij")
    disc = ((x - 0.6) ** 2 + (y - 0.4) ** 2) < 0.2 ** 2
    D = 2e-3 + 6e-3 * disc
    release = sum(np.exp(-((x - a) ** 2 + (y - b) ** 2) / (2 * 0.03 ** 2))
                  for a in np.linspace(0.15, 0.85, 4) for b in np.linspace(0.15, 0.85, 4))
    op = nefi.operators.advection_diffusion((n, n), [0.1, 0.2, 0.4], unknown="diffusivity",
                                            release=release)
    y0 = op(D)
    sigma = 0.01 * np.abs(y0).max()
    data = y0 + sigma * np.random.default_rng(0).standard_normal(y0.shape)
    print("| representation | prior | PSNR dB | disc mean | rest mean | chi | steps | s |")
    print("|---|---|---|---|---|---|---|---|")
    for rep, prior in ROWS:
        t = time.perf_counter()
        r = nefi.from_forward(op, data, prior=prior, representation=rep, noise=sigma).solve()
        s = time.perf_counter() - t
        got = r["reconstruction"]
        psnr = 10 * np.log10(np.ptp(D) ** 2 / np.mean((got - D) ** 2))
        print(f"| {rep} | {prior} | {psnr:.1f} | {got[disc].mean():.4f} | "
              f"{got[~disc].mean():.4f} | {r['data_fit']['discrepancy_ratio']:.2f} | "
              f"{r['total_steps']} | {s:.1f} |", flush=True)


if __name__ == "__main__":
    main()
