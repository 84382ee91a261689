"""The built-in operators on the problems they model: undersampled MRI (30 %
of k-space, variable density) and inpainting (30 % of the pixels) of a 2-D
shapes phantom, each solved with "nonnegative + tv" by every field
representation, with the noise estimated (and with it given: --given); mean PSNR over
the seeds beside the zero-filled / mean-filled inverse (the table in
docs/performance.md).

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python python/examples/from_forward_operators_study.py [--seeds 2] [--speed]
        [--tv-sweep] [--autotune LEVEL]

--autotune LEVEL: seed 0 of each problem with the grid and the neural field,
solved as decided and after nefi.autotune (the lr and the tv strength by
pilot solves and the discrepancy principle): PSNR before and after, what was
chosen and the tuning's seconds.
"""
import argparse
import time

import numpy as np

import fieldkit.nefi as nefi


def shapes(n):
    """Two rectangles and a disc, values 0, 0.5 and 1."""
    t = (np.arange(n) + 0.5) / n
    y, x = np.meshgrid(t, t, indexing="ij")
    gt = np.zeros((n, n))
    gt[(y > 0.15) & (y < 0.45) & (x > 0.1) & (x < 0.55)] = 0.5
    gt[(x - 0.65) ** 2 + (y - 0.65) ** 2 < 0.04] = 1.0
    gt[(y > 0.7) & (y < 0.85) & (x > 0.15) & (x < 0.4)] = 1.0
    return gt


def psnr(x, gt):
    return 10 * np.log10(np.ptp(gt) ** 2 / np.mean((x - gt) ** 2))


def mri_pattern(rng, n):
    """30 % of k-space: every frequency within 0.15 of DC, the rest at random."""
    f = np.fft.fftfreq(n) * 2
    mask = np.hypot(f[:, None], f[None, :]) < 0.15
    return mask | (rng.random((n, n)) < (0.30 - mask.mean()) / (1 - mask.mean()))


def mri(rng, n, sigma):
    mask = mri_pattern(rng, n)
    op = nefi.operators.fourier_sampling(mask)
    m = int(mask.sum())
    y = op(shapes(n)) + sigma * (rng.standard_normal(m) + 1j * rng.standard_normal(m))
    return op, y, op.adjoint(y)


def inpainting(rng, n, sigma):
    keep = rng.random((n, n)) < 0.30
    op = nefi.operators.sampling(keep)
    y = op(shapes(n)) + sigma * rng.standard_normal(int(keep.sum()))
    return op, y, op.adjoint(y - y.mean()) + y.mean()


def speed(n, sigma, steps=300):
    """ms per step of one MRI fit (grid field, so the model's cost shows)
    with the model built in, as a torch function, and as numpy with its
    adjoint: the same data, prior and steps."""
    import torch
    pattern = mri_pattern(np.random.default_rng(0), n)
    op = nefi.operators.fourier_sampling(pattern)
    m = int(pattern.sum())
    rng = np.random.default_rng(1)
    y = op(shapes(n)) + sigma * (rng.standard_normal(m) + 1j * rng.standard_normal(m))
    pt = torch.from_numpy(pattern)

    def zero_filled(g):
        full = np.zeros(pattern.shape, complex)
        full[pattern] = g
        return np.real(np.fft.ifft2(full, norm="ortho"))

    models = {
        "built in": (op, {}),
        "torch": (lambda x: torch.fft.fft2(x, norm="ortho")[pt], {}),
        "numpy + adjoint": (lambda x: np.fft.fft2(x, norm="ortho")[pattern],
                            {"adjoint": zero_filled}),
    }
    print("| model | ms per step |")
    print("|---|---|")
    for name, (forward, kw) in models.items():
        p = nefi.from_forward(forward, y, (n, n), prior="nonnegative + tv", representation="grid",
                              noise=sigma, budget=str(steps), discrepancy=False, **kw)
        t0 = time.perf_counter()
        r = p.solve()
        ms = 1e3 * (time.perf_counter() - t0) / r["stages"][-1]["steps"]
        print(f"| {name} | {ms:.2f} |", flush=True)


def tv_sweep(n, sigma, strengths=(1, 3, 10, 30)):
    """The MRI fit of seed 0 at each tv strength, every representation but
    low rank: how far the default strength 1 is from the best here."""
    op, y, _ = mri(np.random.default_rng(0), n, sigma)
    gt = shapes(n)
    print("| representation | " + " | ".join(f"tv({s})" for s in strengths) + " |")
    print("|---|" + "---|" * len(strengths))
    for rep in ("grid", "hash", "neural"):
        row = [psnr(nefi.from_forward(op, y, prior=f"nonnegative + tv({s})", representation=rep,
                                      seed=0).solve()["reconstruction"], gt) for s in strengths]
        print(f"| {rep} | " + " | ".join(f"{v:.1f}" for v in row) + " |", flush=True)


def autotuned(n, sigma, level):
    gt = shapes(n)
    print("| problem | representation | default dB | tuned dB | lr | tv | tuning s |")
    print("|---|---|---|---|---|---|---|")
    for name, make in (("MRI 30 %", mri), ("inpainting 30 %", inpainting)):
        op, y, _ = make(np.random.default_rng(0), n, sigma)
        for rep in ("grid", "neural"):
            p = nefi.from_forward(op, y, prior="nonnegative + tv", representation=rep, seed=0)
            t0 = time.perf_counter()
            t = nefi.autotune(p, level=level)
            secs = time.perf_counter() - t0
            chosen = {d["key"]: d["chosen"] for d in t["decisions"]}
            before = psnr(p.solve()["reconstruction"], gt)
            after = psnr(t["problem"].solve()["reconstruction"], gt)
            print(f"| {name} | {rep} | {before:.1f} | {after:.1f} | {chosen['lr']} | "
                  f"{chosen['tv']} | {secs:.1f} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--sigma", type=float, default=0.01)
    ap.add_argument("--given", action="store_true", help="also solve with the true sigma given")
    ap.add_argument("--speed", action="store_true",
                    help="only the per-step cost of the MRI model: built in, torch, numpy")
    ap.add_argument("--tv-sweep", action="store_true",
                    help="only the MRI fit at tv strengths 1, 3, 10, 30 (seed 0)")
    ap.add_argument("--autotune", metavar="LEVEL",
                    help="only seed 0 of each problem, as decided and autotuned at LEVEL")
    args = ap.parse_args()
    nefi.set_num_threads(1)
    if args.autotune:
        return autotuned(args.n, args.sigma, args.autotune)
    if args.speed:
        return speed(args.n, args.sigma)
    if args.tv_sweep:
        return tv_sweep(args.n, args.sigma)
    gt = shapes(args.n)
    print("| problem | baseline dB | representation | noise | PSNR dB | sigma used | s |")
    print("|---|---|---|---|---|---|---|")
    for name, make in (("MRI 30 %", mri), ("inpainting 30 %", inpainting)):
        for rep in ("neural", "hash", "grid", "lowrank"):
            for noise in ("auto", args.sigma) if args.given else ("auto",):
                got, base, sig, secs = [], [], [], []
                for seed in range(args.seeds):
                    op, y, baseline = make(np.random.default_rng(seed), args.n, args.sigma)
                    t0 = time.perf_counter()
                    p = nefi.from_forward(op, y, prior="nonnegative + tv", representation=rep,
                                          noise=noise, seed=seed)
                    r = p.solve()
                    secs.append(time.perf_counter() - t0)
                    got.append(psnr(r["reconstruction"], gt))
                    base.append(psnr(baseline, gt))
                    sig.append(p.noise_std)
                print(f"| {name} | {np.mean(base):.1f} | {rep} | {noise} | {np.mean(got):.1f} | "
                      f"{np.mean(sig):.4f} | {np.mean(secs):.1f} |", flush=True)


if __name__ == "__main__":
    main()
