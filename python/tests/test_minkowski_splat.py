"""TensorField.splat: against a plain numpy loop over points and corners, the
C++ engine's whole op, gradcheck in f64, the adjoint dot test with
interpolation, and bad input."""
import numpy as np
import pytest
import torch

import fieldkit.minkowski as ME
from fieldkit._core import minkowski as _mk


def random_field(n=50, dim=3, span=4.0, channels=2, dtype=torch.float64, seed=0):
    """Points in [-span, span)^D in batch items 0 and 1, some exactly on voxels."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(n, dim, generator=g, dtype=torch.float64) * 2 - 1) * span
    x[::5] = torch.round(x[::5])
    batch = (torch.arange(n) % 2).to(torch.float64)[:, None]
    f = torch.randn(n, channels, generator=g, dtype=torch.float64).to(dtype)
    return f, torch.cat([batch, x], 1)


def numpy_splat(points, features, ts):
    """{corner coordinate: accumulated features}, and the corners in order of
    first occurrence, by a loop over every point and corner."""
    p, f = np.asarray(points, np.float64), np.asarray(features, np.float64)
    dim = p.shape[1] - 1
    acc, order = {}, []
    for q, fq in zip(p, f):
        for bits in range(2**dim):  # bit a set: the upper corner on axis a
            corner, w = [int(q[0])], 1.0
            for a in range(dim):
                up = (bits >> a) & 1
                c = np.floor(q[a + 1] / ts) * ts + up * ts
                corner.append(int(c))
                w *= 1 - abs(q[a + 1] - c) / ts
            key = tuple(corner)
            if key not in acc:
                acc[key] = np.zeros(f.shape[1])
                order.append(key)
            acc[key] += w * fq
    return acc, order


@pytest.mark.parametrize("ts", [1, 2])
def test_splat_matches_a_numpy_loop(ts):
    f, c = random_field(seed=ts)
    y = ME.TensorField(f, c, tensor_stride=ts).splat()
    acc, order = numpy_splat(c, f, ts)
    assert [tuple(r) for r in y.C.tolist()] == order
    want = np.stack([acc[k] for k in order])
    assert np.allclose(y.F.numpy(), want, atol=1e-12)
    assert y.tensor_stride == [ts] * 3
    # The C++ engine's whole op gives the same bits.
    ef, ec = _mk.engine_splat(f, c, [ts])
    assert torch.equal(ef, y.F) and torch.equal(ec, y.C)


def test_splat_gradcheck_f64():
    f, c = random_field(n=12, dim=2, span=2.5)
    field = ME.TensorField(f, c)
    assert torch.autograd.gradcheck(
        lambda ff: ME.TensorField(ff, c, coordinate_manager=field.coordinate_manager).splat().F,
        (f.clone().requires_grad_(),))


def test_splat_is_the_transpose_of_interpolation():
    # <interp(x), y> = <x, splat(y)> for x on the splat map, y on the points.
    f, c = random_field(n=40, dim=2, channels=3, seed=3)
    sy = ME.TensorField(f, c).splat()
    g = torch.Generator().manual_seed(4)
    x = ME.SparseTensor(torch.randn(len(sy), 3, generator=g, dtype=torch.float64),
                        coordinate_map_key=sy.coordinate_map_key,
                        coordinate_manager=sy.coordinate_manager)
    ix = x.interpolate(ME.TensorField(f, c))
    assert isinstance(ix, ME.TensorField) and torch.equal(ix.C, c)
    lhs, rhs = (ix.F * f).sum().item(), (x.F * sy.F).sum().item()
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)
    # And the gradient of the splat is interpolation on its map.
    fr = f.clone().requires_grad_()
    ME.TensorField(fr, c).splat().F.mul(x.F).sum().backward()
    assert torch.allclose(fr.grad, ix.F, atol=1e-13)


def test_splat_f32_and_no_grad():
    f, c = random_field(n=30, dim=3, seed=5)
    want = ME.TensorField(f, c).splat()
    with torch.no_grad():
        y = ME.TensorField(f.float().requires_grad_(), c.float()).splat()
    assert y.F.dtype == torch.float32 and not y.F.requires_grad
    assert torch.allclose(y.F.double(), want.F, atol=1e-5)


def test_a_batch_index_off_an_integer_is_rounded_as_the_reference():
    # Float arithmetic on the batch column (1 - 1e-7) lands in batch 1, as
    # the reference's round(q_0), half to even as torch.round (0.5 and -0.5
    # are batch 0), for splat, interpolation, voxelization and instance norm.
    f, c = random_field(n=12, dim=2)
    off = c.clone()
    i = torch.arange(len(c))
    half = torch.where(i % 4 == 0, 0.5, -0.5)  # batch 0 rows: to 0
    near = torch.where(i % 4 == 1, -1e-7, 0.3)  # batch 1 rows: to 1
    off[:, 0] += torch.where(c[:, 0] == 0, half, near).to(c.dtype)
    want = ME.TensorField(f, c).splat()
    got = ME.TensorField(f, off).splat()
    assert torch.equal(got.C, want.C) and torch.equal(got.F, want.F)
    x = ME.SparseTensor(torch.randn(len(want.C), 2, dtype=torch.float64), want.C)
    assert torch.equal(ME.MinkowskiInterpolation()(x, off), ME.MinkowskiInterpolation()(x, c))
    assert torch.equal(ME.TensorField(f, off).sparse().C, ME.TensorField(f, c).sparse().C)
    norm = ME.MinkowskiInstanceNorm(f.shape[1])
    assert torch.allclose(norm(ME.TensorField(f, off)).F, norm(ME.TensorField(f, c)).F)


def test_splat_bad_input():
    f, c = random_field(n=4, dim=2)
    bad = c.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ME.Error, match="finite batch index.*point 0"):
        ME.TensorField(f, bad).splat()
    with pytest.raises(ME.Error, match="tensor stride"):
        ME.TensorField(f, c).splat(tensor_stride=[1, 2, 3])
    smap = _mk.splat_map(ME.CoordinateManager(2), c, [1])
    with pytest.raises(ME.Error, match="N x C with N = 4 points"):
        _mk.splat_forward(smap, torch.ones(3, 1, dtype=torch.float64))
