"""fieldkit.nefi.from_forward: bring-your-own forward models (a matrix, a
numpy function with its adjoint or vjp, a torch function) solved to the noise
floor; complex data; masks; the dry run's and the solve's errors (the priors:
test_nefi_from_forward_priors.py)."""
import numpy as np
import pytest
import torch

import fieldkit
import fieldkit.nefi as nefi


def blur_problem(n=128, rel=0.01, seed=1):
    i = np.arange(n)
    a = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 2.0) ** 2)
    a /= a.sum(1, keepdims=True)
    t = (i + 0.5) / n
    gt = sum(h * np.exp(-0.5 * ((t - c) / w) ** 2)
             for c, w, h in [(0.3, 0.05, 1.0), (0.6, 0.03, 0.6), (0.75, 0.08, 0.8)])
    y = a @ gt
    y = y + rel * y.max() * np.random.default_rng(seed).standard_normal(n)
    return a, gt, y


def psnr(x, gt):
    return 10 * np.log10(gt.max() ** 2 / np.mean((x - gt) ** 2))


@pytest.fixture(autouse=True)
def one_thread():
    nefi.set_num_threads(1)


def test_every_kind_of_model_reaches_the_noise_floor():
    a, gt, y = blur_problem()
    at = torch.from_numpy(a)
    prior = "nonnegative + smooth"
    problems = {
        "matrix": nefi.from_forward(a, y, prior=prior),
        "adjoint": nefi.from_forward(lambda x: a @ x, y, adjoint=lambda g: a.T @ g, prior=prior),
        "vjp": nefi.from_forward(lambda x: a @ x, y, vjp=lambda x, g: a.T @ g, prior=prior),
        "torch": nefi.from_forward(lambda x: at @ x, y, prior=prior),
    }
    out = {k: p.solve(ground_truth=gt) for k, p in problems.items()}
    for k, r in out.items():
        x = r["reconstruction"]
        assert x.shape == gt.shape and x.min() >= 0, k
        assert psnr(x, gt) > 29, (k, r["report"])
        assert 0.7 < r["data_fit"]["discrepancy_ratio"] < 1.5, (k, r["report"])
        assert "chi = RMSE / sigma" in nefi.quick_report(r)
        assert "ground truth: PSNR" in r["report"]
    # A matrix and its adjoint are the same model (homogeneity 1: the closed-form
    # constant fit); a vjp and torch autograd are the same model without it.
    np.testing.assert_array_equal(out["matrix"]["reconstruction"], out["adjoint"]["reconstruction"])
    np.testing.assert_allclose(out["vjp"]["reconstruction"], out["torch"]["reconstruction"],
                               atol=1e-6)
    # The reference's quick_report(result, problem, gt): a result solved
    # without the truth is scored after, with the solve's own lines.
    plain = problems["matrix"].solve()
    assert "ground truth" not in plain["report"]
    scored = nefi.quick_report(plain, problems["matrix"], gt)
    truth_line = [ln for ln in out["matrix"]["report"].splitlines() if "ground truth" in ln]
    assert [ln for ln in scored.splitlines() if "ground truth" in ln] == truth_line
    assert scored.index("ground truth") < scored.index("| decision")
    with pytest.raises(fieldkit.Error, match="the from_forward ForwardProblem that made the result"):
        nefi.quick_report(plain, None, gt)
    d = problems["matrix"].decisions
    assert d["network"]["value"] == "64 x 3" and "closed form" in d["constant_fit"]["why"]
    assert "search" in problems["vjp"].decisions["constant_fit"]["why"]
    assert problems["matrix"].noise_estimated
    assert problems["matrix"].noise_std == pytest.approx(0.01 * (a @ gt).max(), rel=0.25)
    # Without the smooth prior the field fits the noise: the prior is what helps.
    bare = nefi.from_forward(a, y, prior="nonnegative").solve()
    assert psnr(out["matrix"]["reconstruction"], gt) > psnr(bare["reconstruction"], gt) + 5


def test_a_matrix_reads_a_shaped_measurement_in_c_order():
    # As nefi fit --matrix: A's rows are the measurement's cells, so an image
    # of 16 x 8 data takes a 128-row matrix; the same numbers as one axis give
    # the same model (the noise estimate reads the layout it is given).
    a, gt, y = blur_problem()
    p2 = nefi.from_forward(a, y.reshape(16, 8), prior="nonnegative + smooth",
                           representation="grid", budget=50)
    r = p2.solve()
    assert r["reconstruction"].shape == gt.shape
    assert r["prediction"].shape == (16, 8)
    p1 = nefi.from_forward(a, y, prior="nonnegative + smooth", representation="grid",
                           budget=50, noise=p2.noise_std)
    np.testing.assert_allclose(r["reconstruction"], p1.solve()["reconstruction"], atol=1e-6)
    with pytest.raises(fieldkit.Error, match="measurement's shape"):
        nefi.from_forward(a, y[:100].reshape(10, 10))


def test_a_matrix_is_copied_as_the_data_are():
    # A view kept the caller's matrix: zeroing it after from_forward changed
    # every later solve, silently.
    a, gt, y = blur_problem()
    kept = a.copy()
    p = nefi.from_forward(a, y, prior="nonnegative", representation="grid", budget=40)
    before = p.solve()["reconstruction"]
    a[:] = 0
    np.testing.assert_array_equal(p.solve()["reconstruction"], before)
    np.testing.assert_array_equal(
        nefi.from_forward(kept, y, prior="nonnegative", representation="grid",
                          budget=40).solve()["reconstruction"], before)


def test_complex_fourier_sampling_as_matrix_and_torch():
    # Undersampled 1-D Fourier measurements (an MRI-like model) of a real signal.
    n = 64
    t = (np.arange(n) + 0.5) / n
    gt = np.exp(-0.5 * ((t - 0.4) / 0.08) ** 2) + 0.5 * np.exp(-0.5 * ((t - 0.7) / 0.05) ** 2)
    rows = np.r_[0:12, n - 11:n, 20:40:3]
    f = np.fft.fft(np.eye(n), norm="ortho")[rows]
    rng = np.random.default_rng(0)
    y = f @ gt + 0.002 * (rng.standard_normal(len(rows)) + 1j * rng.standard_normal(len(rows)))
    ft = torch.from_numpy(f)
    p_mat = nefi.from_forward(f, y, prior="nonnegative + smooth", noise=0.002)
    p_torch = nefi.from_forward(lambda x: ft @ x.to(torch.complex128), y, shape=(n,),
                                prior="nonnegative + smooth", noise=0.002, homogeneity=1)
    r_mat, r_torch = p_mat.solve(), p_torch.solve()
    assert psnr(r_mat["reconstruction"], gt) > 25, r_mat["report"]
    np.testing.assert_allclose(r_torch["reconstruction"], r_mat["reconstruction"], atol=1e-4)
    assert r_mat["prediction"].shape == (2, len(rows))  # real and imaginary parts


def test_two_dimensional_grid_field_with_a_mask():
    # A 2-D separable blur as a numpy function and its adjoint; half the
    # pixels unobserved and filled with garbage that must never be read.
    n = 24
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 1.5) ** 2)
    b /= b.sum(1, keepdims=True)
    xx, yy = np.meshgrid((i + 0.5) / n, (i + 0.5) / n, indexing="ij")
    gt = ((xx - 0.5) ** 2 + (yy - 0.5) ** 2 < 0.1).astype(float)
    y = b @ gt @ b.T
    mask = np.ones_like(y)
    mask[:, ::2] = 0
    garbage = y.copy()
    garbage[mask == 0] = 1e6
    kw = dict(adjoint=lambda g: b.T @ g @ b, mask=mask, noise=0.0, prior="bounded(0, 1) + tv",
              representation="grid", budget="300")
    p1 = nefi.from_forward(lambda x: b @ x @ b.T, y, **kw)
    p2 = nefi.from_forward(lambda x: b @ x @ b.T, garbage, **kw)
    r1, r2 = p1.solve(), p2.solve()
    np.testing.assert_array_equal(r1["reconstruction"], r2["reconstruction"])
    assert r1["reconstruction"].shape == (n, n)
    assert r1["reconstruction"].min() > 0 and r1["reconstruction"].max() < 1
    assert psnr(r1["reconstruction"], gt) > 15, r1["report"]
    assert p1.decisions["representation"]["value"] == "grid"


def test_dry_run_errors_say_what_to_fix():
    a, _, y = blur_problem(32)
    with pytest.raises(fieldkit.Error, match="measurement's shape"):
        nefi.from_forward(lambda x: (a @ x)[:-1], y, adjoint=lambda g: a.T @ g)
    with pytest.raises(fieldkit.Error, match="forward's adjoint"):
        nefi.from_forward(lambda x: a @ x, y, adjoint=lambda g: a @ g + 0.1 * g)
    with pytest.raises(fieldkit.Error, match="finite differences"):
        nefi.from_forward(lambda x: np.sin(a @ x), y, vjp=lambda x, g: a.T @ g)
    # The right vjp of a nonlinear model passes.
    nefi.from_forward(lambda x: np.sin(a @ x), y, vjp=lambda x, g: a.T @ (np.cos(a @ x) * g),
                      budget="quick")
    with pytest.raises(fieldkit.Error, match="pass adjoint= or vjp="):
        nefi.from_forward(lambda x: a @ np.asarray(x), y)
    with pytest.raises(fieldkit.Error, match="adjoint .* or vjp .*, got both"):
        nefi.from_forward(lambda x: a @ x, y, adjoint=lambda g: g, vjp=lambda x, g: g)
    with pytest.raises(fieldkit.Error, match="complex measurements"):
        nefi.from_forward(a.astype(complex), y)
    with pytest.raises(fieldkit.Error, match="mask of the measurement's shape"):
        nefi.from_forward(a, y, mask=np.ones(3))
    with pytest.raises(fieldkit.Error, match="NaN or inf"):
        nefi.from_forward(lambda x: a @ x + np.nan, y, adjoint=lambda g: a.T @ g)
    with pytest.raises(fieldkit.Error, match="'wiggly'"):
        nefi.from_forward(a, y, prior="wiggly")
    with pytest.raises(fieldkit.Error, match="noise 'auto' or a sigma"):
        nefi.from_forward(a, y, noise="loud")
    # What the CLI refuses in a .npy is refused here too (numpy kept a real
    # part, read True as 1, or raised its own TypeError).
    with pytest.raises(fieldkit.Error, match="noise 'auto' or a sigma"):
        nefi.from_forward(a, y, noise=None)
    with pytest.raises(fieldkit.Error, match="noise 'auto' or a sigma"):
        nefi.from_forward(a, y, noise=np.complex128(0.01 + 1j))
    # A 0-d array or tensor is a number (a residual's .std()).
    for sigma in (np.array(0.01), torch.tensor(0.01)):
        assert nefi.from_forward(a, y, noise=sigma, budget="quick").noise_std == pytest.approx(
            0.01)
    with pytest.raises(fieldkit.Error, match="real or complex measured data, got dtype bool"):
        nefi.from_forward(a, y > 0.3)
    with pytest.raises(fieldkit.Error, match="real mask weights"):
        nefi.from_forward(a, y, mask=np.ones(32) * (1 + 1j))
    with pytest.raises(fieldkit.Error, match="real support"):
        nefi.from_forward(a, y, support=np.ones(32) * (1 + 1j))
    with pytest.raises(fieldkit.Error, match="'lots'"):
        nefi.from_forward(a, y, budget="lots")
    with pytest.raises(fieldkit.Error, match="columns"):
        nefi.from_forward(a, y, shape=(31,))


def test_an_exception_inside_the_solve_names_the_model():
    a, _, y = blur_problem(32)
    calls = {"n": 0}

    def vjp(x, g):
        calls["n"] += 1
        if calls["n"] > 5:  # after the dry run and a few steps
            raise RuntimeError("detector offline")
        return a.T @ g

    p = nefi.from_forward(lambda x: a @ x, y, vjp=vjp, budget="50", name="camera")
    with pytest.raises(fieldkit.Error, match="vjp of forward model 'camera'.*RuntimeError: detector offline"):
        p.solve()
    p = nefi.from_forward(lambda x: a @ x, y, adjoint=lambda g: a.T @ g, name="camera")
    p._model._f = lambda x: "not an array"
    with pytest.raises(fieldkit.Error, match="forward model 'camera'"):
        p.solve()


def test_the_start_skips_constants_the_model_refuses():
    # A nonlinear model that raises past 10 (as the diffusivity operator
    # refuses a D whose explicit steps are too many): the start's search of
    # constants skips those and fits; one that refuses every constant field
    # reports its own error, not "none finite".
    a, gt, y = blur_problem(32)

    def limited(x):
        if np.abs(x).max() > 10:
            raise ValueError("beyond the model's range")
        return a @ np.tanh(x)

    def limited_vjp(x, g):
        return (1 - np.tanh(x) ** 2) * (a.T @ g)

    data = limited(gt)
    r = nefi.from_forward(limited, data, vjp=limited_vjp, prior="positive", noise=1e-3,
                          budget="50").solve()
    assert np.isfinite(r["reconstruction"]).all()

    def constant_averse(x):
        if np.ptp(x) == 0 and x.flat[0] != 0:
            raise ValueError("a flat field")
        return a @ x

    with pytest.raises(fieldkit.Error, match="a flat field"):
        nefi.from_forward(constant_averse, data, vjp=lambda x, g: a.T @ g, prior="positive")


def test_hash_grid_and_grid_representations():
    # The multiresolution hash grid (Instant-NGP's encoding + a small MLP) on
    # the 1-D blur: with the smooth prior it beats the MLP field by ~10 dB here.
    a, gt, y = blur_problem()
    hashed = nefi.from_forward(a, y, prior="nonnegative + smooth", representation="hash")
    assert hashed.decisions["representation"]["value"] == "hash"
    assert "levels" in hashed.decisions["representation"]["why"]
    r = hashed.solve(ground_truth=gt)
    assert psnr(r["reconstruction"], gt) > 38, r["report"]
    assert r["n_parameters"] < 10000  # tables sized to the levels that fit
    grid = nefi.from_forward(a, y, prior="nonnegative + smooth", representation="grid").solve()
    assert grid["n_parameters"] == gt.size
    assert psnr(grid["reconstruction"], gt) > 32


def test_an_ensemble_of_a_forward_problem_maps_what_the_data_leave_open():
    # Half the cells unobserved: the ensemble's spread is larger there.
    a, gt, y = blur_problem(64)
    mask = np.ones_like(y)
    mask[40:] = 0
    p = nefi.from_forward(a, y, mask=mask, prior="nonnegative + smooth", budget="200")
    e = nefi.ensemble(p, seeds=(0, 1, 2))
    assert e.mean.shape == gt.shape and len(e.results) == 3
    assert np.median(e.std[44:]) > 3 * np.median(e.std[:32])
    assert e.coefficient_of_variation() > 0
    # As an instance's: a repeated seed, and a field that starts alike for
    # every seed (a grid), are refused (their spread was 0 without a word).
    with pytest.raises(fieldkit.Error, match="distinct initialisation seeds"):
        nefi.ensemble(p, seeds=(0, 0))
    g = nefi.from_forward(a, y, prior="nonnegative", representation="grid", budget=20)
    with pytest.raises(fieldkit.Error, match="its field starts the same for every seed"):
        nefi.ensemble(g, seeds=(0, 1))


def test_lr_range_test_finds_a_rate_that_trains():
    a, _, y = blur_problem(64)
    p = nefi.from_forward(a, y, prior="nonnegative")
    best, rows = nefi.lr_range_test(p, lrs=(1e-5, 1e-3, 1e-2, 3.0), steps=20)
    losses = dict(rows)
    assert best in (1e-3, 1e-2)
    assert losses[1e-5] > losses[best]  # too small barely moves
    assert len(rows) == 4
    short = p.solve(steps=7, lr=1e-3)
    assert short["total_steps"] == 7


def test_several_fields_through_one_model():
    # Two fields on one grid, one output: absorption a (>= 0, bumps) and a
    # signed offset b (a smooth ramp), y = [A a, b + 0.5 A a]; as torch (a
    # dict of tensors) and as numpy with a dict vjp.
    a_mat, gt_a, _ = blur_problem(96, rel=0.0)
    n = len(gt_a)
    gt_b = np.linspace(-0.5, 0.5, n)
    y = np.stack([a_mat @ gt_a, gt_b + 0.5 * a_mat @ gt_a])
    y = y + 0.003 * np.random.default_rng(3).standard_normal(y.shape)
    at = torch.from_numpy(a_mat)
    prior = {"a": "nonnegative + smooth", "b": "unconstrained + smooth(0.1)"}

    def torch_forward(f):
        blurred = at @ f["a"]
        return torch.stack([blurred, f["b"] + 0.5 * blurred])

    def np_forward(f):
        blurred = a_mat @ f["a"]
        return np.stack([blurred, f["b"] + 0.5 * blurred])

    def np_vjp(f, g):
        return {"a": a_mat.T @ (g[0] + 0.5 * g[1]), "b": g[1]}

    for p in (nefi.from_forward(torch_forward, y, shape=(n,), prior=prior, noise=0.003),
              nefi.from_forward(np_forward, y, shape=(n,), vjp=np_vjp, prior=prior, noise=0.003)):
        assert p.fields == ["a", "b"] and set(p.constant_fit) == {"a", "b"}
        assert p.prior["a"] == "nonnegative + smooth(1)"
        assert "smooth:b_weight" in p.decisions
        r = p.solve(ground_truth={"a": gt_a})
        rec = r["reconstruction"]
        assert set(rec) == {"a", "b"} and rec["a"].shape == (n,)
        assert psnr(rec["a"], gt_a) > 25, r["report"]
        assert np.sqrt(np.mean((rec["b"] - gt_b) ** 2)) < 0.05, r["report"]
        assert "a: nonnegative" in r["report"]
    with pytest.raises(fieldkit.Error, match="a dict with the fields"):
        nefi.from_forward(np_forward, y, shape=(n,), prior=prior,
                          vjp=lambda f, g: {"a": a_mat.T @ g[0]})
    with pytest.raises(fieldkit.Error, match="several fields, got adjoint"):
        nefi.from_forward(np_forward, y, shape=(n,), prior=prior, adjoint=lambda g: g)
    with pytest.raises(fieldkit.Error, match="callable forward for several fields"):
        nefi.from_forward(a_mat, y[0], prior=prior)
    with pytest.raises(fieldkit.Error, match="prior of field 'b'"):
        nefi.from_forward(np_forward, y, shape=(n,), vjp=np_vjp,
                          prior={"a": "nonnegative", "b": "wiggly"})


def test_what_the_review_found_stays_fixed():
    a, gt, y = blur_problem(32)
    # A transposed output of the right size is refused, not fitted scrambled.
    y2 = np.stack([y, y])
    with pytest.raises(fieldkit.Error, match=r"measurement's shape \(2, 32\)"):
        nefi.from_forward(lambda x: np.stack([a @ x, a @ x]).T, y2, shape=(32,),
                          vjp=lambda x, g: a.T @ (g[:, 0] + g[:, 1]))
    # A float32 model with an exact vjp passes the dry run.
    a32 = a.astype(np.float32)
    nefi.from_forward(lambda x: np.sin(a32 @ x.astype(np.float32)), y,
                      vjp=lambda x, g: a32.T @ (np.cos(a32 @ x.astype(np.float32)) * g),
                      budget="5", noise=0.01)
    # The model gets read-only fields (editing one in place would move the vjp's point).
    with pytest.raises(ValueError, match="read-only"):
        nefi.from_forward(lambda x: a @ x.__isub__(x.mean()), y, adjoint=lambda g: a.T @ g)
    # Ctrl-C inside the model stops the solve as KeyboardInterrupt.
    state = {"armed": False, "n": 0}

    def interrupted(x):
        state["n"] += state["armed"]
        if state["n"] > 3:
            raise KeyboardInterrupt
        return a @ x

    p = nefi.from_forward(interrupted, y, adjoint=lambda g: a.T @ g, noise=0.01, budget="20")
    state["armed"] = True
    with pytest.raises(KeyboardInterrupt):
        p.solve()
    # lr_range_test re-raises what is not a divergence.
    state["n"] = 0
    with pytest.raises(KeyboardInterrupt):
        nefi.lr_range_test(p, lrs=(1e-3,), steps=5)
    # Ground truths are checked before the solve; conflicting overrides refused.
    p = nefi.from_forward(a, y, noise=0.01, budget="5")
    with pytest.raises(fieldkit.Error, match=r"field's shape \[32\]"):
        p.solve(ground_truth=np.zeros(31))
    with pytest.raises(fieldkit.Error, match="finite ground truth, got 32 non-finite"):
        p.solve(ground_truth=np.full(32, np.nan))
    with pytest.raises(fieldkit.Error, match="real ground truth, got complex"):
        p.solve(ground_truth=np.zeros(32) + 1j)
    with pytest.raises(fieldkit.Error, match="n_octaves only with"):
        nefi.from_forward(a, y, representation="hash", n_octaves=4)
    with pytest.raises(fieldkit.Error, match="hidden/depth only"):
        nefi.from_forward(a, y, representation="grid", hidden=16)
    with pytest.raises(fieldkit.Error, match="homogeneity 1"):
        nefi.from_forward(a, y, homogeneity=2)
    with pytest.raises(ValueError, match="only seeds"):
        nefi.ensemble(p, seeds=(0, 1), method="grid")
    with pytest.raises(fieldkit.Error, match="'cpu', 'cuda' or 'cuda:N'"):
        nefi.ensemble(p, seeds=(0, 1), device="gpu")  # passed to each solve
    with pytest.raises(fieldkit.Error, match="'cpu', 'cuda' or 'cuda:N'"):
        nefi.lr_range_test(p, lrs=(1e-3,), steps=2, device="gpu")
    with pytest.raises(fieldkit.Error, match="ForwardProblem.autotune device"):
        nefi.autotune(p, device="cuda:127")  # the last index a name may give: no such device
    with pytest.raises(ValueError, match="device= only with a from_forward"):
        nefi.autotune("toy1d", device="cuda")


def test_an_ensemble_of_several_fields_is_per_field():
    a, gt, y = blur_problem(32)
    ys = np.stack([a @ gt, gt])
    p = nefi.from_forward(lambda f: np.stack([a @ f["u"], f["v"]]), ys, shape=(32,),
                          vjp=lambda f, g: {"u": a.T @ g[0], "v": g[1]},
                          prior={"u": "nonnegative", "v": "unconstrained"}, noise=0.01,
                          budget="30")
    e = nefi.ensemble(p, seeds=(0, 1))
    assert set(e.mean) == {"u", "v"} and e.std["u"].shape == (32,)
    assert set(e.coefficient_of_variation()) == {"u", "v"}


def test_a_step_callback_sees_every_step_and_can_stop():
    a, _, y = blur_problem(32)
    p = nefi.from_forward(a, y, noise=0.0, budget="40")
    seen = []
    r = p.solve(callback=lambda s: seen.append((s["global_step"], s["data_loss"])))
    assert [g for g, _ in seen] == list(range(1, 41)) and r["total_steps"] == 40
    assert seen[-1][1] < seen[0][1]  # the data loss falls
    r = p.solve(callback=lambda s: s["global_step"] < 10)
    assert r["total_steps"] == 10 and r["stages"][0]["stop"] == "callback"
    with pytest.raises(fieldkit.Error, match="solve callback.*ZeroDivisionError"):
        p.solve(callback=lambda s: 1 / 0)


def test_a_low_rank_field_recovers_a_separable_image():
    # A layered (separable) 2-D field through a separable blur: rank 2 is enough.
    n = 32
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 1.5) ** 2)
    b /= b.sum(1, keepdims=True)
    gt = np.outer(0.5 + 0.3 * np.sin(i / 5), 0.6 + 0.3 * np.cos(i / 7))
    y = b @ gt @ b.T + 0.002 * np.random.default_rng(0).standard_normal((n, n))
    p = nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                          representation="lowrank", rank=2, prior="nonnegative", noise=0.002)
    assert "rank-2 CP" in p.decisions["representation"]["why"]
    r = p.solve(ground_truth=gt)
    assert r["n_parameters"] == 2 * 2 * n
    assert psnr(r["reconstruction"], gt) > 35, r["report"]
    with pytest.raises(fieldkit.Error, match="rank"):
        nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                          representation="lowrank", rank=0)


def test_a_spectral_field_sees_a_smooth_scene_through_few_views():
    # A smooth scene through 8 CT views: the spectral field's preconditioned
    # L-BFGS stopped at the noise floor needs no penalty; a grid fits the
    # noise into what the views miss.
    n = 32
    c = (np.arange(n) + 0.5) / n
    u, v = np.meshgrid(c, c, indexing="ij")
    gt = 0.5 + 0.3 * u + np.exp(-((u - 0.4) ** 2 + (v - 0.6) ** 2) / 0.02)
    op = nefi.operators.radon((n, n), n_views=8)
    y0 = op(gt)
    sigma = 0.01 * np.abs(y0).max()
    y = y0 + sigma * np.random.default_rng(0).standard_normal(y0.shape)
    p = nefi.from_forward(op, y, noise=sigma, representation="spectral")
    assert p.decisions["optimizer"]["value"] == "lbfgs"
    assert "cosines [32, 32]" in p.decisions["representation"]["why"]
    r = p.solve()
    grid = nefi.from_forward(op, y, noise=sigma, representation="grid").solve()
    assert psnr(r["reconstruction"], gt) > psnr(grid["reconstruction"], gt) + 6, r["report"]
    assert 0.8 < r["data_fit"]["discrepancy_ratio"] <= 1.0, r["report"]
    band = nefi.from_forward(op, y, noise=sigma, representation="spectral", modes=6,
                             smoothness=0).solve()
    assert band["n_parameters"] == 36
    for kw, match in ((dict(representation="grid", modes=4),
                       "modes only with representation 'spectral'"),
                      (dict(smoothness=1.0), "smoothness only with representation 'spectral'"),
                      (dict(representation="spectral", hidden=8), "hidden/depth only with"),
                      (dict(representation="spectral", smoothness=-1), "a smoothness in")):
        with pytest.raises(fieldkit.Error, match=match):
            nefi.from_forward(op, y, noise=sigma, **kw)


def test_steps_and_lr_of_a_multiscale_solve_replace_the_total_and_the_first_rate():
    # steps is the solve's total, shared by the stages as decided; lr is the
    # first stage's, the native stage keeping its half.
    n = 32
    x = np.arange(n)
    a = np.exp(-0.5 * ((x[:, None] - x[None]) / 1.5) ** 2)
    p = nefi.from_forward(a, a @ (x > 10), noise=0.01, budget=400, multiscale=True)
    r = p.solve(steps=20, lr=0.02)
    assert r["total_steps"] == 20 and [s["steps"] for s in r["stages"]] == [6, 14]
    lr = r["history"]["lr"]
    assert lr[0] == pytest.approx(0.02) and max(lr[6:]) == pytest.approx(0.01)
    with pytest.raises(fieldkit.Error, match="at least one step for each of the 2 stages, got 1"):
        p.solve(steps=1)


def test_estimate_noise_reads_white_noise_off_a_smooth_signal():
    # The reference's helper: sigma from the data alone (what noise="auto"
    # takes), over 1-D and 2-D signals smooth on the scale of a few cells.
    rng = np.random.default_rng(3)
    t = np.linspace(0, 1, 400)
    xx, yy = np.meshgrid(np.linspace(0, 1, 64), np.linspace(0, 1, 64))
    smooth2 = np.exp(-((xx - 0.5) ** 2 + (yy - 0.4) ** 2) / 0.05)
    ones, twos = [], []
    for _ in range(8):
        ones.append(nefi.estimate_noise(np.sin(6 * t) + 0.05 * rng.standard_normal(400)) / 0.05)
        twos.append(nefi.estimate_noise(smooth2 + 0.02 * rng.standard_normal((64, 64))) / 0.02)
    assert abs(np.mean(ones) - 1) < 0.06 and abs(np.mean(twos) - 1) < 0.04, (ones, twos)
    # Masked cells are left out: NaN there is fine, and a wild value there
    # does not move the estimate.
    y = smooth2 + 0.02 * rng.standard_normal((64, 64))
    mask = np.ones((64, 64))
    mask[:12] = 0
    wild, holes = y.copy(), y.copy()
    wild[:12] = 1e3
    holes[:12] = np.nan
    assert nefi.estimate_noise(wild, mask) == nefi.estimate_noise(holes, mask)
    assert abs(nefi.estimate_noise(holes, mask) / 0.02 - 1) < 0.1
    with pytest.raises(fieldkit.Error, match="real measured data, got dtype complex128"):
        nefi.estimate_noise(y + 0j)
    with pytest.raises(fieldkit.Error, match="finite data at observed cells"):
        nefi.estimate_noise(holes)
    with pytest.raises(fieldkit.Error, match="mask of the measurement's shape"):
        nefi.estimate_noise(y, mask=np.ones(3))
    with pytest.raises(fieldkit.Error, match=r"mask weights in \[0, 1\], got -1"):
        nefi.estimate_noise(y, mask=-np.ones((64, 64)))
    torch_y = torch.tensor(y, requires_grad=True)
    assert nefi.estimate_noise(torch_y) == nefi.estimate_noise(y)


def test_an_estimate_calling_most_of_the_data_noise_is_refused_naming_both_causes():
    # Random projections of a smooth field look like noise to the estimate,
    # and so does a weak signal under its noise: both refused, the message
    # naming both (it blamed smoothness alone), and noise= goes on.
    rng = np.random.default_rng(0)
    n = 64
    x = np.sin(np.linspace(0, 3, n))
    a = rng.standard_normal((n, n)) / np.sqrt(n)
    flat = np.full(n, 0.5) + 0.01 * rng.standard_normal(n)  # no contrast: noise alone
    for op, y in ((a, a @ x), (np.eye(n), flat)):
        with pytest.raises(fieldkit.Error, match=r"noise: expected for the automatic estimate, "
                                                 r"data whose spread .* mostly signal.*not smooth "
                                                 r"on that scale, or a signal weak against its "
                                                 r"noise"):
            nefi.from_forward(op, y, prior="unconstrained", representation="grid")
    p = nefi.from_forward(np.eye(n), flat, noise=0.01, prior="unconstrained",
                          representation="grid")
    assert not p.noise_estimated
