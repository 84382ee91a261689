"""Where was it released? Two puffs of a tracer on 32 x 32 (unit box) drift
in a wind that bends (0.6 along the first axis, 0.4 sin(pi x) along the
second) and spread (D = 2e-3); 36 sensors on a 6 x 6 lattice read the
concentration at six times (0.1 .. 0.6) with 1 % noise, and the box's sides
let the tracer out. nefi.operators.advection_diffusion is the forward model;
each representation is fitted through it with the noise given and the
prior "nonnegative", over --draws noise draws: relative error of the
release, how far (in cells) each puff's peak lands from the truth, seconds.
Beside them the adjoint (the back-propagated data, scaled to the peak).
Writes runs/from_forward/release.{md,png} (the png: truth, two blobs, the
neural field, the adjoint).

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python python/examples/from_forward_release_study.py [--draws 4]
"""
import argparse
import os
import time

import numpy as np

import fieldkit.nefi as nefi
from from_forward_deblur import write_png

N = 32
T = (np.arange(N) + 0.5) / N
X0, X1 = np.meshgrid(T, T, indexing="ij")
PUFFS = [(0.3, 0.35, 1.0), (0.6, 0.25, 0.7)]  # centre (axis 0, axis 1), height; width 0.04
SIDES = [X0 < 0.45, X0 > 0.45]  # one puff each


def release():
    return sum(h * np.exp(-((X0 - a) ** 2 + (X1 - b) ** 2) / (2 * 0.04 ** 2))
               for a, b, h in PUFFS)


def model():
    sensors = np.zeros((N, N))
    sensors[2::5, 2::5] = 1
    return nefi.operators.advection_diffusion(
        (N, N), [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], velocity=(0.6, 0.4 * np.sin(np.pi * X0)),
        diffusivity=2e-3, boundary="open", sensors=sensors)


def peak_offset(r, gt):
    """The larger, over the two puffs, of the Chebyshev distance in cells
    between the fitted and the true peak on the puff's side."""
    worst = 0
    for side in SIDES:
        found = np.unravel_index(np.argmax(r * side), r.shape)
        true = np.unravel_index(np.argmax(gt * side), gt.shape)
        worst = max(worst, max(abs(int(a) - int(b)) for a, b in zip(found, true)))
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=4)
    ap.add_argument("--out", default="runs/from_forward")
    args = ap.parse_args()
    nefi.set_num_threads(1)
    gt, op = release(), model()
    y0 = op(gt)
    sigma = 0.01 * np.abs(y0).max()
    cases = [("blobs (2)", "nonnegative", dict(representation="blobs", shapes=2)),
             ("blobs (4)", "nonnegative", dict(representation="blobs", shapes=4)),
             ("neural", "nonnegative", dict(representation="neural")),
             ("neural", "nonnegative + sparse", dict(representation="neural")),
             ("hash", "nonnegative", dict(representation="hash")),
             ("grid", "nonnegative + tv", dict(representation="grid"))]
    rows, shown = [], {}
    for name, prior, kw in cases:
        errs, offs, secs = [], [], []
        for d in range(args.draws):
            y = y0 + sigma * np.random.default_rng(d).standard_normal(y0.shape)
            t0 = time.time()
            r = nefi.from_forward(op, y, shape=(N, N), prior=prior, noise=sigma,
                                  **kw).solve()["reconstruction"]
            secs.append(time.time() - t0)
            errs.append(np.linalg.norm(r - gt) / np.linalg.norm(gt))
            offs.append(peak_offset(r, gt))
            if d == 0:
                shown[(name, prior)] = r
        rows.append((name, prior, np.mean(errs), max(offs), np.mean(secs)))
        print(f"{name:10s} {prior:22s} error {rows[-1][2]:.3f}  peak offset <= {max(offs)}  "
              f"{rows[-1][4]:.2f} s", flush=True)
    y = y0 + sigma * np.random.default_rng(0).standard_normal(y0.shape)
    adj = op.adjoint(y)
    adj *= gt.max() / np.abs(adj).max()
    rows.append(("adjoint (scaled)", "-", np.linalg.norm(adj - gt) / np.linalg.norm(gt),
                 peak_offset(adj, gt), 0.0))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "release.md"), "w") as f:
        f.write("| representation | prior | relative error | peak offset (cells) | solve s |\n"
                "|---|---|---|---|---|\n")
        for name, prior, err, off, sec in rows:
            f.write(f"| {name} | {prior} | {err:.3f} | {off} | {sec:.2f} |\n")
    write_png(os.path.join(args.out, "release.png"),
              [gt, shown[("blobs (2)", "nonnegative")], shown[("neural", "nonnegative")], adj])
    print(f"-> {args.out}/release.md, release.png")


if __name__ == "__main__":
    main()
