"""ForwardProblem.refine_edges (nefi.refine_edges): a smooth fit of a
piecewise-constant scene sharpened into its phases under the same data, kept
only when the data allow it; refusals and bad options named."""
import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi


@pytest.fixture(autouse=True)
def one_thread():
    nefi.set_num_threads(1)


def blurred(gt, width, noise, seed=0):
    n = gt.shape[0]
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / width) ** 2)
    b /= b.sum(1, keepdims=True)
    y = b @ gt @ b.T + noise * np.random.default_rng(seed).standard_normal(gt.shape)
    return nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                             noise=noise, prior="nonnegative + smooth")


def disc(n=32):
    i = np.arange(n)
    return np.where(np.hypot(i[:, None] - 14.5, i[None, :] - 17.5) < 8, 1.0, 0.2)


def test_a_blurred_disc_sharpens_into_its_two_levels():
    gt = disc()
    p = blurred(gt, 2.5, 0.01)
    smooth = p.solve()
    out, rep = nefi.refine_edges(p, smooth, mode="levelset")
    assert rep["accepted"], rep["reason"]
    assert rep["reason"] == "" and rep["refusal"] == 0
    assert len(rep["levels"]) == 2  # two phases found by the histogram
    assert abs(rep["levels"][0] - 0.2) < 0.05 and abs(rep["levels"][1] - 1.0) < 0.05
    x = out["reconstruction"]
    err = lambda v: np.mean((v - gt) ** 2)  # noqa: E731
    assert err(x) < 0.6 * err(smooth["reconstruction"])
    # The result is the refined field's: its prediction and data fit (chi is
    # the squared ratio), its fields; the smooth result is left as it was.
    assert out["data_fit"]["discrepancy_ratio"] == pytest.approx(rep["chi_refined"] ** 0.5,
                                                                 rel=0.05)
    assert np.array_equal(out["fields"]["x"], x) and out["field_parameters"] is None
    assert "refine levelset: accepted" in out["report"]
    assert smooth["field_parameters"] is not None and "refine" not in smooth
    assert not np.array_equal(smooth["fields"]["x"], x)
    # The other modes refit and are judged by the same test; a voxel refit
    # is held at the nonnegative prior's bound.
    _, rv = p.refine_edges(smooth, mode="voxels")
    assert rv["refusal"] != 1 and rv["refined"].min() >= 0
    for mode in ("tv_sharpen", "phasefield"):
        _, r = p.refine_edges(smooth, mode=mode)
        assert r["refusal"] != 1 and not np.array_equal(r["refined"], smooth["reconstruction"])
        assert r["accepted"], (mode, r["reason"])
    # A plain array works too; start_levels set K and the start.
    out2, r2 = p.refine_edges(smooth["reconstruction"], start_levels=np.array([0.2, 1.0]))
    assert r2["start_levels"] == [0.2, 1.0] and len(r2["levels"]) == 2
    assert np.array_equal(out2["reconstruction"], r2["field"])


def test_a_smooth_scene_keeps_its_smooth_fit():
    # One gaussian bump: no phases for a staircase to find, and a two-level
    # refit cannot explain its data.
    n = 32
    i = np.arange(n)
    gt = np.exp(-0.5 * ((i[:, None] - 15.0) ** 2 + (i[None, :] - 16.0) ** 2) / 5.0 ** 2)
    p = blurred(gt, 2.0, 0.005)
    smooth = p.solve()
    out, rep = p.refine_edges(smooth, levels=2)
    assert not rep["accepted"] and rep["reason"] and rep["refusal"] > 0
    assert out["reconstruction"] is smooth["reconstruction"]
    # Given as an array, refused: the array comes back.
    out, _ = p.refine_edges(smooth["reconstruction"], levels=2)
    assert out["reconstruction"] is not None
    np.testing.assert_array_equal(out["reconstruction"], smooth["reconstruction"])


def test_bad_options_and_problems_are_named():
    p = blurred(disc(16), 1.5, 0.01)
    smooth = p.solve(steps=20)
    with pytest.raises(fieldkit.Error, match="an option among.*'stepz'"):
        p.refine_edges(smooth, stepz=10)
    with pytest.raises(fieldkit.Error, match="levels"):
        p.refine_edges(smooth, levels=1)
    with pytest.raises(fieldkit.Error, match="'mode'"):
        p.refine_edges(smooth, mode="sharpen")
    with pytest.raises(fieldkit.Error, match="integer"):
        p.refine_edges(smooth, steps=2.5)
    with pytest.raises(fieldkit.Error, match="a number for option 'steps'"):
        p.refine_edges(smooth, steps=True)
    with pytest.raises(fieldkit.Error, match="device"):
        p.refine_edges(smooth, device="gpu")
    if not fieldkit.cuda_available():  # a device this process cannot use, by name
        with pytest.raises(fieldkit.Error, match="refine_edges device"):
            p.refine_edges(smooth, device="cuda")
    with pytest.raises(fieldkit.Error, match="levels 'auto' or a phase count"):
        p.refine_edges(smooth, levels=None)
    with pytest.raises(fieldkit.Error, match="two start_levels"):
        p.refine_edges(smooth, start_levels=[0.1, 0.5, 0.9])
    with pytest.raises(fieldkit.Error, match="floor only with mode levelset, voxels"):
        p.refine_edges(smooth, mode="phasefield", floor=0.0)
    bad = dict(smooth, reconstruction=np.where(np.eye(16) > 0, np.nan, 0.5))
    with pytest.raises(fieldkit.Error, match="refine_edges: expected a finite field, got 16 non-finite"):
        p.refine_edges(bad)
    sym = nefi.from_forward(lambda v: v, np.ones((8, 8)), adjoint=lambda g: g, noise=0.1,
                            prior="nonnegative + symmetric(0)")
    with pytest.raises(fieldkit.Error, match="symmetric"):
        sym.refine_edges(np.ones((8, 8)))
    with pytest.raises(fieldkit.Error, match=r"shape \[16, 16\]"):
        p.refine_edges(np.zeros((8, 8)))
    with pytest.raises(ValueError, match="from_forward ForwardProblem"):
        nefi.refine_edges("toy1d", smooth)
    two = nefi.from_forward(lambda f: f["u"] + f["v"], np.ones((8, 8)),
                            vjp=lambda f, g: {"u": g, "v": g},
                            prior={"u": "unconstrained", "v": "unconstrained"}, noise=0.1)
    with pytest.raises(fieldkit.Error, match="one field"):
        two.refine_edges({"reconstruction": np.zeros((8, 8))})


@pytest.mark.skipif(not fieldkit.cuda_available(), reason="no usable CUDA device")
def test_a_refit_on_a_device_decides_as_the_cpu():
    """A built-in blur's smooth fit of a disc refined with its refit on the
    GPU: the CPU's decision, levels within 0.02 and chi within 2 % (f32
    refits part by round-off)."""
    i = np.arange(24)
    gt = np.where(np.hypot(i[:, None] - 11.5, i[None, :] - 12.5) < 6, 1.0, 0.2)
    blur = nefi.operators.gaussian_blur((24, 24), 2.0)
    y = blur(gt) + 0.01 * np.random.default_rng(2).standard_normal(gt.shape)
    p = nefi.from_forward(blur, y, noise=0.01, prior="nonnegative + smooth")
    smooth = p.solve()
    _, cpu = p.refine_edges(smooth, mode="levelset", levels=2)
    _, gpu = p.refine_edges(smooth, mode="levelset", levels=2, device="cuda")
    assert cpu["accepted"], cpu["reason"]
    assert gpu["accepted"] == cpu["accepted"]
    np.testing.assert_allclose(gpu["levels"], cpu["levels"], atol=0.02)
    assert gpu["chi_refined"] == pytest.approx(cpu["chi_refined"], rel=0.02)
    assert gpu["refit_steps"] == cpu["refit_steps"] > 0 and cpu["refit_graph_steps"] == 0
