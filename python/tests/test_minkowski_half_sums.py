"""f16 and bf16 features: the Python-side sums (duplicate points reduced
onto voxels, unions, the interpolation function's backward scatter) accumulate in
f32 as the C++ kernels do, so a bf16 count passes 256 and an f16 sum past
65504 still gives a mean that fits; mixed feature dtypes promote as torch
does in either order, and a 1x1 convolution refuses weights of another
dtype as every other kernel size does."""
import operator

import pytest
import torch

import fieldkit
import fieldkit.minkowski as ME

HALF = [torch.float16, torch.bfloat16]
QM = ME.SparseTensorQuantizationMode


def one_voxel_points(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.cat([torch.zeros(n, 1), torch.rand(n, 3, generator=g) * 0.9], 1)


@pytest.mark.parametrize("dtype", HALF)
def test_many_duplicates_average_and_sum_in_f32(dtype):
    pts = one_voxel_points(1000)
    ones = torch.ones(1000, 2, dtype=dtype)
    for mode, want in [(QM.UNWEIGHTED_AVERAGE, 1.0), (QM.UNWEIGHTED_SUM, 1000.0)]:
        field = ME.TensorField(ones, coordinates=pts, quantization_mode=mode).sparse()
        direct = ME.SparseTensor(ones, coordinates=pts.int(), quantization_mode=mode)
        for x in (field, direct):
            assert x.F.dtype == dtype
            assert x.F.float().tolist() == [[want, want]], mode
    # 1000 x 100 overflows f16 (65504); the mean does not.
    big = torch.full((1000, 1), 100.0, dtype=dtype)
    mean = ME.TensorField(big, coordinates=pts, quantization_mode=QM.UNWEIGHTED_AVERAGE).sparse()
    assert mean.F.float().item() == 100.0


def test_the_f32_sums_keep_the_gradient():
    pts = one_voxel_points(300)
    f = torch.ones(300, 1, dtype=torch.bfloat16, requires_grad=True)
    x = ME.SparseTensor(f, coordinates=pts.int(), quantization_mode=QM.UNWEIGHTED_AVERAGE)
    x.F.sum().backward()
    assert f.grad.dtype == torch.bfloat16
    assert torch.allclose(f.grad.float(), torch.full((300, 1), 1 / 300), rtol=1e-2)


@pytest.mark.parametrize("dtype", HALF)
def test_the_interpolation_functions_backward_sums_in_f32(dtype):
    # 3000 points near the middle of a 2x2x2 block of cells: each corner
    # gets 3000 / 8 of the output's unit gradient.
    grid = torch.stack(torch.meshgrid(*[torch.arange(2)] * 3, indexing="ij"), -1).reshape(-1, 3)
    coords = torch.cat([torch.zeros(8, 1, dtype=torch.long), grid], 1).int()
    g = torch.Generator().manual_seed(1)
    pts = torch.cat([torch.zeros(3000, 1), 0.5 + (torch.rand(3000, 3, generator=g) - 0.5) * 1e-3],
                    1)
    f = torch.ones(8, 1, dtype=dtype, requires_grad=True)
    x = ME.SparseTensor(f.detach(), coordinates=coords)
    out = ME.MinkowskiInterpolationFunction.apply(f, pts, x.coordinate_map_key,
                                                  x.coordinate_manager)[0]
    out.float().sum().backward()
    assert f.grad.dtype == dtype
    assert torch.allclose(f.grad.float(), torch.full((8, 1), 375.0), rtol=1e-2)


@pytest.mark.parametrize("dtype", HALF)
def test_a_union_of_many_tensors_sums_in_f32(dtype):
    # 300 one-point tensors of 1 on one voxel: their union is 300, which
    # bf16 holds (a bf16 running sum stops at 256).
    mgr = ME.CoordinateManager(D=1)
    c = torch.tensor([[0, 0]], dtype=torch.int32)
    xs = [ME.SparseTensor(torch.ones(1, 1, dtype=dtype), coordinates=c, coordinate_manager=mgr)
          for _ in range(300)]
    u = ME.MinkowskiUnion()(*xs)
    assert u.F.dtype == dtype and u.F.float().item() == 300.0


def test_mixed_dtypes_on_two_maps_promote_in_either_order():
    g = torch.Generator().manual_seed(0)
    c = torch.unique(torch.cat([torch.zeros(300, 1, dtype=torch.long),
                                torch.randint(0, 6, (300, 3), generator=g)], 1), dim=0).int()
    f = torch.randn(len(c), 4, generator=g)
    half = ME.SparseTensor(f.half(), coordinates=c)
    single = ME.SparseTensor(f[: len(c) // 2], coordinates=c[: len(c) // 2],
                             coordinate_manager=half.coordinate_manager)
    for op in (operator.add, operator.sub, operator.mul):
        assert op(half, single).F.dtype == op(single, half).F.dtype == torch.float32
    # on the union: the half rows widened exactly, the sum as f32's
    ab, ba = half + single, single + half
    assert torch.equal(ab.F, ba.F)


@pytest.mark.parametrize("features,weights", [(torch.float16, torch.float32),
                                              (torch.bfloat16, torch.float32),
                                              (torch.float32, torch.float64)])
def test_a_pointwise_convolution_refuses_weights_of_another_dtype(features, weights):
    c = torch.tensor([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 2, 1]], dtype=torch.int32)
    x = ME.SparseTensor(torch.ones(3, 4, dtype=features), coordinates=c)
    for k in (1, 3):
        conv = ME.MinkowskiConvolution(4, 5, kernel_size=k, dimension=3).to(weights)
        with pytest.raises(fieldkit.Error, match="expected weights of the features' dtype"):
            conv(x)


@pytest.mark.parametrize("dtype", HALF)
def test_half_points_quantize_interpolate_and_splat_as_their_f32_values(dtype):
    # f16 and bf16 widen exactly to f32 (torch < 2 has no CPU half floor or round)
    g = torch.Generator().manual_seed(3)
    pts = torch.cat([torch.zeros(60, 1), torch.rand(60, 3, generator=g) * 9], 1).to(dtype)
    f = torch.rand(60, 2, generator=g)
    half = ME.TensorField(f, coordinates=pts)
    single = ME.TensorField(f, coordinates=pts.float())
    a, b = half.sparse(), single.sparse()
    assert torch.equal(a.C, b.C) and torch.equal(a.F, b.F)
    assert torch.equal(a.slice(half).F, b.slice(single).F)
    assert torch.allclose(a.interpolate(half).F, b.interpolate(single).F)
    assert torch.equal(half.splat().C, single.splat().C)
    c = torch.tensor([[0, 1.5, 2.25, 3.75]], dtype=dtype)
    with pytest.warns(UserWarning, match="floored"):
        assert ME.SparseTensor(torch.ones(1, 1), coordinates=c).C.tolist() == [[0, 1, 2, 3]]


@pytest.mark.parametrize("dtype", HALF)
def test_weights_are_not_rounded_to_half_before_their_product(dtype):
    # spmm_average's 1/count and the interpolation's weights are kept in f32
    # at least: 1/1000 in f16 made the mean of 1000 hundreds 100.06, and an
    # f16 point's weights moved its value by an ulp (386.75 for 386.5).
    from fieldkit.minkowski.functional import spmm_average
    mat = torch.full((1000, 2), 96.0, dtype=dtype)
    mean, _, _ = spmm_average(torch.zeros(1000, dtype=torch.long), torch.arange(1000),
                              (1, 1000), mat)
    assert mean.dtype == dtype and mean.tolist() == [[96.0, 96.0]]
    c = torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1]], dtype=torch.int32)
    x = ME.SparseTensor(torch.tensor([[1000.0], [0.0], [0.0], [0.0]], dtype=dtype), c)
    g = torch.Generator().manual_seed(3)
    pts = torch.cat([torch.zeros(200, 1), torch.rand(200, 2, generator=g)], 1).to(dtype)
    got = ME.MinkowskiInterpolation()(x, pts)
    want = ME.MinkowskiInterpolation()(x, pts.float())  # the same points, f32 weights
    assert got.dtype == dtype and torch.equal(got, want)
