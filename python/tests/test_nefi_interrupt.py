"""Ctrl-C during a long C++ solve raises KeyboardInterrupt within a fraction
of a second (it waited for the solve's end), from every entry point that
runs the solver loop; a later solve runs as usual."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import fieldkit.nefi as nefi

LONG = {"steps": [400000]}  # minutes of solving


def interrupted_after(call):
    timer = threading.Timer(0.4, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        timer.cancel()
    return time.monotonic() - t0


@pytest.mark.parametrize("call", [
    lambda: nefi.invert("toy1d", LONG, methods=["neural"]),
    lambda: nefi.batch_invert("toy1d", LONG, seeds=[0, 1]),
    # a campaign turns a failed run into a row: an interrupt is no failure
    lambda: nefi.bench("toy1d", LONG, methods=["neural"], n=1, seeds=[0]),
], ids=["invert", "batch_invert", "bench"])
def test_ctrl_c_stops_a_solve(call):
    assert interrupted_after(call) < 5
    r = nefi.invert("toy1d", {"steps": [4]}, methods=["neural"])
    assert r["neural"]["metrics"]["psnr"] > 0


def test_ctrl_c_in_a_python_model_stops_autotune():
    # The signal lands in the model's Python code: its KeyboardInterrupt was
    # a failed pilot, and the tuning went on.
    n = 64
    i = np.arange(n)
    a = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 2.0) ** 2)
    a /= a.sum(1, keepdims=True)
    y = a @ np.exp(-0.5 * ((i / n - 0.5) / 0.1) ** 2)

    def forward(x):
        time.sleep(0.001)  # most of the time is spent here
        return a @ x

    q = nefi.from_forward(forward, y, adjoint=lambda g: a.T @ g, budget=20000)
    assert interrupted_after(lambda: q.autotune(level="quick")) < 5


def test_ctrl_c_stops_a_hessian_spectrum_and_a_diagnosis():
    # Their Lanczos and probe loops never asked: a 4 s call ran to its end,
    # a longer one for minutes.
    n = 400
    i = np.arange(n)
    a = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 3.0) ** 2)
    y = a @ np.exp(-0.5 * ((i / n - 0.5) / 0.1) ** 2)

    def forward(x):
        time.sleep(0.002)
        return a @ x

    q = nefi.from_forward(forward, y, adjoint=lambda g: a.T @ g, representation="grid",
                          budget=20)
    assert interrupted_after(lambda: q.hessian_spectrum(k=2, n_iter=1000)) < 5
    assert interrupted_after(lambda: q.diagnose(probes=2000)) < 5
