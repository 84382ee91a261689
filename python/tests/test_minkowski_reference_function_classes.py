"""The reference's per-op Functions are torch.autograd.Function subclasses:
their backward is on the tape under their names, the convolution's is
differentiable again (gradgradcheck f64), apply takes the reference's
keywords and defaults, and autocast casts on the tape as maybe_autocast."""
import pytest
import torch
from conftest import random_sparse

import fieldkit.minkowski as ME

NAMES = ["MinkowskiConvolutionFunction", "MinkowskiConvolutionTransposeFunction",
         "MinkowskiLocalPoolingFunction", "MinkowskiLocalPoolingTransposeFunction",
         "MinkowskiGlobalPoolingFunction", "MinkowskiBroadcastFunction",
         "MinkowskiInterpolationFunction", "MinkowskiPruningFunction",
         "MinkowskiInstanceNormFunction", "MinkowskiDirectMaxPoolingFunction",
         "MinkowskiSPMMFunction", "MinkowskiSPMMAverageFunction"]


@pytest.mark.parametrize("name", NAMES)
def test_is_an_autograd_function(name):
    assert issubclass(getattr(ME, name), torch.autograd.Function)


def conv_args():
    x = random_sparse(n=50, extent=7)
    gen = ME.KernelGenerator(3, 2, dimension=2)
    return x, gen, (gen, ME.ConvolutionMode.DEFAULT, x.coordinate_map_key)


def test_the_convolutions_backward_is_on_the_tape_and_differentiable_again():
    x, gen, args = conv_args()
    mgr = x.coordinate_manager
    fn = ME.MinkowskiConvolutionFunction.apply
    f = x.F.detach().clone().requires_grad_()
    w = torch.randn(9, 3, 2, dtype=torch.float64, requires_grad=True)
    out = fn(f, w, *args, manager=mgr)  # keywords and defaults as the reference's
    assert type(out.grad_fn).__name__ == "MinkowskiConvolutionFunctionBackward"
    assert torch.autograd.gradgradcheck(lambda ff, ww: fn(ff, ww, *args, None, mgr), (f, w))


def test_a_two_dimensional_kernel_gets_its_own_shape_of_gradient():
    x = random_sparse(n=30, extent=6)
    gen = ME.KernelGenerator(1, dimension=2)
    w = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    fn = ME.MinkowskiConvolutionFunction.apply
    out = fn(x.F, w, gen, 0, x.coordinate_map_key, None, x.coordinate_manager)
    assert torch.allclose(out, x.F @ w)
    out.sum().backward()
    assert w.grad.shape == (3, 2)
    assert torch.allclose(w.grad, x.F.sum(0)[:, None].expand(3, 2))


def test_pruning_and_interpolation_are_differentiable_again():
    x = random_sparse(n=40, extent=6)
    key, mgr = x.coordinate_map_key, x.coordinate_manager
    f = x.F.detach().clone().requires_grad_()
    mask = x.F[:, 1] > 0
    prune = ME.MinkowskiPruningFunction.apply
    assert torch.autograd.gradgradcheck(lambda ff: prune(ff, mask, key, None, mgr), (f,))
    g = torch.Generator().manual_seed(3)
    points = torch.cat([torch.randint(0, 2, (7, 1), generator=g).double(),
                        torch.rand(7, 2, generator=g, dtype=torch.float64) * 5], 1)
    interp = ME.MinkowskiInterpolationFunction.apply
    assert torch.autograd.gradgradcheck(
        lambda ff: interp(ff, points, key, coordinate_manager=mgr)[0] ** 2, (f,))
    out, in_map, out_map, weights = interp(f, points, key, mgr)
    assert not (in_map.requires_grad or out_map.requires_grad or weights.requires_grad)


def test_without_gradients_no_graph_is_made():
    x, gen, args = conv_args()
    w = torch.randn(9, 3, 2, dtype=torch.float64, requires_grad=True)
    with torch.no_grad():
        out = ME.MinkowskiConvolutionFunction.apply(x.F, w, *args, None, x.coordinate_manager)
    assert out.grad_fn is None
    assert torch.equal(out, ME.MinkowskiConvolutionFunction.apply(
        x.F, w, *args, None, x.coordinate_manager).detach())


def test_autocast_casts_on_the_tape():
    x = random_sparse(n=50, extent=7, dtype=torch.float32)
    gen = ME.KernelGenerator(3, 2, dimension=2)
    key, mgr = x.coordinate_map_key, x.coordinate_manager
    f = x.F.detach().clone().requires_grad_()
    w = torch.randn(9, 3, 2, requires_grad=True)
    ref = ME.MinkowskiConvolutionFunction.apply(f, w, gen, 0, key, None, mgr)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = ME.MinkowskiConvolutionFunction.apply(f, w, gen, 0, key, None, mgr)
        pooled = ME.MinkowskiLocalPoolingFunction.apply(f, ME.PoolingMode.LOCAL_MAX_POOLING,
                                                        gen, key, None, mgr)
    assert out.dtype == pooled.dtype == torch.bfloat16
    assert torch.allclose(out.float(), ref, rtol=5e-2, atol=5e-2)
    (out.float().sum() + pooled.float().sum()).backward()
    assert f.grad.dtype == w.grad.dtype == torch.float32
