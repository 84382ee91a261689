"""from_forward through nefi.TimeStepper: two bumps (48 cells) spread by 20
Fisher-KPP steps (u_t = u_xx + r u (1 - u), closed ends), seen after 7 and
20 steps with 1 % noise. First the start alone (rate known, 200 steps and
the default budget), then the start with the rate as a parameter (through
its log), started at a quarter of the truth, at rates 20 and 200. Prints a
markdown table (the figures in docs/performance.md, "TimeStepper").

    PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \\
        OMP_NUM_THREADS=1 .venv/bin/python python/examples/time_stepper_fit.py
"""
import time

import numpy as np
import torch

import fieldkit.nefi as nefi

N, DT, STEPS, AT = 48, 6e-5, 20, [7, 20]


def lap(u):
    return torch.cat([u[1:2] - u[:1], u[2:] - 2 * u[1:-1] + u[:-2], u[-2:-1] - u[-1:]]) * N * N


def start():
    x = (np.arange(N) + 0.5) / N
    return 0.3 * np.exp(-((x - 0.35) / 0.08) ** 2) + 0.2 * np.exp(-((x - 0.7) / 0.05) ** 2)


def psnr(v, x):
    return 10 * np.log10(np.ptp(x) ** 2 / np.mean((v - x) ** 2))


def main():
    nefi.set_num_threads(1)
    x = start()
    print("| case | budget | start PSNR dB | rate found | chi | steps | s |")
    print("|---|---|---|---|---|---|---|")
    for true_rate, fit_rate in ((20.0, None), (20.0, 5.0), (200.0, 50.0)):
        log_rate = torch.tensor(np.log(true_rate), dtype=torch.float64, requires_grad=True)

        def step(u, field, k):
            return u + DT * (lap(u) + torch.exp(log_rate) * u * (1 - u))

        params = [] if fit_rate is None else [log_rate]
        stepper = nefi.TimeStepper(step, STEPS, observe_at=AT, params=params)
        y0 = stepper(x)
        sigma = 0.01 * np.abs(y0).max()
        y = y0 + sigma * np.random.default_rng(1).standard_normal(y0.shape)
        if fit_rate is None:
            print(f"| the last frame read as the start, rate {true_rate:g} | - | "
                  f"{psnr(y[-1], x):.1f} | - | - | - | - |")
        for budget in ("200", "default") if fit_rate is None else ("300", "default"):
            if fit_rate is not None:
                with torch.no_grad():
                    log_rate.fill_(np.log(fit_rate))
            t = time.perf_counter()
            r = nefi.from_forward(stepper, y, shape=(N,), prior="nonnegative + smooth",
                                  noise=sigma, representation="grid", budget=budget).solve()
            s = time.perf_counter() - t
            case = (f"start, rate {true_rate:g} known" if fit_rate is None else
                    f"start and rate {true_rate:g} from {fit_rate:g}")
            found = "-" if fit_rate is None else \
                f"{np.exp(float(np.asarray(r['operator_parameters'][0]))):.1f}"
            print(f"| {case} | {budget} | {psnr(r['reconstruction'], x):.1f} | {found} | "
                  f"{r['data_fit']['discrepancy_ratio']:.2f} | {r['total_steps']} | {s:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
