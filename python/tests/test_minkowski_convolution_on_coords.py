"""MinkowskiConvolutionOnCoords against a convolution written here with plain
loops over the listed output coordinates; gradcheck in f64; bad coordinates."""
import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME


def loop_convolution(x, kernel, region, out_coords):
    """out[u] = sum_k kernel[k]^T x[u + offset_k] over the offsets (scaled by
    x's tensor stride) whose point is an input coordinate."""
    ts = list(x.tensor_stride)
    offsets = torch.tensor(region.offsets(ts)).view(-1, x.D)
    rows = {tuple(r): i for i, r in enumerate(x.C.tolist())}
    out = torch.zeros(len(out_coords), kernel.shape[2], dtype=x.F.dtype)
    for o, u in enumerate(out_coords.tolist()):
        for k, off in enumerate(offsets.tolist()):
            i = rows.get((u[0], *[a + b for a, b in zip(u[1:], off)]))
            if i is not None:
                out[o] += x.F[i] @ kernel[k]
    return out


def strided_input():
    x = random_sparse(n=50, dim=2, extent=10, channels=3)
    return ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(x)  # tensor stride 2


@pytest.mark.parametrize("kernel_size,tensor_stride", [(3, 2), (2, 2), (1, 2), (3, 4)])
def test_equals_a_loop_on_the_given_coordinates(kernel_size, tensor_stride):
    torch.manual_seed(1)
    x = strided_input()
    coords = torch.tensor([[0, 0, 0], [1, 4, 4], [0, 8, 4], [1, 40, 40], [0, 4, -4]],
                          dtype=torch.int32) // 4 * 4
    coords[:, 0] = torch.tensor([0, 1, 0, 1, 0])
    conv = ME.MinkowskiConvolutionOnCoords(3, 2, kernel_size=kernel_size, has_bias=True,
                                           dimension=2).double()
    y = conv(x, coords, tensor_stride=tensor_stride)
    assert conv.kernel.dim() == 3 and y.tensor_stride == [tensor_stride] * 2
    assert torch.equal(y.C, coords)  # the rows in the order given
    ref = loop_convolution(x, conv.kernel.detach(), conv.kernel_generator.region, coords)
    assert (ref.abs().sum(1) > 0).sum() >= 2  # the inputs reach several outputs
    assert torch.allclose(y.F, ref + conv.bias.detach(), atol=1e-12)
    assert torch.equal(y.F[3], conv.bias.detach()[0])  # nothing near (40, 40)
    # onto a SparseTensor or a key of the same map: the same features
    assert torch.equal(conv(x, y).F, y.F)
    assert torch.equal(conv(x, y.coordinate_map_key).F, y.F)


def test_gradcheck_f64():
    torch.manual_seed(2)
    x = strided_input()
    coords = x.C[::2].contiguous()
    conv = ME.MinkowskiConvolutionOnCoords(3, 2, kernel_size=3, has_bias=True,
                                           dimension=2).double()
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: conv(on_map(x, ff), coords, 2).F, (f,))
    w, b = conv.kernel.detach().clone().requires_grad_(), conv.bias.detach().clone()
    b.requires_grad_()

    def with_parameters(ww, bb):
        conv._parameters["kernel"], conv._parameters["bias"] = ww, bb
        return conv(x, coords, 2).F

    saved = conv.kernel, conv.bias
    try:
        assert torch.autograd.gradcheck(with_parameters, (w, b))
    finally:
        conv._parameters["kernel"], conv._parameters["bias"] = saved


def test_refuses_bad_coordinates():
    x = strided_input()
    conv = ME.MinkowskiConvolutionOnCoords(3, 2, kernel_size=3, dimension=2).double()
    with pytest.raises(ValueError, match=r"without repeats .* got 2 rows of which 1 distinct"):
        conv(x, torch.tensor([[0, 2, 2], [0, 2, 2]]), 2)
    with pytest.raises(ValueError, match=r"N x 3 \(batch first\), got \(2, 2\)"):
        conv(x, torch.tensor([[2, 2], [4, 4]]), 2)
    with pytest.raises(ME.Error):  # off the tensor stride's grid: the engine's message
        conv(x, torch.tensor([[0, 1, 2]]), 2)


def test_the_layers_take_listed_coordinates_at_their_output_stride():
    """MinkowskiConvolution(x, coords) as the reference's (which accepts a
    coordinate tensor): the coordinates go in at the output stride (input's
    times the stride, divided by it when transposed), here the same
    convolution as the older layer's."""
    torch.manual_seed(3)
    x = strided_input()  # tensor stride 2
    coords = torch.tensor([[0, 0, 0], [1, 4, 8], [0, 8, 4]], dtype=torch.int32)
    conv = ME.MinkowskiConvolution(3, 2, kernel_size=3, stride=2, dimension=2).double()
    y = conv(x, coords)
    assert y.tensor_stride == [4, 4] and torch.equal(y.C, coords)
    ref = loop_convolution(x, conv.kernel.detach(), conv.kernel_generator.region, coords)
    assert torch.allclose(y.F, ref, atol=1e-12)
    up = ME.MinkowskiConvolutionTranspose(3, 2, kernel_size=2, stride=2, dimension=2).double()
    full = up(x)  # onto the finer map x was pooled from
    z = up(x, full.C[[5, 0, 3]])
    assert z.tensor_stride == [1, 1] and torch.allclose(z.F, full.F[[5, 0, 3]], atol=1e-12)
    with pytest.raises(ValueError, match="expected a stride dividing the input tensor stride"):
        ME.MinkowskiConvolutionTranspose(3, 2, kernel_size=3, stride=4, dimension=2)(x, coords)
