"""A smooth field behind three instruments, each representation from_forward
offers for it: the spectral field's smoothness against a grid with and
without a smoothness penalty and the neural field. Ground-truth PSNR, chi
(data RMSE / sigma), steps and solve seconds, the mean over --draws noise
draws (the table in docs/performance.md).

The field (64 x 64 on the unit square): 0.4 + 0.3 u plus three gaussian
bumps (heights 1, 0.6, -0.3, widths 0.12, 0.08, 0.1). The instruments, each
with 1 % noise (of the data's peak), the noise given:
- blur: a gaussian blur of 3 cells (nefi.operators.gaussian_blur);
- ct: 12 parallel-beam views over pi (nefi.operators.radon);
- inpaint: a random tenth of the pixels (nefi.operators.sampling);
- blur3d: a 48 x 48 x 24 volume (0.5 + 0.3 u and one gaussian bump) behind a
  2-cell blur, the grids and the default spectral field only
  (--scenes blur3d; not in the default list).
The data come from the model fitted (the inverse crime), alike for every
representation: the table ranks representations, not models.

Writes runs/from_forward/spectral.{md,png} (the png: truth, then per scene
the grid, the grid + smooth and the spectral field at the default
smoothness).

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \\
        .venv/bin/python python/examples/from_forward_spectral_study.py [--draws 2]
        [--scenes blur,ct] [--no-neural]
"""
import argparse
import os
import time

import numpy as np

import fieldkit.nefi as nefi
from from_forward_deblur import write_png

CASES = [("grid", "unconstrained", dict(representation="grid")),
         ("grid", "smooth", dict(representation="grid")),
         ("spectral s=0", "unconstrained", dict(representation="spectral", smoothness=0)),
         ("spectral s=1", "unconstrained", dict(representation="spectral", smoothness=1)),
         ("spectral s=2 (default)", "unconstrained", dict(representation="spectral")),
         ("spectral s=3", "unconstrained", dict(representation="spectral", smoothness=3)),
         ("spectral s=4", "unconstrained", dict(representation="spectral", smoothness=4)),
         ("spectral 16 modes s=0", "unconstrained",
          dict(representation="spectral", modes=16, smoothness=0)),
         ("spectral s=2", "smooth", dict(representation="spectral")),
         ("neural", "unconstrained", dict(representation="neural"))]


def truth(n):
    c = (np.arange(n) + 0.5) / n
    u, v = np.meshgrid(c, c, indexing="ij")
    bumps = [(1.0, 0.35, 0.6, 0.12), (0.6, 0.7, 0.3, 0.08), (-0.3, 0.7, 0.75, 0.1)]
    return 0.4 + 0.3 * u + sum(a * np.exp(-((u - p) ** 2 + (v - q) ** 2) / (2 * s * s))
                               for a, p, q, s in bumps)


def truth3d(n):
    c = [(np.arange(m) + 0.5) / m for m in (n, n, n // 2)]
    u, v, w = np.meshgrid(*c, indexing="ij")
    return 0.5 + 0.3 * u + np.exp(-((u - 0.4) ** 2 + (v - 0.6) ** 2 + (w - 0.5) ** 2) / 0.03)


def scenes(n):
    """{name: (model, truth)}."""
    mask = (np.random.default_rng(7).random((n, n)) < 0.1).astype(float)
    m3 = n * 3 // 4  # the volume: m3 x m3 x m3 / 2
    return {"blur": (nefi.operators.gaussian_blur((n, n), 3.0), truth(n)),
            "ct": (nefi.operators.radon((n, n), n_views=12), truth(n)),
            "inpaint": (nefi.operators.sampling(mask), truth(n)),
            "blur3d": (nefi.operators.gaussian_blur((m3, m3, m3 // 2), 2.0), truth3d(m3))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=2)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--scenes", default="blur,ct,inpaint")
    ap.add_argument("--no-neural", action="store_true")
    ap.add_argument("--out", default="runs/from_forward")
    args = ap.parse_args()
    nefi.set_num_threads(1)
    n = args.n
    ops = scenes(n)
    rows, shown = [], [truth(n)]
    for scene in args.scenes.split(","):
        op, gt = ops[scene]
        y0 = op(gt)
        sigma = 0.01 * np.abs(y0).max()
        for name, prior, kw in CASES:
            if name == "neural" and args.no_neural:
                continue
            # The volume: the default spectral field against the grids.
            if gt.ndim == 3 and name not in ("grid", "spectral s=2 (default)"):
                continue
            psnrs, chis, steps, secs = [], [], [], []
            for d in range(args.draws):
                y = y0 + sigma * np.random.default_rng(d).standard_normal(y0.shape)
                t0 = time.time()
                r = nefi.from_forward(op, y, shape=gt.shape, prior=prior, noise=sigma,
                                      **kw).solve()
                secs.append(time.time() - t0)
                x = r["reconstruction"]
                psnrs.append(10 * np.log10(np.ptp(gt) ** 2 / np.mean((x - gt) ** 2)))
                chis.append(r["data_fit"]["discrepancy_ratio"])
                steps.append(r["total_steps"])
                if gt.ndim == 2 and d == 0 and (name, prior) in (
                        ("grid", "unconstrained"), ("grid", "smooth"),
                        ("spectral s=2 (default)", "unconstrained")):
                    shown.append(x)
            rows.append((scene, name, prior, np.mean(psnrs), np.mean(chis), np.mean(steps),
                         np.mean(secs)))
            print(f"{scene:8s} {name:24s} {prior:14s} {rows[-1][3]:6.2f} dB  chi "
                  f"{rows[-1][4]:.2f}  {rows[-1][5]:.0f} steps  {rows[-1][6]:.2f} s", flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "spectral.md"), "w") as f:
        shapes = ", ".join(f"{sc} {' x '.join(map(str, ops[sc][1].shape))}"
                           for sc in args.scenes.split(","))
        f.write(f"{shapes}; {args.draws} noise draws\n\n| scene | representation | prior | "
                "PSNR dB | chi | steps | solve s |\n|---|---|---|---|---|---|---|\n")
        for scene, name, prior, p, chi, st, sec in rows:
            f.write(f"| {scene} | {name} | {prior} | {p:.1f} | {chi:.2f} | {st:.0f} | "
                    f"{sec:.2f} |\n")
    write_png(os.path.join(args.out, "spectral.png"), shown)
    print(f"-> {args.out}/spectral.md, spectral.png")


if __name__ == "__main__":
    main()
