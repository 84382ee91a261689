"""MinkowskiSinusoidal (against sin(F W + b) c written here, gradcheck in f64)
and the variance stack (against torch's population variance)."""
import pytest
import torch
from torch.nn.utils.stateless import functional_call
from conftest import random_sparse

import fieldkit.minkowski as ME


def test_sinusoidal_is_sin_of_an_affine_map_scaled():
    torch.manual_seed(0)
    layer = ME.MinkowskiSinusoidal(3, 5).double()
    assert layer.kernel.shape == (3, 5) and layer.bias.shape == (1, 5)
    assert layer.coef.shape == (1, 5)
    assert all(((p >= 0) & (p < 1)).all() for p in layer.parameters())  # U[0, 1)
    x = random_sparse()
    y = layer(x)
    expected = torch.sin(x.F @ layer.kernel + layer.bias) * layer.coef
    assert torch.allclose(y.F, expected, atol=1e-14)
    assert y.coordinate_map_key == x.coordinate_map_key
    f = x.F.detach().clone().requires_grad_()
    params = [p.detach().clone().requires_grad_() for p in (layer.kernel, layer.bias, layer.coef)]

    def through_layer(ff, k, b, c):
        xx = ME.SparseTensor(ff, coordinate_map_key=x.coordinate_map_key,
                             coordinate_manager=x.coordinate_manager)
        return functional_call(layer, {"kernel": k, "bias": b, "coef": c}, (xx,)).F

    assert torch.autograd.gradcheck(through_layer, (f, *params))


def test_sinusoidal_keeps_a_tensor_field_a_field():
    points = torch.tensor([[0, 0.5, 1.5], [1, 2.25, 0.0]], dtype=torch.float64)
    field = ME.TensorField(torch.ones(2, 2, dtype=torch.float64), points)
    out = ME.MinkowskiSinusoidal(2, 3).double()(field)
    assert isinstance(out, ME.TensorField) and torch.equal(out.C, points)


def test_stack_var_is_the_population_variance_of_the_children():
    x = random_sparse()
    children = [ME.MinkowskiReLU(), ME.MinkowskiTanh(), ME.MinkowskiSigmoid()]
    outs = torch.stack([m(x).F for m in children])
    expected = ((outs - outs.mean(0)) ** 2).mean(0)
    y = ME.MinkowskiStackVar(*children)(x)
    assert torch.allclose(y.F, expected, atol=1e-14)
    assert torch.allclose(ME.var([m(x) for m in children]).F, expected, atol=1e-14)
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda ff: ME.var(ME.SparseTensor(ff, coordinate_map_key=x.coordinate_map_key,
                                          coordinate_manager=x.coordinate_manager), x).F, (f,))
    with pytest.raises(ValueError, match="var: expected tensors on the same coordinate map"):
        ME.var(x, random_sparse(seed=3))
