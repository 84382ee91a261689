"""nefi.instance_operator: an instance's own forward operator from Python,
the one its solver method inverts through: it reproduces the instance's data
from the ground truth (up to the noise and the data generator's finer
model), its adjoint passes the dot test, its vjp matches finite differences,
a method without one problem or with several fields is refused by name,
and an operator blind to the field gives a zero gradient."""
import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi
from conftest import config_path


def test_the_operator_reproduces_the_instances_data_from_its_truth():
    op = nefi.instance_operator(config_path("deconvolution_smoke.yaml"), seed=1)
    m = nefi.measurement(config_path("deconvolution_smoke.yaml"), seed=1)
    gt, y = m["ground_truth"], m["data"]
    assert op.shape == gt.shape and op.output_shape(gt.shape) == y.shape
    residual = np.linalg.norm(op(gt) - y) / np.sqrt(y.size)
    assert residual < 3 * m["noise_std"]  # the noise and the finer generator's model error
    assert op.linear and op.kind


def test_a_linear_instance_operator_passes_the_dot_test():
    op = nefi.instance_operator("deconvolution", {"run": {"seed": 0}})
    rng = np.random.default_rng(0)
    x = rng.standard_normal(op.shape)
    y = rng.standard_normal(op.output_shape(op.shape))
    assert np.vdot(op(x), y) == pytest.approx(np.vdot(x, op.adjoint(y)), rel=1e-10)


def test_a_nonlinear_instance_operators_vjp_is_its_gradient():
    op = nefi.instance_operator(config_path("eit_smoke.yaml"))
    assert not op.linear
    rng = np.random.default_rng(1)
    x = 1.0 + 0.2 * rng.random(op.shape)
    g = rng.standard_normal(op.output_shape(op.shape))
    v = rng.standard_normal(op.shape)
    h = 1e-5
    fd = (np.vdot(g, op(x + h * v)) - np.vdot(g, op(x - h * v))) / (2 * h)
    assert np.vdot(op.vjp(x, g), v) == pytest.approx(fd, rel=1e-5)


def test_an_operator_blind_to_the_field_has_a_zero_gradient():
    # The soft PINN's field only sets the grid: its vjp is 0, not a crash.
    op = nefi.instance_operator("thermal_tomography", method="pinn_soft")
    x = np.ones(op.shape)
    g = np.ones(op.output_shape(op.shape))
    assert np.array_equal(op.vjp(x, g), np.zeros(op.shape))


def test_a_method_without_one_problem_is_refused_by_name():
    with pytest.raises(fieldkit.Error, match="a method of deconvolution that solves one inverse "
                                             "problem, got wiener"):
        nefi.instance_operator("deconvolution", method="wiener")
    with pytest.raises(fieldkit.Error, match="expected a method name"):
        nefi.instance_operator("deconvolution", method=3)
    with pytest.raises(fieldkit.Error, match="'nope'"):
        nefi.instance_operator("deconvolution", method="nope")
    # Several fields: the operator of one alone is not the model solved.
    with pytest.raises(fieldkit.Error, match="a method of nv_relaxometry that fits one field, "
                                             "got neural, which fits omega_L, rho"):
        nefi.instance_operator("nv_relaxometry")
