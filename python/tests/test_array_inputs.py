"""Arrays as nefi's Python layer reads them: a torch tensor (one that
requires grad, marked negated or conjugated, or bf16) wherever its siblings
take one, complex values refused rather than cast to their real part, and a
0-d array kept 0-d so that the engine's shape checks name ()."""
import numpy as np
import pytest
import torch

import fieldkit
import fieldkit.nefi as nefi
from fieldkit._host import host_array

ops = nefi.operators


@pytest.fixture(autouse=True)
def one_thread():
    nefi.set_num_threads(1)


def small_integer_problem():
    """A two-fold upsampling matrix and a measurement of a ramp plus +-0.5
    "noise", one cell (15) an outlier: halves and whole numbers, exact in
    bf16, so a bf16 tensor of them is the same data."""
    a = np.zeros((20, 10))
    a[np.arange(20), np.arange(20) // 2] = 1
    y = a @ (4.0 * np.arange(10)) + np.random.default_rng(0).choice([-0.5, 0.5], 20)
    y[15] = 100
    return a, y


def negated_view(v):
    """v's values as a tensor torch only marks negated (.numpy() refuses it)."""
    t = torch.tensor(-1j * np.asarray(v)).conj().imag
    assert t.is_neg()
    return t


def conjugated_view(v):
    """complex v's values as a tensor torch only marks conjugated."""
    t = torch.tensor(np.conj(v)).conj()
    assert t.is_conj()
    return t


REAL_TENSORS = {
    "requires_grad": lambda v: torch.tensor(v, requires_grad=True),
    "negated_view": negated_view,
    "bf16": lambda v: torch.tensor(v).bfloat16(),
}


@pytest.mark.parametrize("kind", sorted(REAL_TENSORS))
def test_host_array_reads_tensors_numpy_refuses(kind):
    v = np.array([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(host_array(REAL_TENSORS[kind](v)), v)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_host_array_widens_complex32():
    z = torch.tensor([1 + 2j, -3 + 0.5j]).to(torch.complex32)
    np.testing.assert_array_equal(host_array(z), np.array([1 + 2j, -3 + 0.5j]))


@pytest.mark.parametrize("kind", sorted(REAL_TENSORS))
def test_from_forward_reads_a_tensor_measurement_as_estimate_noise_does(kind):
    a, y = small_integer_problem()
    t = REAL_TENSORS[kind](y)
    assert nefi.estimate_noise(t) == nefi.estimate_noise(y)
    p = nefi.from_forward(a, t, representation="grid", budget=20)
    assert p.noise_std == nefi.from_forward(a, y, representation="grid", budget=20).noise_std


def test_from_forward_reads_a_conjugated_complex_measurement():
    rng = np.random.default_rng(1)
    op = ops.fourier_sampling(rng.random((6, 5)) < 0.6)
    y = op(rng.random((6, 5)))
    p = nefi.from_forward(op, conjugated_view(y), (6, 5), noise=0.01, representation="grid",
                          budget=20)
    assert p.noise_std == 0.01


@pytest.mark.parametrize("kind", sorted(REAL_TENSORS))
def test_from_forward_reads_a_tensor_mask(kind):
    a, y = small_integer_problem()
    mask = np.ones(20)
    mask[15] = 0  # the outlier left out: the estimate changes
    kw = dict(representation="grid", budget=20)
    got = nefi.from_forward(a, y, mask=REAL_TENSORS[kind](mask), **kw).noise_std
    assert got == nefi.from_forward(a, y, mask=mask, **kw).noise_std
    assert got != nefi.from_forward(a, y, **kw).noise_std


def test_from_forward_mask_checks_keep_their_wording_for_tensors():
    a, y = small_integer_problem()
    with pytest.raises(fieldkit.Error, match="expected real mask weights in \\[0, 1\\], got "
                                             "complex ones"):
        nefi.from_forward(a, y, noise=0.01, mask=torch.ones(20, dtype=torch.complex128))
    with pytest.raises(fieldkit.Error, match="expected a mask of the measurement's shape"):
        nefi.from_forward(a, y, noise=0.01, mask=torch.ones(19, requires_grad=True))
    with pytest.raises(fieldkit.Error, match="expected mask weights in \\[0, 1\\], got 2.0"):
        nefi.from_forward(a, y, noise=0.01, mask=2 * torch.ones(20, requires_grad=True))


def test_from_forward_reads_a_tensor_support():
    a, y = small_integer_problem()
    p = nefi.from_forward(a, y, noise=0.01, representation="grid", budget=20,
                          support=torch.ones(10, requires_grad=True))
    assert p.noise_std == 0.01


@pytest.fixture(scope="module")
def grid_problem():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((20, 10))
    x = rng.random(10)
    p = nefi.from_forward(a, a @ x, noise=0.01, representation="grid", budget=20)
    return p, x, np.asarray(p.solve()["field_parameters"])


def test_hessian_spectrum_refuses_a_complex_at_as_diagnose_does(grid_problem):
    p, x, fp = grid_problem
    with pytest.raises(fieldkit.Error, match="ForwardProblem.diagnose: expected a real at, got "
                                             "complex values"):
        p.diagnose(at=x + 1j, k=2)
    with pytest.raises(fieldkit.Error, match="ForwardProblem.hessian_spectrum: expected a real "
                                             "at, got complex values"):
        p.hessian_spectrum(at=fp + 5j, k=2, n_iter=4)


def test_hessian_spectrum_reads_a_tensor_at(grid_problem):
    p, _, fp = grid_problem
    got = p.hessian_spectrum(at=torch.tensor(fp, requires_grad=True), k=2, n_iter=4)
    assert got["largest"] == p.hessian_spectrum(at=fp, k=2, n_iter=4)["largest"]


def test_autotune_refuses_a_complex_ground_truth_as_solve_does(grid_problem):
    p, x, _ = grid_problem
    with pytest.raises(fieldkit.Error, match="ForwardProblem.solve: expected a real ground "
                                             "truth, got complex values"):
        p.solve(ground_truth=x + 1j)
    with pytest.raises(fieldkit.Error, match="ForwardProblem.autotune: expected a real ground "
                                             "truth, got complex values"):
        p.autotune(level="quick", ground_truth=x + 1j)


def test_autotune_reads_a_tensor_ground_truth(grid_problem):
    p, x, _ = grid_problem
    got = p.autotune(level="quick", ground_truth=torch.tensor(x, requires_grad=True))
    assert got["noise_std"] == p.autotune(level="quick", ground_truth=x)["noise_std"]


@pytest.mark.parametrize("make", [ops.sampling, ops.fourier_sampling,
                                  lambda m: ops.fourier_sampling(m, centered=True)])
def test_a_0d_mask_is_refused_by_its_shape(make):
    with pytest.raises(fieldkit.Error, match="1-3 axes\\), got \\[\\]"):
        make(np.float64(1))


def test_a_0d_field_is_named_as_0d():
    s = ops.sampling(np.ones(4))
    with pytest.raises(fieldkit.Error, match="expected a field of shape .*, got \\[\\]"):
        s(np.float64(1))
    with pytest.raises(fieldkit.Error, match="got \\[\\]"):
        s.adjoint(np.float64(1))


def test_estimate_noise_names_a_0d_measurement_as_0d():
    with pytest.raises(fieldkit.Error, match="estimate_noise: expected measured data of at "
                                             "least one axis .*got shape \\(\\)"):
        nefi.estimate_noise(np.float64(3))


def test_fourier_sampling_vjp_names_a_0d_cotangent():
    op = ops.fourier_sampling(np.ones((4, 4)))
    with pytest.raises(fieldkit.Error, match="fourier_sampling.vjp: expected complex data of "
                                             "the operator's output shape .*got shape \\(\\)"):
        op.vjp(np.zeros((4, 4)), np.complex128(1))


def test_advection_diffusion_names_a_0d_sensor_mask_and_release():
    with pytest.raises(fieldkit.Error, match="sensor mask of the grid's shape \\[8\\], got \\[\\]"):
        ops.advection_diffusion((8,), [0.1], velocity=[0.5], sensors=np.float64(1))
    with pytest.raises(fieldkit.Error, match="release of the grid's shape \\[8\\].*got \\[\\]"):
        ops.advection_diffusion((8,), [0.1], velocity=[0.5], unknown="diffusivity",
                                release=np.float64(1))


def test_advection_diffusion_reads_tensor_inputs():
    rg = lambda v: torch.tensor(v, requires_grad=True)  # noqa: E731
    op = ops.advection_diffusion((8,), [0.1], velocity=[rg(np.full(8, 0.5))],
                                 sensors=rg(np.ones(8)))
    ref = ops.advection_diffusion((8,), [0.1], velocity=[np.full(8, 0.5)], sensors=np.ones(8))
    x = np.linspace(0, 1, 8)
    np.testing.assert_array_equal(op(x), ref(x))


def test_sampling_takes_an_empty_batch():
    # as gaussian_blur, downsample and radon do: (0, m), not a reshape error
    mask = np.zeros((4, 4))
    mask[1, 2] = mask[3, 0] = 1
    assert ops.sampling(mask)(np.zeros((0, 4, 4))).shape == (0, 2)
    assert ops.fourier_sampling(mask)(np.zeros((0, 4, 4))).shape == (0, 2)


def test_advection_diffusion_names_a_single_velocity_value_from_torch():
    with pytest.raises(fieldkit.Error, match="one entry per axis"):
        ops.advection_diffusion((8,), [0.1], velocity=torch.tensor(0.5))
