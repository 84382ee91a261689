"""from_forward's head scale: fields that depart far from their best constant
(a zero-mean wave, sparse spikes, two blobs on nothing) under the automatic
scale (the larger of |best constant| and a data-only CGLS fit's departure)
against a head scaled by |best constant| alone, given as scale(|c|): mean
PSNR and chi over seeds (the table in docs/performance.md).

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python python/examples/from_forward_head_scale_study.py
"""
import numpy as np

import fieldkit.nefi as nefi


def periodic_blur(n, width):
    k = np.fft.fftfreq(n)
    h = np.exp(-2 * (np.pi * width) ** 2 * (k[:, None] ** 2 + k[None, :] ** 2))
    return lambda x: np.real(np.fft.ifft2(np.fft.fft2(x) * h))


def wave(rng, n=48):
    """A zero-mean wave behind a 1.5-cell blur, 1 % noise."""
    u, v = np.mgrid[0:n, 0:n] / n
    p = rng.uniform(0, 2 * np.pi, 2)
    gt = np.sin(2 * np.pi * u + p[0]) * np.cos(2 * np.pi * v) + 0.5 * np.sin(4 * np.pi * v + p[1])
    return periodic_blur(n, 1.5), gt - gt.mean(), "smooth"


def spikes(rng, n=48):
    """Eight spikes of 0.5 to 1 behind a 1.5-cell blur, 1 % noise."""
    gt = np.zeros((n, n))
    gt.flat[rng.choice(n * n, 8, replace=False)] = rng.uniform(0.5, 1.0, 8)
    return periodic_blur(n, 1.5), gt, "nonnegative + sparse"


def blobs(rng, n=32):
    """Two gaussian sources on nothing behind a 3-cell blur, 1 % noise."""
    u, v = np.mgrid[0:n, 0:n]
    gt = sum(a * np.exp(-0.5 * ((u - rng.uniform(6, 26)) ** 2 + (v - rng.uniform(6, 26)) ** 2)
                        / s ** 2) for a, s in [(1.0, 2.0), (0.6, 1.5)])
    return periodic_blur(n, 3.0), gt, "nonnegative"


def run(case, seed, representation, old_rule):
    rng = np.random.default_rng(seed)
    model, gt, prior = case(rng)
    y = model(gt)
    y = y + 0.01 * np.ptp(y) * rng.standard_normal(y.shape)
    kw = {"adjoint": model, "representation": representation}
    if representation == "blobs":
        kw["shapes"] = 4
    p = nefi.from_forward(model, y, prior=prior, **kw)
    if old_rule:
        p = nefi.from_forward(model, y, prior=f"{prior} + scale({abs(p.constant_fit):.6g})", **kw)
    r = p.solve()
    return (nefi.metrics.psnr(r["reconstruction"], gt, data_range=np.ptp(gt)),
            r["data_fit"]["discrepancy_ratio"], p.head_scale)


def main():
    seeds = range(3)
    print("| field | prior | representation | head scale | PSNR dB (automatic) | chi "
          "| PSNR dB (scale(abs(c))) | chi |")
    print("|---|---|---|---|---|---|---|---|")
    for case, reps in [(wave, ["grid", "neural"]), (spikes, ["grid", "neural"]),
                       (blobs, ["blobs"])]:
        for rep in reps:
            new = np.array([run(case, s, rep, False) for s in seeds])
            old = np.array([run(case, s, rep, True) for s in seeds])
            prior = case(np.random.default_rng(0))[2]
            print(f"| {case.__name__} | {prior} | {rep} | {new[:, 2].mean():.3g} "
                  f"| {new[:, 0].mean():.2f} | {new[:, 1].mean():.2f} "
                  f"| {old[:, 0].mean():.2f} | {old[:, 1].mean():.2f} |")


if __name__ == "__main__":
    main()
