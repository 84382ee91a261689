"""Where was it released? Two puffs of a tracer on a unit box drift in a wind
that bends (0.6 along the first axis, 0.4 sin(pi x) along the second) and
spread (D = 2e-3); 36 sensors on a 6 x 6 lattice read the concentration at
six times (0.1 .. 0.6) with 1 % noise, and the box's sides let the tracer
out. The field is the release on --n x --n cells (32), fitted through
nefi.operators.advection_diffusion with each scheme (upwind, lax_wendroff)
and representation, the noise given and the prior "nonnegative", over
--draws noise draws: relative error of the release, how far (in cells)
each puff's peak lands from the truth, seconds. Beside them the adjoint
(the back-propagated data, scaled to the peak).

The data are simulated on a grid 8 x finer with Lax-Wendroff, each sensor
reading the mean over its cell (--data fine, the default: the model's own
discretisation error is in the data, as it is in a measurement); --data
same simulates them with the model fitted (the inverse crime: a ceiling).
Writes runs/from_forward/release.{md,png} (the png: truth, two blobs and the
neural field under Lax-Wendroff, the adjoint). --convergence instead writes
release_convergence.md: each scheme's prediction on 32 .. 256 cells against
a 1,024 x 1,024 one, at several courant numbers.

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python python/examples/from_forward_release_study.py [--draws 4]
        [--data fine|same] [--convergence]
"""
import argparse
import os
import time

import numpy as np

import fieldkit.nefi as nefi
from from_forward_deblur import write_png

TIMES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
PUFFS = [(0.3, 0.35, 1.0), (0.6, 0.25, 0.7)]  # centre (axis 0, axis 1), height; width 0.04
SENSED = (2.5 + 5 * np.arange(6)) / 32  # the sensors' lattice along each axis


def cells(n):
    t = (np.arange(n) + 0.5) / n
    return np.meshgrid(t, t, indexing="ij")


def sensors(n):
    """The cells of an n x n grid holding the 6 x 6 sensors."""
    mask = np.zeros((n, n))
    at = np.floor(SENSED * n).astype(int)
    mask[np.ix_(at, at)] = 1
    return mask


def release(n):
    x0, x1 = cells(n)
    return sum(h * np.exp(-((x0 - a) ** 2 + (x1 - b) ** 2) / (2 * 0.04 ** 2))
               for a, b, h in PUFFS)


def model(scheme, n, observed=True, courant=0.9):
    x0, _ = cells(n)
    return nefi.operators.advection_diffusion(
        (n, n), TIMES, velocity=(0.6, 0.4 * np.sin(np.pi * x0)), diffusivity=2e-3,
        boundary="open", sensors=sensors(n) if observed else None, courant=courant,
        scheme=scheme)


def convergence(out):
    """Each scheme's full-grid prediction of the true release on 32 .. 256
    cells per axis, block-meaned to 32 x 32, against Lax-Wendroff's on
    1,024 x 1,024 at courant 0.1: relative error per courant number."""
    def block_means(u, m=32):
        f = u.shape[-1] // m
        return u.reshape(u.shape[0], m, f, m, f).mean(axis=(2, 4))
    ref = block_means(model("lax_wendroff", 1024, False, 0.1)(release(1024)))
    lines = ["| scheme | courant | 32 | 64 | 128 | 256 |", "|---|---|---|---|---|---|"]
    for scheme, courants in (("upwind", (0.9,)), ("lax_wendroff", (0.9, 0.5, 0.1))):
        for c in courants:
            errs = [np.linalg.norm(block_means(model(scheme, n, False, c)(release(n))) - ref) /
                    np.linalg.norm(ref) for n in (32, 64, 128, 256)]
            lines.append(f"| {scheme} | {c} | " + " | ".join(f"{e:.4f}" for e in errs) + " |")
            print(lines[-1], flush=True)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "release_convergence.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"-> {out}/release_convergence.md")


def fine_data(n, factor=8):
    """The sensors' readings simulated on a grid `factor` x finer than n: the
    mean of the fine cells inside each sensor's cell."""
    full = model("lax_wendroff", factor * n, False)(release(factor * n))
    return full.reshape(len(TIMES), n, factor, n, factor).mean(axis=(2, 4))[:, sensors(n) > 0]


def peak_offset(r, gt):
    """The larger, over the two puffs, of the Chebyshev distance in cells
    between the fitted and the true peak on the puff's side."""
    x0, _ = cells(gt.shape[0])
    worst = 0
    for side in (x0 < 0.45, x0 > 0.45):  # one puff each
        found = np.unravel_index(np.argmax(r * side), r.shape)
        true = np.unravel_index(np.argmax(gt * side), gt.shape)
        worst = max(worst, max(abs(int(a) - int(b)) for a, b in zip(found, true)))
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=4)
    ap.add_argument("--data", choices=["fine", "same"], default="fine")
    ap.add_argument("--n", type=int, default=32, help="the field's cells per axis")
    ap.add_argument("--out", default="runs/from_forward")
    ap.add_argument("--convergence", action="store_true",
                    help="only the schemes' convergence table (release_convergence.md)")
    args = ap.parse_args()
    nefi.set_num_threads(1)
    if args.convergence:
        return convergence(args.out)
    n = args.n
    gt = release(n)
    cases = [("blobs (2)", "nonnegative", dict(representation="blobs", shapes=2)),
             ("blobs (4)", "nonnegative", dict(representation="blobs", shapes=4)),
             ("neural", "nonnegative", dict(representation="neural")),
             ("hash", "nonnegative", dict(representation="hash")),
             ("grid", "nonnegative + tv", dict(representation="grid"))]
    y_fine = fine_data(n) if args.data == "fine" else None
    rows, shown = [], {}
    for scheme in ("upwind", "lax_wendroff"):
        op = model(scheme, n)
        y0 = y_fine if y_fine is not None else op(gt)
        sigma = 0.01 * np.abs(y0).max()
        gap = np.linalg.norm(op(gt) - y0) / np.linalg.norm(y0)
        print(f"{scheme}: the model's reading of the true release is off the data by "
              f"{gap:.3f} (relative)", flush=True)
        for name, prior, kw in cases:
            errs, offs, secs = [], [], []
            for d in range(args.draws):
                y = y0 + sigma * np.random.default_rng(d).standard_normal(y0.shape)
                t0 = time.time()
                r = nefi.from_forward(op, y, shape=(n, n), prior=prior, noise=sigma,
                                      **kw).solve()["reconstruction"]
                secs.append(time.time() - t0)
                errs.append(np.linalg.norm(r - gt) / np.linalg.norm(gt))
                offs.append(peak_offset(r, gt))
                if d == 0:
                    shown[(scheme, name)] = r
            rows.append((scheme, name, prior, np.mean(errs), max(offs), np.mean(secs)))
            print(f"  {name:10s} {prior:18s} error {rows[-1][3]:.3f}  peak offset <= "
                  f"{max(offs)}  {rows[-1][5]:.2f} s", flush=True)
        y = y0 + sigma * np.random.default_rng(0).standard_normal(y0.shape)
        adj = op.adjoint(y)
        adj *= gt.max() / np.abs(adj).max()
        shown[(scheme, "adjoint")] = adj
        rows.append((scheme, "adjoint (scaled)", "-", np.linalg.norm(adj - gt) /
                     np.linalg.norm(gt), peak_offset(adj, gt), 0.0))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "release.md"), "w") as f:
        f.write(f"data: {args.data}, field {n} x {n}\n\n| scheme | representation | prior | relative error | "
                "peak offset (cells) | solve s |\n|---|---|---|---|---|---|\n")
        for scheme, name, prior, err, off, sec in rows:
            f.write(f"| {scheme} | {name} | {prior} | {err:.3f} | {off} | {sec:.2f} |\n")
    write_png(os.path.join(args.out, "release.png"),
              [gt, shown[("lax_wendroff", "blobs (2)")], shown[("lax_wendroff", "neural")],
               shown[("lax_wendroff", "adjoint")]])
    print(f"-> {args.out}/release.md, release.png")


if __name__ == "__main__":
    main()
