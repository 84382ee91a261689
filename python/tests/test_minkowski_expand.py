"""MinkowskiConvolution(expand_coordinates=True): output coordinates are every
input + kernel offset on the output stride's grid (the reference's
stride_region), features a plain loop over those points; gradcheck in f64."""
import itertools

import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME


def cube_offsets(size, d):
    """The cube's offsets in kernel order (axis 0 fastest); odd sizes centred,
    even ones from 0."""
    r = range(-(size // 2), size // 2 + 1) if size % 2 else range(size)
    return [o[::-1] for o in itertools.product(r, repeat=d)]


def plain_expanded_conv(x, kernel, size, stride):
    """{out point: features} with out = in + o * ts on the out_ts grid and
    out[p] = sum_k W[k]^T in[p + o_k * ts] (the forward map's convention)."""
    ts, d = x.tensor_stride[0], x.D
    out_ts = ts * stride
    offsets = cube_offsets(size, d)
    rows = {tuple(c): f for c, f in zip(x.C.tolist(), x.F)}
    points = set()
    for c in rows:
        for o in offsets:
            p = (c[0],) + tuple(c[1 + a] + o[a] * ts for a in range(d))
            if all(v % out_ts == 0 for v in p[1:]):
                points.add(p)
    out = {}
    for p in points:
        acc = torch.zeros(kernel.shape[2], dtype=kernel.dtype)
        for k, o in enumerate(offsets):
            q = (p[0],) + tuple(p[1 + a] + o[a] * ts for a in range(d))
            if q in rows:
                acc = acc + rows[q] @ kernel[k]
        out[p] = acc
    return out, out_ts


@pytest.mark.parametrize("size,stride", [(3, 1), (3, 2), (2, 2)])
def test_expanded_coordinates_and_features_match_a_plain_loop(size, stride):
    torch.manual_seed(0)
    x = random_sparse(n=20, extent=5)
    conv = ME.MinkowskiConvolution(3, 2, kernel_size=size, stride=stride, dimension=2,
                                   expand_coordinates=True).double()
    y = conv(x)
    want, out_ts = plain_expanded_conv(x, conv.kernel.detach(), size, stride)
    assert list(y.tensor_stride) == [out_ts, out_ts]
    got = {tuple(c): f for c, f in zip(y.C.tolist(), y.F.detach())}
    assert set(got) == set(want)
    for p, f in want.items():
        torch.testing.assert_close(got[p], f, rtol=1e-12, atol=1e-12)
    assert y.coordinate_map_key != x.coordinate_map_key


def test_unit_stride_expansion_grows_the_map_each_call():
    x = random_sparse(n=10, extent=4)
    conv = ME.MinkowskiConvolution(3, 3, kernel_size=3, dimension=2,
                                   expand_coordinates=True).double()
    y = conv(x)
    z = conv(y)
    assert len(x) < len(y) < len(z)
    assert y.coordinate_map_key != z.coordinate_map_key


def test_expanded_convolution_gradcheck():
    torch.manual_seed(0)
    x = random_sparse(n=16, extent=4)
    conv = ME.MinkowskiConvolution(3, 2, kernel_size=3, stride=2, dimension=2, bias=True,
                                   expand_coordinates=True).double()
    key = conv(x).coordinate_map_key
    f = x.F.detach().clone().requires_grad_()
    # Onto the map of the first call, so every evaluation has the same rows.
    assert torch.autograd.gradcheck(lambda ff: conv(on_map(x, ff), key).F, (f,))
    w = conv.kernel.detach().clone().requires_grad_()

    def in_kernel(ww):
        saved = conv._parameters["kernel"]
        conv._parameters["kernel"] = ww
        try:
            return conv(x, key).F
        finally:
            conv._parameters["kernel"] = saved
    assert torch.autograd.gradcheck(in_kernel, (w,))


def test_expanded_convolution_gradcheck_through_expansion():
    torch.manual_seed(1)
    x = random_sparse(n=12, extent=4)
    conv = ME.MinkowskiConvolution(3, 2, kernel_size=3, dimension=2,
                                   expand_coordinates=True).double()
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: conv(on_map(x, ff)).F, (f,))
