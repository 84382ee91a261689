"""fieldkit.nefi.diagnose and autotune: an instance's or a from_forward
problem's linearized operator (singular values against numpy's SVD, the
exact sensitivity against the Jacobian's column norms, the same numbers as
`nefi diagnose`), and pilot-solve tuning whose config invert() re-runs."""
import json
import os
import subprocess

import numpy as np
import pytest
import torch

import fieldkit
import fieldkit.nefi as nefi

ROOT = os.environ.get("FIELDKIT_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("NEFI_CLI", os.path.join(ROOT, "build", "bin", "nefi"))
SMOKE = os.path.join(ROOT, "configs", "toy1d_smoke.yaml")


@pytest.fixture(autouse=True)
def one_thread():
    nefi.set_num_threads(1)


def psnr(x, gt):
    return 10 * np.log10(np.ptp(gt) ** 2 / np.mean((x - gt) ** 2))


def blur(n=32, width=2.0):
    i = np.arange(n)
    a = np.exp(-0.5 * ((i[:, None] - i[None, :]) / width) ** 2)
    return a / a.sum(1, keepdims=True)


def box_data(a, seed=0):
    x = np.zeros(a.shape[1])
    x[10:20] = 1.0
    return a @ x + 0.01 * np.random.default_rng(seed).standard_normal(a.shape[0])


def test_a_matrix_problem_has_the_matrix_singular_values_and_column_norms():
    a = blur()
    p = nefi.from_forward(a, box_data(a), prior="nonnegative")
    d = nefi.diagnose(p, k=6, n_iter=32, exact_sensitivity=True)
    s = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(d["singular_values"], s[:6], rtol=1e-8)
    assert d["condition"] == pytest.approx(s[0] / s[5], rel=1e-8)
    assert d["jvp_mode"].startswith("exact")
    np.testing.assert_allclose(d["sensitivity"]["map"], (a ** 2).sum(0), rtol=1e-10)
    assert d["sensitivity"]["exact"] and "file" not in d["sensitivity"]
    assert d["field_shape"] == [32] and d["data_shape"] == [32]
    assert not d["gauges"]["constant_is_gauge"]
    # Data of first differences do not see the field's mean: a gauge.
    diff = np.eye(32, k=1)[:31] - np.eye(32)[:31]
    g = nefi.from_forward(diff, diff @ np.sin(np.arange(32) / 5), noise=0.01).diagnose(k=2)
    assert g["gauges"]["constant_is_gauge"] and g["gauges"]["constant_visibility"] < 1e-12
    assert d["at"].startswith("the start") and "Singular values" in d["report"]


def test_a_nonlinear_model_is_linearized_where_asked():
    a = blur(24)
    x0 = np.linspace(0.2, 1.0, 24)
    y = (a @ x0) ** 2

    def vjp(x, g):
        return a.T @ (2 * (a @ x) * g)

    p = nefi.from_forward(lambda x: (a @ x) ** 2, y, vjp=vjp, prior="positive")
    d = p.diagnose(at=x0, k=4, n_iter=24, exact_sensitivity=True)
    jac = 2 * (a @ x0)[:, None] * a  # J = 2 diag(A x) A
    np.testing.assert_allclose(d["singular_values"], np.linalg.svd(jac, compute_uv=False)[:4],
                               rtol=1e-5)  # J v by central differences
    np.testing.assert_allclose(d["sensitivity"]["map"], (jac ** 2).sum(0), rtol=1e-4)
    assert d["at"] == "the given field" and "central" in d["jvp_mode"]
    assert d["data_fit"]["residual_rms"] < 1e-6  # the truth of noiseless data (kept in f32)


def test_diagnose_and_refine_take_tensors_by_value_and_refuse_nonsense():
    a = blur(24)
    x0 = np.linspace(0.2, 1.0, 24)
    p = nefi.from_forward(a, a @ x0, prior="positive")
    t = torch.tensor(x0, requires_grad=True)
    np.testing.assert_allclose(p.diagnose(at=t, k=2, n_iter=8, plot=False)["singular_values"],
                               p.diagnose(at=x0, k=2, n_iter=8, plot=False)["singular_values"])
    for call, message in [
            (lambda: p.diagnose(hessian=-1), r"hessian a whole number in \[0"),
            (lambda: p.diagnose(k=2.5), "k a whole number, got 2.5"),
            (lambda: p.diagnose(at=np.full(24, np.nan)), "finite at, got 24 non-finite"),
            (lambda: p.refine_edges(x0, seed=1.5), "seed a whole number, got 1.5"),
            (lambda: p.refine_edges({"fields": {}}), "a dict of \\['fields'\\]")]:
        with pytest.raises(fieldkit.Error, match=message):
            call()


def test_a_solved_problem_is_diagnosed_at_its_reconstruction(tmp_path):
    a = blur()
    p = nefi.from_forward(a, box_data(a), prior="nonnegative")
    start = p.diagnose()
    r = p.solve()
    d = p.diagnose(at=r, out=tmp_path / "d")
    assert d["data_fit"]["misfit_ratio"] < start["data_fit"]["misfit_ratio"]
    assert d["data_fit"]["misfit_ratio"] == pytest.approx(r["data_fit"]["discrepancy_ratio"],
                                                          rel=1e-3)
    names = sorted(os.listdir(tmp_path / "d"))
    assert names == ["diagnostics.json", "diagnostics.md", "diagnostics.png", "sensitivity.npy"]
    np.testing.assert_allclose(np.load(tmp_path / "d" / "sensitivity.npy"),
                               d["sensitivity"]["map"])


def test_an_instance_gives_the_numbers_nefi_diagnose_writes(tmp_path):
    if not os.path.exists(CLI):
        pytest.skip("the nefi CLI is not built")
    d = nefi.diagnose(SMOKE, seed=1, probes=4, k=3, n_iter=8)
    subprocess.run([CLI, "diagnose", SMOKE, "--seed", "1", "--probes", "4", "--k", "3",
                    "--n-iter", "8", "--no-plot", "-o", str(tmp_path)], check=True,
                   capture_output=True)
    with open(tmp_path / "diagnostics.json") as f:
        cli = json.load(f)
    assert d["singular_values"] == pytest.approx(cli["singular_values"], rel=1e-12)
    assert d["sensitivity"]["blind_fraction"] == cli["sensitivity"]["blind_fraction"]
    assert d["data_fit"]["residual_rms"] == pytest.approx(cli["data_fit"]["residual_rms"],
                                                          rel=1e-12)
    np.testing.assert_allclose(d["sensitivity"]["map"], np.load(tmp_path / "sensitivity.npy"))
    assert (d["instance"], d["method"], d["seed"]) == ("toy1d", "neural", 1)


def test_diagnose_raises_its_lanczos_steps_to_k_as_the_cli_does():
    # k above the default 24 steps was refused; the CLI raised them to k.
    d = nefi.diagnose(SMOKE, probes=2, k=30, plot=False)
    assert len(d["singular_values"]) == 30
    with pytest.raises(fieldkit.Error, match="n_iter"):
        nefi.diagnose(SMOKE, probes=2, k=30, n_iter=20)


def test_an_instance_solved_first_fits_its_data_better():
    start = nefi.diagnose(SMOKE, probes=2, k=2, n_iter=4)
    solved = nefi.diagnose(SMOKE, solve=True, probes=2, k=2, n_iter=4)
    assert solved["at"].startswith("the solution")
    assert solved["data_fit"]["residual_rms"] < 0.5 * start["data_fit"]["residual_rms"]


def test_diagnose_reports_the_loss_hessian_when_asked():
    # An instance: the Hessian's ends in the dict and its report; solved
    # first, at the trained field's parameters (another curvature).
    start = nefi.diagnose(SMOKE, probes=2, k=2, n_iter=4, hessian=2, hessian_iter=10)
    assert len(start["hessian"]["largest"]) == 2 and start["hessian"]["largest"][0] > 0
    assert "## Loss Hessian" in start["report"]
    solved = nefi.diagnose(SMOKE, solve=True, probes=2, k=2, n_iter=4, hessian=2,
                           hessian_iter=10)
    assert solved["hessian"]["largest"] != start["hessian"]["largest"]
    assert "hessian" not in nefi.diagnose(SMOKE, probes=2, k=2, n_iter=4)
    # A from_forward problem: its hessian_spectrum at the same point.
    a = blur()
    p = nefi.from_forward(a, box_data(a), prior="unconstrained", representation="grid")
    r = p.solve()
    d = nefi.diagnose(p, at=r, k=2, n_iter=8, hessian=1, hessian_iter=32)
    assert d["hessian"]["largest"] == p.hessian_spectrum(at=r, k=1, n_iter=32)["largest"]
    assert "## Loss Hessian" in d["report"]
    # The start's (a positive field's Hessian moves with its parameters).
    q = nefi.from_forward(a, box_data(a) + 0.5, prior="positive", representation="grid")
    s = nefi.diagnose(q, k=2, n_iter=8, hessian=1, hessian_iter=32)
    assert s["hessian"]["largest"] == q.hessian_spectrum(k=1, n_iter=32)["largest"]
    assert s["hessian"]["largest"] != nefi.diagnose(q, at=q.solve(), k=2, n_iter=8, hessian=1,
                                                    hessian_iter=32)["hessian"]["largest"]
    with pytest.raises(fieldkit.Error, match="hessian="):
        nefi.diagnose(p, at=np.zeros(32), hessian=1)
    with pytest.raises(fieldkit.Error, match="--hessian"):
        nefi.diagnose(SMOKE, hessian=4, hessian_iter=2)
    if not fieldkit.cuda_available():  # a device this process cannot use, by name
        with pytest.raises(fieldkit.Error, match="hessian_spectrum device"):
            q.hessian_spectrum(k=1, n_iter=4, device="cuda")
    with pytest.raises(fieldkit.Error, match="device"):
        q.hessian_spectrum(k=1, n_iter=4, device="gpu")
    # Counts and seeds are whole numbers in range, by name (1.9 ran as 1, a
    # negative seed gave the binding's TypeError).
    for kw, name in [({"k": 1.9}, "k"), ({"k": True}, "k"), ({"n_iter": 4.7}, "n_iter"),
                     ({"seed": -1}, "seed"), ({"seed": 2 ** 64}, "seed")]:
        with pytest.raises(fieldkit.Error, match=f"hessian_spectrum: expected {name} a whole"):
            q.hessian_spectrum(**dict({"k": 1, "n_iter": 4}, **kw))


def test_bad_diagnose_requests_say_what_was_expected():
    a = blur()
    p = nefi.from_forward(a, box_data(a), prior="nonnegative")
    with pytest.raises(fieldkit.Error, match="n_iter"):
        p.diagnose(k=8, n_iter=4)
    with pytest.raises(fieldkit.Error, match=r"a field of shape \[32\]"):
        p.diagnose(at=np.zeros(31))
    with pytest.raises(fieldkit.Error, match="a field array or a solve"):
        p.diagnose(at={"fields": {}})
    with pytest.raises(ValueError, match="at= only with a from_forward"):
        nefi.diagnose(SMOKE, at=np.zeros(3))
    with pytest.raises(ValueError, match="expected only at="):
        nefi.diagnose(p, solve=True)
    two = nefi.from_forward(lambda f: f["u"] + f["v"], box_data(a), shape=(32,),
                            vjp=lambda f, g: {"u": g, "v": g},
                            prior={"u": "nonnegative", "v": "nonnegative"})
    with pytest.raises(fieldkit.Error, match="one field"):
        two.diagnose()
    with pytest.raises(fieldkit.Error, match="method"):
        nefi.diagnose(SMOKE, method="no_such_method")
    # A device this process cannot use is refused before any product (a
    # Python matrix model has no device path either: refused by name on a GPU).
    with pytest.raises(fieldkit.Error, match="cuda:99"):
        p.diagnose(device="cuda:99")
    with pytest.raises(fieldkit.Error, match="cuda:99"):
        nefi.diagnose(SMOKE, device="cuda:99")


def test_autotune_chooses_by_pilots_and_its_config_reruns(tmp_path):
    t = nefi.autotune(SMOKE, level="quick", out=tmp_path / "t")
    keys = [d["key"] for d in t["decisions"]]
    assert keys[0] == "lr" and len(keys) >= 2
    for d in t["decisions"]:
        assert d["chosen"] in [p["value"] for p in d["evidence"]]
    assert t["noise_std"] > 0 and "# Autotune" in t["report"]
    assert "tuned_config.yaml" in t["report"]  # written to out=
    assert "tuned_config.yaml" not in nefi.autotune(SMOKE, level="quick")["report"]
    assert sorted(os.listdir(tmp_path / "t")) == ["autotune.json", "autotune.md",
                                                 "tuned_config.yaml"]
    with open(tmp_path / "t" / "tuned_config.yaml") as f:
        assert f.read().endswith(t["tuned_config_yaml"])
    tuned = nefi.invert(str(tmp_path / "t" / "tuned_config.yaml"))["neural"]
    lr = next(d["chosen"] for d in t["decisions"] if d["key"] == "lr")
    assert f"lr: {lr}" in t["tuned_config_yaml"]
    assert np.isfinite(tuned["metrics"]["psnr"])
    with pytest.raises(fieldkit.Error, match="thorough"):
        nefi.autotune(SMOKE, level="fast")


def mri_problem(n=32, seed=3):
    """30 % of a piecewise-constant phantom's k-space, complex noise 0.01."""
    t = (np.arange(n) + 0.5) / n
    yy, xx = np.meshgrid(t, t, indexing="ij")
    gt = np.zeros((n, n))
    gt[(yy > 0.15) & (yy < 0.45) & (xx > 0.1) & (xx < 0.55)] = 0.5
    gt[(xx - 0.65) ** 2 + (yy - 0.65) ** 2 < 0.04] = 1.0
    rng = np.random.default_rng(seed)
    f = np.fft.fftfreq(n) * 2
    mask = (np.hypot(f[:, None], f[None, :]) < 0.15) | (rng.random((n, n)) < 0.25)
    op = nefi.operators.fourier_sampling(mask)
    m = int(mask.sum())
    y = op(gt) + 0.01 * (rng.standard_normal(m) + 1j * rng.standard_normal(m))
    return op, y, gt


def test_a_from_forward_problem_is_tuned_to_the_strength_its_data_allow():
    op, y, gt = mri_problem()
    p = nefi.from_forward(op, y, prior="nonnegative + tv", representation="grid")
    t = nefi.autotune(p, level="quick", ground_truth=gt)
    assert [d["key"] for d in t["decisions"]] == ["lr", "tv"]
    tv = t["decisions"][1]
    assert [q["value"] for q in tv["evidence"]] == ["0.1", "1", "10"]
    assert all("psnr" in q["ground_truth_not_used"] for q in tv["evidence"])
    tuned = t["problem"]
    assert tuned.prior == f"nonnegative + tv({tv['chosen']})"
    assert p.prior == "nonnegative + tv(1)"  # the problem tuned is left as it was
    gain = psnr(tuned.solve()["reconstruction"], gt) - psnr(p.solve()["reconstruction"], gt)
    assert gain > 2.0, t["report"]
    assert "## tv: 1 -> " in t["report"]


def test_a_torch_module_is_left_with_its_given_parameters():
    torch = pytest.importorskip("torch")
    n = 24

    class Shifted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.b = torch.nn.Parameter(torch.tensor(0.1, dtype=torch.float64))

        def forward(self, x):
            return x + self.b

    model = Shifted()
    y = 0.9 + 0.3 * np.sin(0.4 * np.arange(n)) + 0.01 * np.random.default_rng(6).standard_normal(n)
    p = nefi.from_forward(model, y, shape=(n,), prior="nonnegative + smooth", budget="40",
                          trainable=True)
    t = p.autotune()
    assert float(model.b) == pytest.approx(0.1)
    assert t["problem"].solve()["operator_parameters"][0] != pytest.approx(0.1)


def test_bad_autotune_requests_say_what_was_expected():
    op, y, _ = mri_problem()
    p = nefi.from_forward(op, y, prior="nonnegative + tv", representation="grid", budget="20")
    with pytest.raises(fieldkit.Error, match="quick, standard or thorough"):
        p.autotune(level="fast")
    with pytest.raises(ValueError, match="only level=, ground_truth= and device="):
        nefi.autotune(p, compare=True)
    with pytest.raises(ValueError, match="ground_truth= and device= only with a from_forward"):
        nefi.autotune(SMOKE, ground_truth=np.zeros(3))
    with pytest.raises(fieldkit.Error, match="truth"):
        p.autotune(ground_truth=np.zeros(5))


def by_unit(rows):
    return {(r["method"], r["class"], r["sample"], r["seed"]): r["metrics"] for r in rows}


def test_a_sweep_row_is_the_campaign_of_its_setting():
    cfg = {"steps": [20, 20]}
    s = nefi.sweep(SMOKE, "lr", [0.003, 0.03], config=cfg, n=1, seeds=(0,), classes=["bumps"])
    assert [v["label"] for v in s["variants"]] == ["lr=0.003", "lr=0.03"]
    assert sorted(r["method"] for r in s["rows"]) == ["lr=0.003", "lr=0.03"]
    for lr in (0.003, 0.03):
        b = nefi.bench(SMOKE, dict(cfg, lr=lr), methods=["neural"], n=1, seeds=(0,),
                       classes=["bumps"])
        want = {(f"lr={lr}",) + k[1:]: m for k, m in by_unit(b).items()}
        got = {k: m for k, m in by_unit(s["rows"]).items() if k[0] == f"lr={lr}"}
        assert got == want
    assert "| lr=0.03 |" in s["summary"] and "Paired differences" in s["summary"]


def test_an_ablation_pairs_each_row_with_the_full_method():
    a = nefi.ablate(SMOKE, ["no_annealing", "no_pe"], config={"steps": [20, 20]}, n=1,
                    seeds=(0,), classes=["bumps"])
    assert [v["label"] for v in a["variants"]] == ["full", "-annealing", "-pe"]
    assert a["variants"][2]["modifiers"] == ["no_annealing", "no_pe"]  # cumulative
    assert all(r["error"] == "" for r in a["rows"])
    i = nefi.ablate(SMOKE, ["no_annealing", "no_pe"], config={"steps": [20, 20]}, n=1,
                    seeds=(0,), classes=["bumps"], independent=True)
    assert i["variants"][2]["modifiers"] == ["no_pe"]
    with pytest.raises(fieldkit.Error, match="no_such_modifier"):
        nefi.ablate(SMOKE, ["no_such_modifier"], n=1, seeds=(0,))
    with pytest.raises(fieldkit.Error, match="no_such_key"):
        nefi.sweep(SMOKE, "no_such_key", [1, 2], n=1, seeds=(0,))


def test_a_torch_module_is_diagnosed_with_the_parameters_of_its_field():
    torch = pytest.importorskip("torch")
    n = 16

    class Scaled(torch.nn.Module):  # J = b I: every singular value is b
        def __init__(self):
            super().__init__()
            self.b = torch.nn.Parameter(torch.tensor(0.5, dtype=torch.float64))

        def forward(self, x):
            return self.b * x

    model = Scaled()
    y = 0.6 + 0.2 * np.cos(0.5 * np.arange(n)) + 0.01 * np.random.default_rng(9).standard_normal(n)
    p = nefi.from_forward(model, y, shape=(n,), prior="positive", budget="60", trainable=True)
    r = p.solve()
    fitted = float(r["operator_parameters"][0])
    assert fitted != pytest.approx(0.5, abs=1e-3)
    assert float(model.b) == pytest.approx(fitted)  # the module keeps the fit
    start = p.diagnose(k=1, n_iter=4)
    at_fit = p.diagnose(at=r, k=1, n_iter=4)
    assert start["singular_values"][0] == pytest.approx(0.5, rel=1e-5)
    assert at_fit["singular_values"][0] == pytest.approx(abs(fitted), rel=1e-4)
    assert float(model.b) == pytest.approx(fitted)  # and still does


def test_from_forward_problems_of_one_model_are_solved_together():
    op, _, gt = mri_problem(24)
    rng = np.random.default_rng(4)
    m = op(gt).size
    truths = [gt * (1 + 0.3 * k) for k in range(3)]
    ys = [op(t) + 0.01 * (rng.standard_normal(m) + 1j * rng.standard_normal(m)) for t in truths]
    ps = [nefi.from_forward(op, y, prior="nonnegative + tv", representation="grid") for y in ys]
    rs = nefi.batch_invert(ps)
    assert len(rs) == 3
    for r, t, p in zip(rs, truths, ps):
        assert r["error"] == "" and r["batch_size"] == 3
        assert r["field_parameters"] is None  # the batch's start, not the problem's
        assert r["reconstruction"].shape == (24, 24)
        assert "the batch's shared start" in r["report"]
        # Not the problem's own solve: the batch starts it at the shared
        # constant (-1.7 to +0.9 dB here; auto_batch_test.cpp checks that a
        # batched result is the rebuilt problem's own solve).
        alone = psnr(p.solve()["reconstruction"], t)
        zero_filled = psnr(op.adjoint(op(t)), t)
        got = psnr(r["reconstruction"], t)
        assert got > alone - 2.5 and got > zero_filled + 3, (got, alone, zero_filled)
    with pytest.raises(fieldkit.Error, match="Python functions runs one field per call"):
        a = blur()
        nefi.batch_invert([nefi.from_forward(a, box_data(a)), nefi.from_forward(a, box_data(a))])
    with pytest.raises(ValueError, match="got seeds$"):
        nefi.batch_invert(ps, seeds=(0, 1, 2), device="cuda")
    if not fieldkit.cuda_available():  # refused before any problem is rebuilt
        with pytest.raises(fieldkit.Error, match=r"batch_invert device: expected cpu.*got cuda:0"):
            nefi.batch_invert(ps, device="cuda")
    with pytest.raises(ValueError, match="from_forward problems"):
        nefi.batch_invert([ps[0], "toy1d"])


def test_the_loss_hessian_of_a_linear_model_on_a_grid_field():
    # x = s theta + c (s the head's scale), L = w mean((A x - y)^2):
    # H = (2 w / N) s^2 A^T A wherever it is taken.
    a = blur()
    p = nefi.from_forward(a, box_data(a), prior="unconstrained", representation="grid")
    w = float(p.decisions["data_weight"]["value"])
    s = p.head_scale
    assert s == pytest.approx(float(p.decisions["head_scale"]["value"]), rel=1e-3)
    want = 2 * w / 32 * s * s * np.linalg.svd(a, compute_uv=False)[0] ** 2
    start = p.hessian_spectrum(k=1, n_iter=32)
    assert start["parameters"] == 32
    # the weight is read back from a 4-digit decision, hence 2e-3
    assert start["largest"][0] == pytest.approx(want, rel=2e-3)
    solved = p.hessian_spectrum(at=p.solve(), k=1, n_iter=32)
    assert solved["largest"][0] == pytest.approx(want, rel=2e-3)
    # A positive field (x = s exp(theta)): H moves with theta, so at= counts.
    q = nefi.from_forward(a, box_data(a) + 0.5, prior="positive", representation="grid")
    r = q.solve()
    here = q.hessian_spectrum(at=r, k=1, n_iter=32)["largest"][0]
    assert here == pytest.approx(
        q.hessian_spectrum(at=r["field_parameters"], k=1, n_iter=32)["largest"][0], rel=1e-9)
    assert here != pytest.approx(q.hessian_spectrum(k=1, n_iter=32)["largest"][0], rel=0.05)
    with pytest.raises(fieldkit.Error, match="field_parameters"):
        p.hessian_spectrum(at={"reconstruction": np.zeros(32)})
    with pytest.raises(fieldkit.Error, match="a solve's field_parameters"):
        p.hessian_spectrum(at=np.zeros(5))


def test_repeated_singular_values_are_each_reported():
    """Sampling and Fourier sampling have every singular value 1: the
    bidiagonalisation restarts past each breakdown, so diagnose reports k
    ones and a condition of 1 (it reported [1, 0] and a condition of 1e160
    before), as numpy's SVD of the dense matrix says."""
    rng = np.random.default_rng(0)
    A = np.eye(16)[:6]
    d = nefi.from_forward(A, A @ rng.random(16), noise=0.01).diagnose(k=4, n_iter=8)
    np.testing.assert_allclose(d["singular_values"], np.ones(4), atol=1e-12)
    assert d["condition"] == pytest.approx(1.0)
    F = nefi.operators.fourier_sampling(rng.random((12, 12)) < 0.3)
    d = nefi.from_forward(F, F(rng.random((12, 12))), noise=0.01).diagnose(k=8, n_iter=24)
    dense = np.stack([F(e.reshape(12, 12)).ravel() for e in np.eye(144)], 1)
    np.testing.assert_allclose(d["singular_values"], np.linalg.svd(dense, compute_uv=False)[:8],
                               atol=1e-10)
