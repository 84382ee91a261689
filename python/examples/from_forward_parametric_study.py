"""A few compact objects, each representation from_forward offers: the
ground-truth PSNR, chi (data RMSE / sigma), the steps run and the solve
seconds of each (the table in docs/performance.md). Python models, so each
step calls back into Python.

- sources: two gaussian sources (peaks 1 and 0.6, widths 2 and 1.5 cells)
  on a zero background of 32 x 32 behind a separable blur of 3 cells (a
  Python matrix model with its adjoint), 0.1 % noise, budget 3000;
- inclusions: two ellipses (+1 and +0.6 on 0.2) on 32 x 32 observed at a
  random sixth of the pixels, 1 % noise, budget default; "within 0.1" is
  the share of cells within 0.1 of the truth (PSNR mostly counts the few
  cells an edge crosses).
- lobed: a three-lobed (+1, radius 0.42 (1 + 0.3 cos 3 theta)) and a
  five-lobed (+0.6, radius 0.3 (1 + 0.2 cos 5 theta)) inclusion on 0.2, 40 x
  40, observed at a random sixth of the pixels (passed as the mask, so chi
  and the discrepancy stop count only those), 1 % noise, budget default.

- polygonal: a square (+1, side 0.7, turned 0.3 rad) and a triangle (+0.6)
  on 0.2, 40 x 40, at a random sixth of the pixels (the mask given), 1 %
  noise; polygonal_blur: the same behind a 1.5-cell separable blur.
- mixed: a bright (+0.8) and a dark (-0.4) ellipse on 0.5, 40 x 40, at a
  random sixth of the pixels (the mask given), 1 % noise.
- strata: three layers (0.3, 1.0, 0.6 down the first axis) meeting at two
  bent interfaces (-0.6 + 0.12 cos(0.8 pi x + 0.3) and 0.05 + 0.1 sin(2 pi
  x / 1.5)), 48 x 48, at a random sixth of the pixels (the mask given), 1 %
  noise; strata_blur: the same behind a 2-cell separable blur.
- strata_inclusion, strata_inclusion_blur: those strata with an elliptic
  inclusion of 1.6 (centre z 0.55, x -0.25, half axes 0.2 and 0.3) in the
  lowest layer.

`--scenes lobed` (comma-separated) runs some of them.

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \\
        .venv/bin/python python/examples/from_forward_parametric_study.py
"""
import argparse
import time

import numpy as np

import fieldkit.nefi as nefi


def psnr(x, gt):
    return 10 * np.log10(np.ptp(gt) ** 2 / np.mean((x - gt) ** 2))


def sources(n=32):
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 3.0) ** 2)
    b /= b.sum(1, keepdims=True)
    gt = sum(a * np.exp(-0.5 * ((i[:, None] - r) ** 2 + (i[None, :] - c) ** 2) / s ** 2)
             for a, (r, c), s in zip([1.0, 0.6], [(9.3, 20.6), (21.8, 11.2)], [2.0, 1.5]))
    y = b @ gt @ b.T + 0.001 * np.random.default_rng(1).standard_normal((n, n))
    return gt, dict(forward=lambda x: b @ x @ b.T, measurement=y,
                    adjoint=lambda g: b.T @ g @ b, noise=0.001, budget="3000",
                    weight=np.ones((n, n)))


def inclusions(n=32):
    c = (2 * np.arange(n) + 1) / n - 1
    x, y = np.meshgrid(c, c, indexing="ij")
    xr = np.cos(0.5) * (x - 0.3) + np.sin(0.5) * (y + 0.2)
    yr = -np.sin(0.5) * (x - 0.3) + np.cos(0.5) * (y + 0.2)
    gt = (0.2 + 1.0 * ((xr / 0.45) ** 2 + (yr / 0.25) ** 2 < 1)
          + 0.6 * (((x + 0.5) / 0.2) ** 2 + ((y - 0.5) / 0.3) ** 2 < 1))
    mask = (np.random.default_rng(5).random((n, n)) < 1 / 6).astype(float)
    data = gt + 0.01 * np.random.default_rng(2).standard_normal((n, n))
    return gt, dict(forward=lambda v: v * mask, measurement=data * mask,
                    adjoint=lambda g: g * mask, noise=0.01, weight=mask)


def lobed(n=40):
    c = (2 * np.arange(n) + 1) / n - 1
    x, y = np.meshgrid(c, c, indexing="ij")

    def inside(cx, cy, r, a, k, phase):
        dx, dy = x - cx, y - cy
        return np.hypot(dx, dy) < r * (1 + a * np.cos(k * (np.arctan2(dy, dx) - phase)))

    gt = 0.2 + 1.0 * inside(0.25, -0.3, 0.42, 0.3, 3, 0.4) + 0.6 * inside(-0.5, 0.45, 0.3, 0.2, 5, 0)
    mask = (np.random.default_rng(5).random((n, n)) < 1 / 6).astype(float)
    data = gt + 0.01 * np.random.default_rng(2).standard_normal((n, n))
    return gt, dict(forward=lambda v: v * mask, measurement=data * mask, mask=mask,
                    adjoint=lambda g: g * mask, noise=0.01, weight=mask)


def polygonal(n=40, sparse=True):
    c = (2 * np.arange(n) + 1) / n - 1
    x, y = np.meshgrid(c, c, indexing="ij")

    def turned(cx, cy, t):
        return (np.cos(t) * (x - cx) + np.sin(t) * (y - cy),
                -np.sin(t) * (x - cx) + np.cos(t) * (y - cy))

    u, v = turned(0.3, -0.25, 0.3)
    square = (np.abs(u) < 0.35) & (np.abs(v) < 0.35)
    u, v = turned(-0.45, 0.4, -0.2)
    triangle = (v > -0.2) & (v < 0.35 - 1.6 * np.abs(u))
    gt = 0.2 + 1.0 * square + 0.6 * triangle
    if sparse:
        mask = (np.random.default_rng(5).random((n, n)) < 1 / 6).astype(float)
        data = gt + 0.01 * np.random.default_rng(2).standard_normal((n, n))
        return gt, dict(forward=lambda v: v * mask, measurement=data * mask, mask=mask,
                        adjoint=lambda g: g * mask, noise=0.01, weight=mask)
    k = np.arange(n)
    b = np.exp(-0.5 * ((k[:, None] - k[None, :]) / 1.5) ** 2)
    b /= b.sum(1, keepdims=True)
    y = b @ gt @ b.T + 0.01 * np.random.default_rng(2).standard_normal((n, n))
    return gt, dict(forward=lambda v: b @ v @ b.T, measurement=y, adjoint=lambda g: b.T @ g @ b,
                    noise=0.01, weight=np.ones((n, n)))


def strata(n=48, sparse=True):
    # Three layers down axis 0 (0.3, 1.0, 0.6) meeting at two bent
    # interfaces away from the layered field's even start (-1/3, 1/3).
    c = (2 * np.arange(n) + 1) / n - 1
    z, x = np.meshgrid(c, c, indexing="ij")
    z1 = -0.6 + 0.12 * np.cos(np.pi * 0.8 * x + 0.3)
    z2 = 0.05 + 0.1 * np.sin(2 * np.pi * x / 1.5)
    gt = np.where(z < z1, 0.3, np.where(z < z2, 1.0, 0.6))
    if sparse:
        mask = (np.random.default_rng(5).random((n, n)) < 1 / 6).astype(float)
        data = gt + 0.01 * np.random.default_rng(2).standard_normal((n, n))
        return gt, dict(forward=lambda v: v * mask, measurement=data * mask, mask=mask,
                        adjoint=lambda g: g * mask, noise=0.01, weight=mask)
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 2.0) ** 2)
    b /= b.sum(1, keepdims=True)
    y = b @ gt @ b.T + 0.01 * np.random.default_rng(3).standard_normal((n, n))
    return gt, dict(forward=lambda v: b @ v @ b.T, measurement=y, adjoint=lambda g: b.T @ g @ b,
                    noise=0.01, weight=np.ones((n, n)))


def strata_inclusion(n=48, sparse=True):
    gt, kw = strata(n, sparse)
    c = (2 * np.arange(n) + 1) / n - 1
    z, x = np.meshgrid(c, c, indexing="ij")
    gt = np.where(((z - 0.55) / 0.2) ** 2 + ((x + 0.25) / 0.3) ** 2 < 1, 1.6, gt)
    if sparse:
        data = gt + 0.01 * np.random.default_rng(2).standard_normal((n, n))
        return gt, dict(kw, measurement=data * kw["mask"])
    y = kw["forward"](gt) + 0.01 * np.random.default_rng(3).standard_normal((n, n))
    return gt, dict(kw, measurement=y)


def mixed(n=40):
    c = (2 * np.arange(n) + 1) / n - 1
    x, y = np.meshgrid(c, c, indexing="ij")
    gt = (0.5 + 0.8 * (((x - 0.35) / 0.3) ** 2 + ((y + 0.3) / 0.2) ** 2 < 1)
          - 0.4 * (((x + 0.4) / 0.25) ** 2 + ((y - 0.35) / 0.3) ** 2 < 1))
    mask = (np.random.default_rng(5).random((n, n)) < 1 / 6).astype(float)
    data = gt + 0.01 * np.random.default_rng(2).standard_normal((n, n))
    return gt, dict(forward=lambda v: v * mask, measurement=data * mask, mask=mask,
                    adjoint=lambda g: g * mask, noise=0.01, weight=mask)


# Per scene: its maker and the rows (representation, its options) before
# the networks and the grid.
SCENES = {"sources": (sources, [("blobs", {"shapes": k}) for k in (2, 4, 8)]),
          "inclusions": (inclusions, [("ellipses", {"shapes": k}) for k in (2, 4, 8)]),
          "lobed": (lobed, [("stars", {"shapes": 2}), ("stars", {"shapes": 4}),
                            ("ellipses", {"shapes": 2})]),
          "polygonal": (polygonal, [("polygons", {"shapes": 2}),
                                    ("polygons", {"shapes": 2, "vertices": 4}),
                                    ("stars", {"shapes": 2}), ("ellipses", {"shapes": 2})]),
          "polygonal_blur": (lambda: polygonal(sparse=False), [
              ("polygons", {"shapes": 2}), ("polygons", {"shapes": 2, "vertices": 4}),
              ("stars", {"shapes": 2}), ("ellipses", {"shapes": 2})]),
          "mixed": (mixed, [("ellipses", {"shapes": 2}), ("ellipses", {"shapes": 4}),
                            ("stars", {"shapes": 2})]),
          "strata": (strata, [("layers", {}), ("layers", {"harmonics": 8}),
                              ("layers", {"layers": 4}), ("lowrank", {})]),
          "strata_blur": (lambda: strata(sparse=False),
                          [("layers", {}), ("layers", {"harmonics": 8}), ("lowrank", {})]),
          "strata_inclusion": (strata_inclusion, [
              ("layers+ellipses", {"shapes": 1}), ("layers+ellipses", {"shapes": 2}),
              ("layers+blobs", {"shapes": 1}), ("layers", {}), ("ellipses", {"shapes": 4})]),
          "strata_inclusion_blur": (lambda: strata_inclusion(sparse=False), [
              ("layers+ellipses", {"shapes": 1}), ("layers+ellipses", {"shapes": 2}),
              ("layers+blobs", {"shapes": 1}), ("layers", {}), ("ellipses", {"shapes": 4})])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenes", default=",".join(SCENES))
    names = parser.parse_args().scenes.split(",")
    nefi.set_num_threads(1)
    print("| scene | representation | PSNR dB | within 0.1 | chi | steps | solve s |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        make, rows = SCENES[name]
        gt, kw = make()
        for rep, options in rows + [("neural", {}), ("hash", {}), ("grid", {})]:
            extra = dict(options)
            if "mask" in kw:
                extra["mask"] = kw["mask"]
            p = nefi.from_forward(kw["forward"], kw["measurement"], adjoint=kw["adjoint"],
                                  noise=kw["noise"], budget=kw.get("budget", "default"),
                                  representation=rep, **extra)
            t = time.perf_counter()
            r = p.solve()
            s = time.perf_counter() - t
            x = r["reconstruction"]
            pred = kw["forward"](x)
            w = kw["weight"]  # chi over the observed cells
            chi = np.sqrt(np.sum(w * (pred - kw["measurement"]) ** 2) / w.sum()) / kw["noise"]
            label = rep + "".join(f" ({k} {v})" if k != "shapes" else f" ({v})"
                                  for k, v in options.items())
            print(f"| {name} | {label} | {psnr(x, gt):.1f} | "
                  f"{np.mean(np.abs(x - gt) < 0.1):.3f} | {chi:.2f} | "
                  f"{r['total_steps']} | {s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
