"""Sparse convolutions: gradcheck in f64 and equality with dense torch
convolutions on small grids."""
import itertools

import pytest
import torch
import torch.nn.functional as tf
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME


def gradcheck_layer(layer, x, coordinates=None):
    """gradcheck of layer(x) w.r.t. the features and each parameter."""
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: layer(on_map(x, ff), coordinates).F, (f,))
    for name, p in list(layer.named_parameters()):
        w = p.detach().clone().requires_grad_()
        assert torch.autograd.gradcheck(
            lambda ww, name=name: with_parameter(layer, name, ww, x, coordinates), (w,))


def with_parameter(layer, name, value, x, coordinates):
    """layer(x).F with the parameter `name` replaced by `value` (differentiable in it)."""
    saved = layer._parameters[name]
    layer._parameters[name] = value
    try:
        return layer(x, coordinates).F
    finally:
        layer._parameters[name] = saved


LAYERS = [
    lambda: ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2, bias=True),
    lambda: ME.MinkowskiConvolution(3, 2, kernel_size=2, stride=2, dimension=2),
    lambda: ME.MinkowskiConvolution(3, 2, kernel_size=3, stride=2, dilation=1, dimension=2),
    lambda: ME.MinkowskiConvolution(3, 4, kernel_size=1, dimension=2, bias=True),
    lambda: ME.MinkowskiConvolution(
        3, 2, kernel_generator=ME.KernelGenerator(3, region_type=ME.RegionType.HYPER_CROSS,
                                                  dimension=2), dimension=2),
    lambda: ME.MinkowskiChannelwiseConvolution(3, kernel_size=3, dimension=2, bias=True),
    lambda: ME.MinkowskiChannelwiseConvolution(3, kernel_size=2, stride=2, dimension=2),
]


@pytest.mark.parametrize("make", LAYERS)
def test_convolution_gradcheck(make):
    torch.manual_seed(0)
    gradcheck_layer(make().double(), random_sparse())


@pytest.mark.parametrize("generative", [False, True])
def test_transposed_convolution_gradcheck(generative):
    torch.manual_seed(0)
    x = random_sparse()
    down = ME.MinkowskiConvolution(3, 3, kernel_size=2, stride=2, dimension=2).double()
    y = down(x).detach()
    cls = (ME.MinkowskiGenerativeConvolutionTranspose if generative
           else ME.MinkowskiConvolutionTranspose)
    up = cls(3, 2, kernel_size=2, stride=2, dimension=2, bias=True).double()
    gradcheck_layer(up, y)
    out = up(y)
    assert out.tensor_stride == [1, 1]
    if generative:  # every coarse point's 4 children
        assert len(out) == 4 * len(y)
    else:  # back onto the encoder's map
        assert out.coordinate_map_key == x.coordinate_map_key


def dense_weight(kernel, size, dim):
    """A sparse (K, C_in, C_out) kernel as torch's (C_out, C_in, k..k); offset
    order: mixed radix with spatial axis 0 fastest."""
    w = kernel.reshape([size] * dim + list(kernel.shape[1:]))  # axes reversed: (k_{D-1}..k_0)
    w = w.permute(*reversed(range(dim)), dim, dim + 1)          # (k_0..k_{D-1}, in, out)
    return w.permute(dim + 1, dim, *range(dim))


@pytest.mark.parametrize("dim", [2, 3])
def test_submanifold_convolution_equals_dense_convolution(dim):
    torch.manual_seed(1)
    x = random_sparse(n=60 if dim == 3 else 30, dim=dim, extent=5, channels=3)
    conv = ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=dim).double()
    y = conv(x)
    dense_in, _, _ = x.dense(shape=[2, 3] + [5] * dim)
    conv_nd = tf.conv2d if dim == 2 else tf.conv3d
    ref = conv_nd(dense_in, dense_weight(conv.kernel.detach(), 3, dim), padding=1)
    c = y.C.long()
    assert torch.allclose(y.F, ref.movedim(1, -1)[(c[:, 0], *c[:, 1:].unbind(1))], atol=1e-12)


def test_strided_convolution_equals_dense_strided_convolution():
    torch.manual_seed(2)
    x = random_sparse(n=40, dim=2, extent=6)
    conv = ME.MinkowskiConvolution(3, 2, kernel_size=2, stride=2, dimension=2).double()
    y = conv(x)
    assert y.tensor_stride == [2, 2]
    dense_in, _, _ = x.dense(shape=[2, 3, 6, 6])
    ref = tf.conv2d(dense_in, dense_weight(conv.kernel.detach(), 2, 2), stride=2)
    c = y.C.long()
    assert torch.allclose(y.F, ref.movedim(1, -1)[c[:, 0], c[:, 1] // 2, c[:, 2] // 2],
                          atol=1e-12)
    # the output sites are exactly the occupied 2x2 blocks
    blocks = {(b, i // 2 * 2, j // 2 * 2) for b, i, j in x.C.tolist()}
    assert {tuple(r) for r in y.C.tolist()} == blocks


def test_transpose_is_the_adjoint_of_the_strided_convolution():
    torch.manual_seed(3)
    x = random_sparse(n=40, dim=2, extent=6)
    down = ME.MinkowskiConvolution(3, 2, kernel_size=2, stride=2, dimension=2).double()
    up = ME.MinkowskiConvolutionTranspose(2, 3, kernel_size=2, stride=2, dimension=2).double()
    up.kernel.data = down.kernel.data.transpose(1, 2).clone()
    y = down(x)
    g = torch.randn_like(y.F)
    # <down(x), g> == <x, up(g)>
    lhs = (y.F * g).sum()
    rhs = (x.F * up(on_map(y, g)).F).sum()
    assert torch.allclose(lhs, rhs, atol=1e-10)


def test_convolution_onto_given_coordinates():
    torch.manual_seed(4)
    x = random_sparse(n=40, dim=2, extent=6)
    target = ME.SparseTensor(torch.zeros(3, 1, dtype=torch.float64),
                             torch.tensor([[0, 1, 1], [1, 2, 2], [0, 9, 9]], dtype=torch.int32),
                             coordinate_manager=x.coordinate_manager)
    conv = ME.MinkowskiConvolution(3, 2, kernel_size=3, dimension=2).double()
    y = conv(x, target)
    assert y.coordinate_map_key == target.coordinate_map_key
    full = conv(x)  # the submanifold result at the same sites where they overlap
    assert torch.equal(y.F[2], torch.zeros(2, dtype=torch.float64))  # nothing reaches (9, 9)
    rows = {tuple(r): i for i, r in enumerate(full.C.tolist())}
    for i, r in enumerate(target.C.tolist()[:2]):
        if tuple(r) in rows:
            assert torch.allclose(y.F[i], full.F[rows[tuple(r)]])
    gradcheck_layer(conv, x, target)


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 2e-2),
                                        (torch.bfloat16, 1e-1)])
def test_low_precision_matches_f64(dtype, tol):
    torch.manual_seed(5)
    x = random_sparse(n=40, dim=2, extent=6)
    conv = ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2).double()
    ref = conv(x).F
    low = conv.to(dtype)(on_map(x, x.F.to(dtype)))
    assert low.F.dtype == dtype
    assert torch.allclose(low.F.double(), ref, rtol=tol, atol=tol)


def test_autocast_runs_the_convolution_in_bf16():
    x = random_sparse(n=40, dim=2, extent=6, dtype=torch.float32)
    conv = ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = conv(x)
    assert y.F.dtype == torch.bfloat16
    y.F.float().sum().backward()
    assert conv.kernel.grad.dtype == torch.float32


def test_kernel_offsets_follow_the_documented_order():
    offs = ME.KernelRegion.cube([3]).offsets([1, 1])
    pairs = list(zip(offs[0::2], offs[1::2]))
    assert pairs == [(a, b) for b, a in itertools.product((-1, 0, 1), repeat=2)]


def test_convolutions_from_several_python_threads_agree():
    from concurrent.futures import ThreadPoolExecutor

    x = random_sparse(n=60, extent=8)
    conv = ME.MinkowskiConvolution(3, 4, kernel_size=3, stride=2, dimension=2).double()
    serial = conv(x).F

    def one(_):
        f = x.F.clone().requires_grad_()
        out = conv(on_map(x, f)).F
        out.sum().backward()
        return out.detach(), f.grad

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(8)))
    for out, grad in results:
        assert torch.equal(out, serial.detach()) and torch.equal(grad, results[0][1])


def test_a_custom_region_of_one_offset_is_a_shift_not_a_1x1():
    # out[c] = sum_k W_k F[c + offset_k]: one offset (1, 0) reads the next row;
    # a 1x1 would read the row itself.
    c = torch.tensor([[0, 0, 0], [0, 1, 0], [0, 2, 0]], dtype=torch.int32)
    x = ME.SparseTensor(torch.tensor([[1.0], [10.0], [100.0]], dtype=torch.float64), c)
    gen = ME.KernelGenerator(1, region_type=ME.RegionType.CUSTOM, region_offsets=[[1, 0]],
                             dimension=2)
    conv = ME.MinkowskiConvolution(1, 1, kernel_generator=gen, dimension=2).double()
    with torch.no_grad():
        conv.kernel.fill_(1.0)
    assert conv(x).F.flatten().tolist() == [10.0, 100.0, 0.0]
    origin = ME.KernelGenerator(1, region_type=ME.RegionType.CUSTOM, region_offsets=[[0, 0]],
                                dimension=2)
    assert ME.MinkowskiConvolution(1, 1, kernel_generator=origin, dimension=2).use_mm


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2.5), dict(kernel_size=3, stride=1.5),
                                    dict(kernel_size=3, dilation=1.9)])
def test_fractional_sizes_strides_and_offsets_are_refused_not_truncated(kwargs):
    with pytest.raises(ValueError, match="whole numbers"):
        ME.MinkowskiConvolution(1, 1, dimension=2, **kwargs)
    with pytest.raises(ValueError, match="whole numbers.*0.7"):
        ME.KernelGenerator(1, region_type=ME.RegionType.CUSTOM, region_offsets=[[0.7, 0]],
                           dimension=2)
    with pytest.raises(ValueError, match="K x 2"):  # a flat list is not K offsets
        ME.KernelGenerator(1, region_type=ME.RegionType.CUSTOM, region_offsets=[1, 2, 3, 4],
                           dimension=2)
