"""Second derivatives of the sparse convolutions: gradgradcheck in f64 w.r.t.
features and kernel together, for every kind of kernel map, and a gradient
penalty whose first-order part equals the plain backward."""
import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME


def small():
    return random_sparse(n=14, extent=4, channels=2, seed=2)


def coarse(x):
    """x convolved to tensor stride 2 (the input of the transposed layers)."""
    down = ME.MinkowskiConvolution(2, 2, kernel_size=2, stride=2, dimension=2).double()
    return down(x).detach()


LAYERS = {
    "submanifold": (lambda: ME.MinkowskiConvolution(2, 2, kernel_size=3, dimension=2), False),
    "strided": (lambda: ME.MinkowskiConvolution(2, 2, kernel_size=2, stride=2, dimension=2),
                False),
    "transposed": (lambda: ME.MinkowskiConvolutionTranspose(2, 2, kernel_size=2, stride=2,
                                                            dimension=2), True),
    "generative": (lambda: ME.MinkowskiGenerativeConvolutionTranspose(
        2, 2, kernel_size=2, stride=2, dimension=2), True),
    "channelwise": (lambda: ME.MinkowskiChannelwiseConvolution(2, kernel_size=3, dimension=2),
                    False),
}


@pytest.mark.parametrize("name", LAYERS)
def test_convolution_gradgradcheck(name):
    make, needs_coarse = LAYERS[name]
    torch.manual_seed(0)
    layer = make().double()
    x = small()
    if needs_coarse:
        x = coarse(x)
    f = x.F.detach().clone().requires_grad_()
    w = layer.kernel.detach().clone().requires_grad_()

    def run(ff, ww):
        layer._parameters["kernel"] = ww
        return layer(on_map(x, ff)).F

    assert torch.autograd.gradgradcheck(run, (f, w))


def test_gradient_penalty_first_order_part_equals_the_plain_backward():
    torch.manual_seed(1)
    x = small()
    layer = ME.MinkowskiConvolution(2, 3, kernel_size=3, dimension=2).double()
    f = x.F.detach().clone().requires_grad_()
    out = layer(on_map(x, f)).F.square().sum()
    (plain,) = torch.autograd.grad(out, f, retain_graph=True)
    (graphed,) = torch.autograd.grad(out, f, create_graph=True)
    assert torch.allclose(plain, graphed, atol=1e-14)
    # The penalty's gradient reaches the kernel through the second derivative.
    graphed.square().sum().backward()
    assert layer.kernel.grad is not None and layer.kernel.grad.abs().sum() > 0
