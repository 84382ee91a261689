"""torch.autocast (bf16 on the CPU) is honoured by every layer that calls a
C++ op, not only the convolution: the op runs in bf16 on autocast-cast
inputs, gives bf16 features near the f32 result, and the backward reaches
f32 parameters and inputs with f32 gradients."""
import pytest
import torch
from conftest import random_sparse

import fieldkit.minkowski as ME


def strided(x):
    return ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(x)


def with_glob(layer):
    return lambda x: layer(x, ME.MinkowskiGlobalAvgPooling()(x))


CASES = {
    "conv": (lambda: ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2, bias=True),
             None),
    "strided conv": (lambda: ME.MinkowskiConvolution(3, 4, kernel_size=2, stride=2,
                                                     dimension=2), None),
    "transpose": (lambda: ME.MinkowskiConvolutionTranspose(3, 4, kernel_size=2, stride=2,
                                                           dimension=2), strided),
    "generative": (lambda: ME.MinkowskiGenerativeConvolutionTranspose(
        3, 4, kernel_size=2, stride=2, dimension=2), strided),
    "channelwise": (lambda: ME.MinkowskiChannelwiseConvolution(3, kernel_size=3, dimension=2),
                    None),
    "max pool": (lambda: ME.MinkowskiMaxPooling(kernel_size=2, stride=2, dimension=2), None),
    "avg pool": (lambda: ME.MinkowskiAvgPooling(kernel_size=3, dimension=2), None),
    "unpool": (lambda: ME.MinkowskiPoolingTranspose(kernel_size=2, stride=2, dimension=2),
               strided),
    "global": (lambda: ME.MinkowskiGlobalAvgPooling(), None),
    "broadcast": (lambda: with_glob(ME.MinkowskiBroadcastMultiplication()), None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_layer_runs_in_bf16_under_autocast(name):
    make, prepare = CASES[name]
    torch.manual_seed(0)
    x = random_sparse(n=60, extent=8, dtype=torch.float32)
    x = prepare(x) if prepare else x
    layer = make()
    ref = layer(x).F
    f = x.F.detach().clone().requires_grad_()
    x = ME.SparseTensor(f, coordinate_map_key=x.coordinate_map_key,
                        coordinate_manager=x.coordinate_manager)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = layer(x)
    assert y.F.dtype == torch.bfloat16
    assert torch.allclose(y.F.float(), ref, rtol=5e-2, atol=5e-2)
    y.F.float().sum().backward()
    assert f.grad.dtype == torch.float32 and torch.isfinite(f.grad).all()
    for p in getattr(layer, "parameters", lambda: [])():
        assert p.grad.dtype == torch.float32


def test_direct_max_pooling_casts_under_autocast():
    """The reference casts in MinkowskiDirectMaxPoolingFunction too: bf16 out,
    the f32 leaf's gradient f32 and on the arg-max rows of the f32 input."""
    torch.manual_seed(0)
    feat = torch.randn(6, 3, requires_grad=True)
    in_map = torch.tensor([0, 1, 2, 3, 4, 5, 1])
    out_map = torch.tensor([0, 0, 1, 1, 2, 2, 2])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = ME.MinkowskiDirectMaxPoolingFunction.apply(in_map, out_map, feat, 3)
    assert out.dtype == torch.bfloat16
    ref = torch.stack([feat[in_map[out_map == o]].amax(0) for o in range(3)])
    assert torch.equal(out, ref.to(torch.bfloat16))
    out.float().sum().backward()
    assert feat.grad.dtype == torch.float32
    assert feat.grad.sum() == 9  # one row per (output row, channel)
