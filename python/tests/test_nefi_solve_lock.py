"""One solve at a time per from_forward problem: threads sharing a problem
take turns and each gets the problem's own answer; a callback calling back
into the problem it is solving (solve, diagnose, batch_invert) is an Error
naming the call, where it would wait on itself forever."""
import threading

import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi


def problem():
    truth = np.zeros((16, 16))
    truth[4:10, 5:12] = 1.0
    blur = nefi.operators.gaussian_blur((16, 16), 1.5)
    return nefi.from_forward(blur, blur(truth), prior="nonnegative", noise=0.01)


def test_threads_sharing_a_problem_take_turns():
    p = problem()
    want = p.solve(steps=30)["reconstruction"]
    got = [None] * 3

    def solve(i):
        got[i] = p.solve(steps=30)["reconstruction"]

    threads = [threading.Thread(target=solve, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for g in got:
        assert np.array_equal(g, want)


@pytest.mark.parametrize("call", ["solve", "diagnose", "batch_invert"])
def test_a_callback_calling_back_into_its_problem_is_refused(call):
    p = problem()

    def callback(info):
        if info["step"] == 3:
            if call == "solve":
                p.solve(steps=5)
            elif call == "diagnose":
                p.diagnose()
            else:
                nefi.batch_invert([p])

    outcome = []

    def outer():
        try:
            p.solve(steps=20, callback=callback)
        except fieldkit.Error as e:
            outcome.append(str(e))

    t = threading.Thread(target=outer, daemon=True)  # a regression hangs, not the suite
    t.start()
    t.join(60)
    assert not t.is_alive(), "the callback's call waited on its own solve"
    assert len(outcome) == 1
    assert "a problem this thread is not already solving" in outcome[0]
    where = {"solve": "ForwardProblem.solve", "diagnose": "ForwardProblem.diagnose",
             "batch_invert": "batch_invert"}[call]
    assert where in outcome[0]
    assert p.solve(steps=5)["reconstruction"].shape == (16, 16)  # the lock was released
