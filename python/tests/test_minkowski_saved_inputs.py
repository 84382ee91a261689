"""The convolution Function keeps its inputs' C++ views for the backward
(no second wrapping): the gradients equal the plain binding's, an input
changed in place after the forward is still caught, and a backward under
create_graph (which does not use the views) gives the same gradients."""
import pytest
import torch
from conftest import random_sparse

import fieldkit.minkowski as ME
from fieldkit._core import minkowski as _mk
from fieldkit.minkowski.functional import ConvolutionFunction, run


def conv_inputs():
    x = random_sparse(n=30, extent=6)
    mgr, key = x.coordinate_manager, x.coordinate_map_key
    kmap = mgr.region_kernel_map(key, key, ME.KernelRegion.cube([3]), False)
    g = torch.Generator().manual_seed(3)
    w = torch.randn(9, 3, 2, generator=g, dtype=torch.float64, requires_grad=True)
    return x.F.detach().clone().requires_grad_(), w, kmap


@pytest.mark.parametrize("channelwise", [False, True])
def test_gradients_equal_the_plain_binding(channelwise):
    f, w, kmap = conv_inputs()
    if channelwise:
        w = w[:, :, 0].detach().clone().requires_grad_()
    y = ConvolutionFunction.apply(f, w, kmap, channelwise)
    g = torch.randn_like(y)
    y.backward(g)
    gf, gw = _mk.conv_backward(g, f.detach(), w.detach(), kmap, channelwise, True, True)
    assert torch.equal(f.grad, gf) and torch.equal(w.grad, gw)
    with torch.no_grad():
        assert torch.equal(run(ConvolutionFunction, f, w, kmap, channelwise), y)


def test_an_input_changed_in_place_after_the_forward_is_caught():
    f, w, kmap = conv_inputs()
    y = ConvolutionFunction.apply(f, w, kmap, False)
    with torch.no_grad():
        w.add_(1)
    with pytest.raises(RuntimeError, match="inplace"):
        y.sum().backward()


def test_a_backward_under_create_graph_gives_the_same_gradients():
    f, w, kmap = conv_inputs()
    y = ConvolutionFunction.apply(f, w, kmap, False)
    g = torch.randn_like(y)
    gf, gw = torch.autograd.grad(y, (f, w), g, create_graph=True)
    assert gf.grad_fn is not None and y.grad_fn.inputs is None
    want_f, want_w = _mk.conv_backward(g, f.detach(), w.detach(), kmap, False, True, True)
    assert torch.equal(gf, want_f) and torch.equal(gw, want_w)


def test_views_are_released_after_the_backward_and_a_retained_graph_still_works():
    f, w, kmap = conv_inputs()
    y = ConvolutionFunction.apply(f, w, kmap, False)
    g = torch.randn_like(y)
    y.backward(g, retain_graph=True)
    assert y.grad_fn.inputs is None  # released as torch releases saved tensors
    first_f, first_w = f.grad.clone(), w.grad.clone()
    f.grad = w.grad = None
    y.backward(g)  # wraps the saved tensors again
    assert torch.equal(f.grad, first_f) and torch.equal(w.grad, first_w)


POOLINGS = [ME.MinkowskiMaxPooling(kernel_size=2, stride=2, dimension=2),
            ME.MinkowskiAvgPooling(kernel_size=2, stride=2, dimension=2),
            ME.MinkowskiPoolingTranspose(kernel_size=2, stride=2, dimension=2),
            ME.MinkowskiGlobalMaxPooling(),
            ME.MinkowskiGlobalSumPooling()]


@pytest.mark.parametrize("pool", POOLINGS, ids=lambda p: type(p).__name__)
def test_poolings_keep_torchs_checks_as_max_pool2d(pool):
    # A second backward through a freed graph raises, and so does a backward
    # after the input changed in place; a retained graph gives the gradient
    # again, not twice over. (At tensor stride 2, which the transpose needs.)
    x = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(random_sparse(n=30, extent=6))
    f = x.F.detach().clone().requires_grad_()
    y = pool(ME.SparseTensor(f, coordinate_map_key=x.coordinate_map_key,
                             coordinate_manager=x.coordinate_manager)).F.sum()
    y.backward(retain_graph=True)
    first = f.grad.clone()
    f.grad = None
    y.backward()
    assert torch.equal(f.grad, first)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    y = pool(ME.SparseTensor(f, coordinate_map_key=x.coordinate_map_key,
                             coordinate_manager=x.coordinate_manager)).F.sum()
    with torch.no_grad():
        f.add_(1)
    with pytest.raises(RuntimeError, match="inplace"):
        y.backward()
