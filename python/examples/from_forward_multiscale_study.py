"""from_forward with and without multiscale=True on seeded deblurring problems:
mean PSNR per prior and representation (the table in docs/performance.md).

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python python/examples/from_forward_multiscale_study.py
"""
import numpy as np

import fieldkit.nefi as nefi


def gaussian_rows(n, sigma):
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / sigma) ** 2)
    return b / b.sum(1, keepdims=True)


def blur_1d(n, seed):
    """Three random bumps through a 2-cell blur matrix, 1 % noise."""
    a, t = gaussian_rows(n, 2.0), (np.arange(n) + 0.5) / n
    rng = np.random.default_rng(seed)
    gt = sum(rng.uniform(0.5, 1.5)
             * np.exp(-0.5 * ((t - rng.uniform(0.15, 0.85)) / rng.uniform(0.03, 0.08)) ** 2)
             for _ in range(3))
    y = a @ gt
    return a, gt, y + 0.01 * y.max() * rng.standard_normal(n)


def blur_2d(n, seed):
    """A disc on a ramp through a separable 1.5-cell blur, 1 % noise."""
    b, c = gaussian_rows(n, 1.5), (np.arange(n) + 0.5) / n
    rng = np.random.default_rng(seed)
    u, v = np.meshgrid(c, c, indexing="ij")
    disc = (u - rng.uniform(0.3, 0.7)) ** 2 + (v - rng.uniform(0.3, 0.7)) ** 2 < 0.05
    gt = 0.2 + 0.6 * disc + 0.2 * v
    y = b @ gt @ b.T
    return b, gt, y + 0.01 * y.max() * rng.standard_normal(y.shape)


def psnr(x, gt):
    return 10 * np.log10(gt.max() ** 2 / np.mean((x - gt) ** 2))


def main():
    nefi.set_num_threads(1)
    for prior in ("nonnegative + smooth", "nonnegative + tv"):
        for multiscale in (False, True):
            for rep in ("neural", "hash"):
                one_d = []
                for seed in range(4):
                    a, gt, y = blur_1d(128, seed)
                    p = nefi.from_forward(a, y, prior=prior, multiscale=multiscale,
                                          representation=rep)
                    one_d.append(psnr(p.solve()["reconstruction"], gt))
                two_d = []
                for seed in range(2):
                    b, gt, y = blur_2d(48, seed)
                    p = nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                                          prior=prior, multiscale=multiscale, representation=rep)
                    two_d.append(psnr(p.solve()["reconstruction"], gt))
                print(f"{prior:22s} {'multiscale' if multiscale else 'single':10s} {rep:6s} "
                      f"1-D {np.mean(one_d):.2f}  2-D {np.mean(two_d):.2f}")


if __name__ == "__main__":
    main()
