"""Gradients that torch hands the backward as strided or broadcast views (a
sum's expanded ones, a transposed grad) cross into C++ uncopied and give the
result of contiguous ones."""
import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME

OPS = [
    lambda: ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2),
    lambda: ME.MinkowskiChannelwiseConvolution(3, kernel_size=3, dimension=2),
    lambda: ME.MinkowskiMaxPooling(kernel_size=2, stride=2, dimension=2),
    lambda: ME.MinkowskiAvgPooling(kernel_size=3, dimension=2),
    lambda: ME.MinkowskiGlobalAvgPooling(),
    lambda: ME.MinkowskiInstanceNorm(3),
]


@pytest.mark.parametrize("make", OPS)
def test_expanded_and_transposed_grads(make):
    x = random_sparse(n=40, extent=6)
    layer = make().double()

    def grad_of(weighting):
        f = x.F.clone().requires_grad_()
        out = layer(on_map(x, f)).F
        weighting(out).backward()
        return f.grad

    ones = grad_of(lambda out: (out * torch.ones_like(out)).sum())
    expanded = grad_of(lambda out: out.sum())  # grad_out: ones expanded, stride 0
    assert torch.equal(ones, expanded)
    # a transposed (strided) grad gives the contiguous grad's result
    f = x.F.clone().requires_grad_()
    out = layer(on_map(x, f)).F
    gt = torch.randn(out.shape[1], out.shape[0], dtype=torch.float64).t()
    assert not gt.is_contiguous()
    out.backward(gt)
    assert torch.equal(f.grad, grad_of(lambda o: (o * gt.contiguous()).sum()))
