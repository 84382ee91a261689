"""Many measurements of one built-in model solved together
(nefi.batch_invert of from_forward problems) against solving them one after
another: the solve seconds of each (the results' total_s: the batch call
also rebuilds every problem from the shared start, a constant fit and a
25-step penalty probe each, timed apart), their ratio, the batch again with
each problem's own loss set on its rows (loss_mode "loop", the only way
before one shared set took per-problem weights), and the mean PSNR of each
(the batch starts every problem at one shared constant). Gaussian bumps at random
places through the built-in blur, 1 % noise, "nonnegative + smooth", the
Morozov stop off so both run every step (the table in docs/performance.md).

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \\
        .venv/bin/python python/examples/from_forward_batch_study.py
"""
import time

import numpy as np

import fieldkit.nefi as nefi


def psnr(x, gt):
    return 10 * np.log10(np.ptp(gt) ** 2 / np.mean((x - gt) ** 2))


def main():
    nefi.set_num_threads(1)
    print("| grid | problems | representation | batch solve s | sequential solve s "
          "| sequential / batch | batch, loop losses s | rebuild s | PSNR batch / sequential dB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for shape, count in (((64,), 16), ((32, 32), 8)):
        op = nefi.operators.gaussian_blur(shape, 1.5)
        rng = np.random.default_rng(0)
        t = (np.arange(shape[0]) + 0.5) / shape[0]
        truths = []
        for _ in range(count):
            g = np.exp(-0.5 * ((t - rng.uniform(0.3, 0.7)) / 0.08) ** 2)
            truths.append(g if len(shape) == 1 else np.outer(g, g))
        clean = [op(g) for g in truths]
        ys = [c + 0.01 * rng.standard_normal(c.shape) for c in clean]
        for rep in ("neural", "grid"):
            ps = [nefi.from_forward(op, y, prior="nonnegative + smooth", representation=rep,
                                    discrepancy=False) for y in ys]
            t0 = time.perf_counter()
            together = nefi.batch_invert(ps)
            call_s = time.perf_counter() - t0
            batch_s = sum(r["total_s"] for r in together)  # the batch's wall, split per problem
            loop_s = sum(r["total_s"] for r in nefi.batch_invert(ps, loss_mode="loop"))
            alone = [p.solve() for p in ps]
            seq_s = sum(r["total_s"] for r in alone)
            pb = np.mean([psnr(r["reconstruction"], g) for r, g in zip(together, truths)])
            pa = np.mean([psnr(r["reconstruction"], g) for r, g in zip(alone, truths)])
            print(f"| {'x'.join(map(str, shape))} | {count} | {rep} | {batch_s:.2f} | {seq_s:.2f} "
                  f"| {seq_s / batch_s:.2f} | {loop_s:.2f} | {call_s - batch_s:.2f} "
                  f"| {pb:.1f} / {pa:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
