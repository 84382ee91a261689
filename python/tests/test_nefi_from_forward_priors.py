"""fieldkit.nefi.from_forward's priors: the exact ones and a known support,
a registered prior term (weighed and applied, and its misuse named), and
the dry run drawing each field within its prior."""
import numpy as np
import pytest
import torch

import fieldkit
import fieldkit.nefi as nefi
from test_nefi_from_forward import blur_problem, psnr


@pytest.fixture(autouse=True)
def one_thread():
    nefi.set_num_threads(1)


def test_exact_priors_and_a_known_support():
    # A 2-D blob through a separable blur: conserved, symmetric and
    # known_support hold exactly in the reconstruction; the support is an
    # array of the field's shape, or a dict per field.
    h, w = 12, 10
    yy, xx = np.meshgrid((np.arange(h) + 0.5) / h - 0.5, (np.arange(w) + 0.5) / w - 0.5,
                         indexing="ij")
    r2 = yy ** 2 + xx ** 2
    gt = np.exp(-r2 / 0.02)
    support = (r2 < 0.16).astype(float)

    def blur(n):
        i = np.arange(n)
        b = np.exp(-0.5 * (i[:, None] - i[None, :]) ** 2)
        return b / b.sum(1, keepdims=True)

    a = np.kron(blur(h), blur(w))
    y = a @ gt.ravel()
    p = nefi.from_forward(a, y, shape=(h, w), prior="conserved(20) + symmetric", noise=0.01,
                          budget="200", support=support)
    assert "known_support" in p.prior
    x = p.solve()["reconstruction"]
    assert x.shape == (h, w)
    assert np.all(x[support == 0] == 0)
    assert x.sum() == pytest.approx(20, abs=1e-4)
    np.testing.assert_allclose(x, x[::-1, :], atol=1e-6)
    np.testing.assert_allclose(x, x[:, ::-1], atol=1e-6)
    # binary: two values once annealing has sharpened the interface.
    i = np.arange(96)
    gt1 = ((i > 20) & (i < 50)).astype(float)
    b = blur(96)
    y1 = b @ gt1 + 0.02 * np.random.default_rng(0).standard_normal(96)
    x1 = nefi.from_forward(b, y1, prior="binary").solve()["reconstruction"]
    assert np.mean(np.minimum(x1, 1 - x1) < 0.05) > 0.9
    with pytest.raises(fieldkit.Error, match="support of the field's shape"):
        nefi.from_forward(a, y, shape=(h, w), noise=0.01, support=np.ones(5))
    with pytest.raises(fieldkit.Error, match="for a field of the problem"):
        nefi.from_forward(a, y, shape=(h, w), noise=0.01, support={"q": support})
    with pytest.raises(fieldkit.Error, match="known_support with a support mask"):
        nefi.from_forward(a, y, shape=(h, w), noise=0.01, prior="known_support")


def test_a_registered_prior_term_is_weighed_and_applied():
    """A pull toward a template, as numpy with its gradient and as torch:
    the cells the data never see follow it; without it they do not."""
    n = 64
    s = (np.arange(n) + 0.5) / n
    gt = 1 + 0.5 * np.sin(6 * s)
    keep = np.arange(n) < n // 2
    y = gt[keep]

    def fit(prior):
        p = nefi.from_forward(nefi.operators.sampling(keep), y, prior=prior, noise=0.01,
                              discrepancy=False)
        return p, p.solve()["reconstruction"]

    nefi.register_prior("pull", lambda x: float(np.mean((x - gt) ** 2)),
                        grad=lambda x: 2 * (x - gt) / n)
    nefi.register_prior("pull_torch", lambda x: torch.mean((x - torch.from_numpy(gt)) ** 2))
    try:
        problem, x = fit("nonnegative + pull")
        assert "pull" in problem.prior
        assert "pull_weight" in problem.decisions
        _, xt = fit("nonnegative + pull_torch")
        _, free = fit("nonnegative")
    finally:
        assert nefi.unregister_prior("pull") and nefi.unregister_prior("pull_torch")
    err = lambda v: np.sqrt(np.mean((v[n // 2:] - gt[n // 2:]) ** 2))  # noqa: E731
    assert err(x) < 0.1 and err(xt) < 0.1
    assert err(free) > 3 * err(x)
    with pytest.raises(fieldkit.Error, match="registered term"):
        nefi.from_forward(nefi.operators.sampling(keep), y, prior="nonnegative + pull")


def test_registered_prior_misuse_is_named():
    with pytest.raises(fieldkit.Error, match="built in"):
        nefi.register_prior("tv", lambda x: 0.0, grad=lambda x: 0 * x)
    nefi.register_prior("plain", lambda x: float(np.sum(x ** 2)))  # numpy without grad=
    nefi.register_prior("floats", lambda x: float((x ** 2).sum()))  # no torch scalar back
    nefi.register_prior("raises", lambda x: 1 / 0, grad=lambda x: x)
    nefi.register_prior("nan_grad", lambda x: float(np.sum(x ** 2)),
                        grad=lambda x: np.full_like(x, np.nan))
    with pytest.raises(fieldkit.Error, match="callable penalty .* for 'number', got int"):
        nefi.register_prior("number", 3)
    with pytest.raises(fieldkit.Error, match="got function and int"):
        nefi.register_prior("bad_grad", lambda x: 0.0, grad=3)
    try:
        a, gt, y = blur_problem(n=32)
        with pytest.raises(fieldkit.Error, match="write it with torch operations, or pass grad="):
            nefi.from_forward(a, y, prior="nonnegative + plain")
        with pytest.raises(fieldkit.Error, match="torch scalar"):
            nefi.from_forward(a, y, prior="nonnegative + floats").solve(steps=5)
        with pytest.raises(fieldkit.Error, match="prior term 'raises'.*ZeroDivisionError"):
            nefi.from_forward(a, y, prior="nonnegative + raises")
        # A non-finite gradient names its prior, not the solve's "non-finite loss".
        with pytest.raises(fieldkit.Error,
                           match="prior 'nan_grad': expected a finite gradient, got 32"):
            nefi.from_forward(a, y, prior="nonnegative + nan_grad").solve(steps=5)
    finally:
        for name in ("plain", "floats", "raises", "nan_grad"):
            nefi.unregister_prior(name)
    # A callback that is not callable is refused before the solve; one that
    # raises is named as the callback.
    p = nefi.from_forward(a, y, budget="10")
    with pytest.raises(fieldkit.Error, match="expected a callable callback, got int"):
        p.solve(callback=3)

    def boom(info):
        raise RuntimeError("boom")

    with pytest.raises(fieldkit.Error, match="solve callback: expected a callback that succeeds, "
                                             "got RuntimeError: boom"):
        p.solve(callback=boom)


def test_a_trainable_torch_module_trains_its_own_parameters_with_the_field():
    """A blur plus an unknown background b (an nn.Parameter): the field is
    zero outside a known support, so the cells there pin b; the module holds
    the fitted b after the solve, and each solve starts from the b given.
    Without trainable=True the module is frozen, as the reference's."""
    a, gt, _ = blur_problem(n=64, rel=0.0)
    support = np.zeros(64)
    support[8:56] = 1
    gt = gt * support

    class Blur(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.from_numpy(a)
            self.b = torch.nn.Parameter(torch.tensor(0.0, dtype=torch.float64))

        def forward(self, x):
            return self.a @ x + self.b

    y = a @ gt + 0.3 + 0.002 * np.random.default_rng(5).standard_normal(64)
    module = Blur()
    frozen = nefi.from_forward(module, y, prior="nonnegative + smooth", support=support,
                               noise=0.002, budget="40").solve()
    assert float(module.b.detach()) == 0.0 and len(frozen["operator_parameters"]) == 0
    with pytest.raises(fieldkit.Error, match="trainable True or False, got 'yes'"):
        nefi.from_forward(module, y, support=support, noise=0.002, trainable="yes")
    with pytest.raises(fieldkit.Error, match="trainable=True only with a torch.nn.Module forward"):
        nefi.from_forward(a, y, noise=0.002, trainable=True)  # a matrix: nothing to train
    problem = nefi.from_forward(module, y, prior="nonnegative + smooth", support=support,
                                noise=0.002, trainable=True)
    assert float(module.b.detach()) == 0.0  # the weighing probe's steps are undone
    out = problem.solve()
    b = float(module.b.detach())
    assert b == pytest.approx(0.3, abs=0.02)
    assert out["operator_parameters"][0] == pytest.approx(b)
    assert psnr(out["reconstruction"], gt) > 25
    with torch.no_grad():
        module.b.fill_(5.0)  # a solve starts from the value given to from_forward
    problem.solve()
    assert float(module.b.detach()) == pytest.approx(b, abs=1e-6)
    fixed = Blur()  # b frozen at 0: the background lands in the field
    fixed.b.requires_grad_(False)
    out_fixed = nefi.from_forward(fixed, y, prior="nonnegative + smooth", support=support,
                                  noise=0.002, trainable=True).solve()
    assert psnr(out_fixed["reconstruction"], gt) < psnr(out["reconstruction"], gt) - 10


def test_the_dry_run_draws_each_field_within_its_prior():
    """A model defined only where its prior's head puts the field (a square
    root, a diffusivity) is called only there, probe, dry run and its
    gradient's steps included: each field is drawn inside its prior's
    values, each step kept within its room (a float32 model's steps are
    1000x a float64 one's). An unconstrained field is drawn from a normal,
    and such a model is refused by name."""
    n = 12
    inside = {}

    def forward(x):
        lo, hi = inside["x"]
        assert lo <= x.min() and x.max() <= hi, (x.min(), x.max())
        return np.sqrt(np.maximum(x, 0)).astype(inside["dtype"])

    def vjp(x, g):
        return g / (2 * np.sqrt(x))

    y = np.sqrt(np.linspace(1, 2, n))
    for prior, lo, hi in [("positive", 0, np.inf), ("nonnegative + smooth", 0, np.inf),
                          ("bounded(0.001, 0.01)", 0.001, 0.01), ("binary", 0, 1),
                          ("phases(4, 1, 2)", 1, 4)]:
        for dtype in (np.float64, np.float32):
            inside.update(x=(lo, hi), dtype=dtype)
            nefi.from_forward(forward, y.astype(dtype), vjp=vjp, prior=prior, noise=1e-3)
    inside.update(x=(-np.inf, np.inf), dtype=np.float64)
    with pytest.raises(fieldkit.Error, match="finite forward outputs on a random field within "
                                             "the prior"):
        with np.errstate(invalid="ignore"):
            nefi.from_forward(lambda x: np.sqrt(x), y, vjp=vjp, noise=1e-3)

    def two(xs):
        assert xs["D"].min() >= 0.001 and xs["D"].max() <= 0.01
        return np.concatenate([np.sqrt(xs["D"]), xs["c"]])

    def two_vjp(xs, g):
        return {"D": g[:n] / (2 * np.sqrt(xs["D"])), "c": g[n:]}

    # A wide unconstrained field beside a narrow one: the narrow one's steps
    # keep to its own room.
    nefi.from_forward(lambda xs: two({"D": xs["D"], "c": 1000 * xs["c"]}), np.ones(2 * n),
                      shape=(n,), vjp=lambda xs, g: {**two_vjp(xs, g), "c": 1000 * g[n:]},
                      noise=1e-3, prior={"D": "bounded(0.001, 0.01)", "c": "unconstrained"})
    with pytest.raises(fieldkit.Error, match="prior of field 'c'"):
        nefi.from_forward(two, np.ones(2 * n), shape=(n,), vjp=two_vjp, noise=1e-3,
                          prior={"D": "positive", "c": "wiggly"})


def test_the_head_scale_search_calls_the_model_on_the_priors_values_only():
    """A model defined only where a nonnegative prior puts the field (a square
    root that raises below 0): the head-scale search stepped below 0, the
    refused steps left a scale of 0.1 and the fit underfit (chi 4.7)."""
    n = 32
    gt = np.zeros(n)
    gt[8:14] = 1
    y = np.sqrt(gt) + 0.01 * np.random.default_rng(0).standard_normal(n)
    calls = []

    def forward(x):
        x = np.ravel(x)
        calls.append(x.min())
        if x.min() < 0:
            raise ValueError("negative input")
        return np.sqrt(x)

    def vjp(x, g):
        return 0.5 / np.sqrt(np.maximum(np.ravel(x), 1e-12)) * g

    p = nefi.from_forward(forward, y, vjp=vjp, shape=(n,), prior="nonnegative", noise=0.01)
    assert p.head_scale == pytest.approx(1.0)
    assert min(calls) >= 0


def test_diagnose_gives_the_hessians_condition_as_hessian_spectrum_does():
    """Not positive definite: inf from both (diagnose's came through its JSON
    as None)."""
    shape = (12, 12)
    op = nefi.operators.gaussian_blur(shape, 1.0)
    gt = np.zeros(shape)
    gt[3:7, 4:9] = 1
    y = op(gt) + 0.01 * np.random.default_rng(0).standard_normal(shape)
    p = nefi.from_forward(op, y, noise=0.01, prior="nonnegative")
    spectrum = p.hessian_spectrum(k=2, n_iter=6)
    diagnosed = p.diagnose(hessian=2, hessian_iter=6, plot=False)["hessian"]
    assert diagnosed["condition"] == spectrum["condition"]
    assert isinstance(diagnosed["condition"], float)
