"""MinkowskiAdaptiveLogSoftmaxWithLoss: torch's module on the features, its
outputs on the input's coordinates; gradcheck in f64."""
import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME


def layer():
    torch.manual_seed(0)
    return ME.MinkowskiAdaptiveLogSoftmaxWithLoss(8, 10, cutoffs=[4, 7], div_value=2.0).double()


def test_equals_torch_on_the_features_and_keeps_the_coordinates():
    x = random_sparse(n=30, channels=8)
    target = torch.arange(len(x.F)) % 10
    m = layer()
    out, loss = m(x, target)
    ref = m.module(x.F, target)
    assert out.coordinate_map_key == x.coordinate_map_key
    assert out.coordinate_manager is x.coordinate_manager
    assert torch.equal(out.F, ref.output[:, None]) and torch.equal(loss, ref.loss)
    # the loss is the mean negative target log-probability of the full softmax
    lp = m.log_prob(x)
    assert lp.coordinate_map_key == x.coordinate_map_key and lp.F.shape == (len(x.F), 10)
    assert torch.allclose(lp.F.exp().sum(1), torch.ones(len(x.F), dtype=torch.float64))
    assert torch.allclose(loss, -lp.F[torch.arange(len(x.F)), target].mean())
    assert torch.equal(m.predict(x), lp.F.argmax(1))


def test_on_a_tensor_field():
    x = random_sparse(n=20, channels=8)
    field = ME.TensorField(x.F, x.C.double())
    out, loss = layer()(field, torch.zeros(len(x.F), dtype=torch.long))
    assert isinstance(out, ME.TensorField) and out.F.shape == (len(x.F), 1)


def test_gradcheck_f64():
    x = random_sparse(n=16, channels=8)
    target = torch.arange(len(x.F)) % 10
    m = layer()
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: m(on_map(x, ff), target).loss, (f,))
    assert torch.autograd.gradcheck(lambda ff: m.log_prob(on_map(x, ff)).F, (f,))


def test_refuses_a_target_of_the_wrong_length():
    x = random_sparse(n=16, channels=8)
    with pytest.raises(ValueError, match=r"expected a target of shape \(\d+,\), one class per "
                                         r"row, got \(3,\)"):
        layer()(x, torch.zeros(3, dtype=torch.long))
