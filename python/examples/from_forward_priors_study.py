"""What each structural prior of from_forward buys on a problem that has the
structure: seeded deblurring problems, each solved without the term and with
it; mean PSNR and the property the term enforces (the table in
docs/performance.md).

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python python/examples/from_forward_priors_study.py [--seeds 3]
"""
import argparse
import math

import numpy as np

import fieldkit.nefi as nefi


def gaussian_rows(n, sigma, circular=False):
    i = np.arange(n)
    d = i[:, None] - i[None, :]
    if circular:
        d = (d + n // 2) % n - n // 2
    b = np.exp(-0.5 * (d / sigma) ** 2)
    return b / b.sum(1, keepdims=True)


def noisy(y, rel, rng):
    return y + rel * np.abs(y).max() * rng.standard_normal(y.shape)


def two_phase(rng, n=128):
    """Three random intervals of 1 on 0 through a 2-cell blur, 3 % noise."""
    t = (np.arange(n) + 0.5) / n
    gt = np.zeros(n)
    for _ in range(3):
        c, w = rng.uniform(0.1, 0.9), rng.uniform(0.03, 0.1)
        gt[np.abs(t - c) < w] = 1.0
    a = gaussian_rows(n, 2.0)
    return a, gt, noisy(a @ gt, 0.03, rng), {}


def ramp(rng, n=96):
    """A rising erf step on a slope through a 2-cell blur, 3 % noise."""
    t = (np.arange(n) + 0.5) / n
    gt = 1 + np.array([math.erf(rng.uniform(4, 10) * (v - rng.uniform(0.3, 0.7))) for v in t])
    gt += rng.uniform(0.2, 1.0) * t
    a = gaussian_rows(n, 2.0)
    return a, gt, noisy(a @ gt, 0.03, rng), {}


def wrapped(rng, n=128):
    """A bump across the domain's ends through a circular 3-cell blur, 2 %."""
    t = (np.arange(n) + 0.5) / n
    c = rng.uniform(-0.05, 0.05)
    d = (t - c + 0.5) % 1.0 - 0.5
    gt = np.exp(-0.5 * (d / rng.uniform(0.05, 0.1)) ** 2) + 0.3 * np.sin(2 * np.pi * (t + c))
    a = gaussian_rows(n, 3.0, circular=True)
    return a, gt, noisy(a @ gt, 0.02, rng), {}


def blob(rng, h=24, w=20):
    """A mirror-symmetric pair of blobs inside a disc through a separable
    1.5-cell blur, 2 % noise; the disc is the known support."""
    u, v = np.meshgrid((np.arange(h) + 0.5) / h - 0.5, (np.arange(w) + 0.5) / w - 0.5,
                       indexing="ij")
    s, r = rng.uniform(0.1, 0.2), rng.uniform(0.05, 0.09)
    gt = np.exp(-((u - s) ** 2 + v ** 2) / (2 * r * r)) + np.exp(-((u + s) ** 2 + v ** 2) /
                                                                  (2 * r * r))
    support = (u ** 2 + v ** 2 < 0.16).astype(float)
    gt *= support
    a = np.kron(gaussian_rows(h, 1.5), gaussian_rows(w, 1.5))
    return a, gt, noisy(a @ gt.ravel(), 0.02, rng), {"support": support}


def two_valued(x, gt):
    return f"{np.mean(np.minimum(np.abs(x), np.abs(1 - x)) < 0.05):.2f} two-valued"


def wrong_way(x, gt):
    return f"{np.maximum(0, -np.diff(x)).sum():.3f} wrong-way"


def edge_jump(x, gt):
    return f"{abs(x[0] - x[-1]):.3f} end jump (truth {abs(gt[0] - gt[-1]):.3f})"


def symmetry(x, gt):
    return (f"mirror gap {np.abs(x - x[::-1]).max():.1e}, outside max "
            f"{np.abs(x[gt == 0]).max():.1e}, sum - M {x.sum() - gt.sum():.1e}")


CASES = [
    ("two-phase 1-D", two_phase, ["bounded(0, 1)", "binary", "binary + tv"], two_valued),
    ("ramp 1-D", ramp, ["nonnegative", "nonnegative + increasing", "nonnegative + smooth",
                        "nonnegative + smooth + increasing"], wrong_way),
    ("wrapped bump 1-D", wrapped, ["smooth", "periodic + smooth"], edge_jump),
    ("blobs in a disc 2-D", blob, ["nonnegative", "nonnegative + symmetric(0)",
                                  "nonnegative + symmetric(0) + known_support",
                                  "conserved(M) + symmetric(0) + known_support"], symmetry),
]


def psnr(x, gt):
    return 10 * np.log10(np.abs(gt).max() ** 2 / np.mean((x - gt) ** 2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    nefi.set_num_threads(1)
    print("| problem | prior | PSNR dB (mean of seeds) | property (last seed) |")
    print("|---|---|---|---|")
    for label, make, priors, prop in CASES:
        for prior in priors:
            scores, note = [], ""
            for seed in range(args.seeds):
                a, gt, y, extra = make(np.random.default_rng(seed))
                text = prior.replace("M", repr(float(gt.sum())))
                kw = {}
                if "known_support" in prior:
                    kw["support"] = extra["support"]
                p = nefi.from_forward(a, y, shape=gt.shape, prior=text, **kw)
                x = p.solve()["reconstruction"]
                scores.append(psnr(x, gt))
                note = prop(x, gt)
            print(f"| {label} | `{prior}` | {np.mean(scores):.1f} | {note} |", flush=True)


if __name__ == "__main__":
    main()
