"""Reference names the audit of issue 14 found missing: MinkowskiBroadcast,
spmm_average and the SPMM Functions (gradcheck in f64 against dense torch),
ConvolutionMode / MinkowskiAlgorithm, PoolingMode's names, MinkowskiInstanceNorm on a
TensorField."""
import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME


def test_broadcast_copies_each_items_global_feature():
    x = random_sparse(n=50, extent=8)
    glob = ME.MinkowskiGlobalAvgPooling()(x)
    out = ME.MinkowskiBroadcast()(x, glob)
    assert out.coordinate_map_key == x.coordinate_map_key
    assert torch.equal(out.F, glob.F[x.C[:, 0].long()])
    g = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda gg: ME.MinkowskiBroadcast()(x, on_map(glob, gg)).F,
                                    (g,))


def test_broadcast_refuses_another_manager():
    x, other = random_sparse(seed=1), random_sparse(seed=2)
    with pytest.raises(ValueError, match="another manager"):
        ME.MinkowskiBroadcast()(x, ME.MinkowskiGlobalAvgPooling()(other))


ROWS = torch.tensor([0, 0, 2, 2, 2, 1, 0])
COLS = torch.tensor([1, 3, 0, 0, 2, 3, 0])


def dense_of(rows, cols, vals, size):
    a = torch.zeros(size, dtype=vals.dtype)
    return a.index_put((rows, cols), vals, accumulate=True)


def test_spmm_function_is_the_references_apply():
    vals = torch.randn(7, dtype=torch.float64, requires_grad=True)
    mat = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    out = ME.MinkowskiSPMMFunction.apply(ROWS, COLS, vals, (3, 4), mat)
    assert torch.allclose(out, dense_of(ROWS, COLS, vals, (3, 4)) @ mat, atol=1e-12)
    assert torch.autograd.gradcheck(
        lambda v, m: ME.MinkowskiSPMMFunction.apply(ROWS, COLS, v, (3, 4), m), (vals, mat))


def test_spmm_average_takes_each_rows_mean():
    mat = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    counts = torch.bincount(ROWS, minlength=3).double()
    expected = dense_of(ROWS, COLS, 1.0 / counts[ROWS], (3, 4)) @ mat
    out, coo, vals = ME.spmm_average(ROWS, COLS, (3, 4), mat)
    assert torch.allclose(out, expected, atol=1e-12)
    order = torch.sort(ROWS, stable=True).indices
    assert coo.dtype == torch.int64 and coo.tolist() == [ROWS[order].tolist(),
                                                         COLS[order].tolist()]
    assert torch.equal(vals, 1.0 / counts[ROWS[order]])
    assert torch.allclose(ME.spmm(coo[0], coo[1], vals, (3, 4), mat), expected, atol=1e-12)
    fn = ME.MinkowskiSPMMAverageFunction.apply
    assert torch.allclose(fn(ROWS, COLS, (3, 4), mat), expected, atol=1e-12)
    assert torch.autograd.gradcheck(lambda m: fn(ROWS, COLS, (3, 4), m), (mat,))
    assert torch.autograd.gradcheck(lambda m: ME.spmm_average(ROWS, COLS, (3, 4), m)[0], (mat,))


def test_spmm_function_rejects_out_of_range_rows_with_the_cpp_message():
    with pytest.raises(ME.Error, match=r"row indices in \[0, 3\), got 5"):
        ME.MinkowskiSPMMFunction.apply(torch.tensor([5]), torch.tensor([0]),
                                       torch.ones(1, dtype=torch.float64), (3, 4),
                                       torch.ones(4, 2, dtype=torch.float64))


def test_convolution_mode_and_algorithm_are_accepted_and_checked():
    conv = ME.MinkowskiConvolution(2, 3, kernel_size=3, dimension=2,
                                   convolution_mode=ME.ConvolutionMode.DIRECT_GEMM)
    assert conv.convolution_mode == ME.ConvolutionMode.DIRECT_GEMM
    assert ME.MinkowskiConvolutionTranspose(2, 3, kernel_size=2, stride=2, dimension=2) \
        .convolution_mode == ME.ConvolutionMode.DEFAULT
    with pytest.raises(ValueError, match="ConvolutionMode"):
        ME.MinkowskiConvolution(2, 3, kernel_size=3, dimension=2, convolution_mode=7)
    x = random_sparse(channels=2)
    y = ME.SparseTensor(x.F, x.C, minkowski_algorithm=ME.MinkowskiAlgorithm.SPEED_OPTIMIZED)
    assert torch.equal(y.F, x.F)


def test_instance_norm_on_a_tensor_field_normalizes_each_item():
    g = torch.Generator().manual_seed(0)
    c = torch.rand(12, 3, generator=g, dtype=torch.float64) * 4
    c[:, 0] = torch.tensor([0.0] * 7 + [1.0] * 5)
    f = torch.randn(12, 2, generator=g, dtype=torch.float64)
    out = ME.MinkowskiInstanceNorm(2).double()(ME.TensorField(f, c))
    assert isinstance(out, ME.TensorField) and torch.equal(out.C, c)
    for rows in (slice(0, 7), slice(7, 12)):
        item = f[rows]
        ref = (item - item.mean(0)) / torch.sqrt(item.var(0, unbiased=False) + 1e-8)
        assert torch.allclose(out.F[rows], ref, atol=1e-12)
    ff = f.clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda t: ME.MinkowskiInstanceNorm(2).double()(ME.TensorField(t, c)).F, (ff,))


@pytest.mark.parametrize("mode,reduce", [
    (ME.PoolingMode.GLOBAL_MAX_POOLING_KERNEL, lambda v: v.max(0).values),
    (ME.PoolingMode.GLOBAL_SUM_POOLING_DEFAULT, lambda v: v.sum(0)),
    (ME.PoolingMode.GLOBAL_AVG_POOLING_PYTORCH_INDEX, lambda v: v.mean(0)),
    (ME.PoolingMode.MAX, lambda v: v.max(0).values),
])
def test_global_pooling_takes_the_references_mode_names(mode, reduce):
    x = random_sparse(n=50, extent=8)
    out = ME.MinkowskiGlobalPooling(mode=mode)(x)
    for b in range(2):
        assert torch.allclose(out.F[b], reduce(x.F[x.C[:, 0] == b]), atol=1e-12)


def test_global_pooling_defaults_and_bad_modes():
    assert ME.MinkowskiGlobalPooling().mode == ME.PoolingMode.GLOBAL_AVG_POOLING_PYTORCH_INDEX
    assert ME.MinkowskiGlobalMaxPooling().mode == ME.PoolingMode.GLOBAL_MAX_POOLING_PYTORCH_INDEX
    with pytest.raises(ValueError, match="expected a PoolingMode"):
        ME.MinkowskiGlobalPooling(mode=9)


def test_to_sparse_takes_the_references_format_and_to_sparse_all():
    g = torch.Generator().manual_seed(2)
    dense = torch.randn(2, 3, 4, 5, generator=g, dtype=torch.float64)
    dense[0, :, 1, 2] = 0
    x = ME.to_sparse(dense)
    assert len(x) == 2 * 4 * 5 - 1
    for fmt, layout in (("BCXX", dense), ("BXXC", dense.permute(0, 2, 3, 1)),
                        ("CBXX", dense.permute(1, 0, 2, 3))):
        y = ME.to_sparse(layout.contiguous(), fmt)
        assert torch.equal(y.C, x.C) and torch.equal(y.F, x.F)
    assert len(ME.to_sparse_all(dense)) == 2 * 4 * 5
    with pytest.raises(ValueError, match="one B, one C and 2 X"):
        ME.to_sparse(dense, "BXXX")


def test_per_item_access_on_both_tensor_kinds():
    x = random_sparse(n=30, extent=5)
    c = x.C
    pts = torch.rand(7, 3, dtype=torch.float64) * 3
    pts[:, 0] = torch.tensor([1.0, 0, 1, 0, 0, 1, 1])
    field = ME.TensorField(torch.randn(7, 2, dtype=torch.float64), pts)
    for t, coords in ((x, c), (field, pts)):
        perms = t.decomposition_permutations
        assert len(perms) == 2
        assert torch.equal(torch.sort(torch.cat(perms)).values, torch.arange(len(t)))
        cs, fs = t.decomposed_coordinates_and_features
        for b in range(2):
            rows = (coords[:, 0] == b).nonzero().flatten()
            cb, fb = t.coordinates_and_features_at(b)
            assert torch.equal(cb, coords[rows, 1:]) and torch.equal(fb, t.F[rows])
            assert torch.equal(cs[b], cb) and torch.equal(fs[b], fb)
            assert torch.equal(t.decomposed_features[b], fb)
        assert t.get_device() == -1 and t.shape == t.F.shape and t.dtype == torch.float64
        assert t.float().dtype == torch.float32 and not t.detach().requires_grad
    assert field.tensor_stride == [1]


def test_per_item_access_with_gaps_rounding_and_bad_batch_indices():
    # A SparseTensor's item b is batch index b (an absent one empty), as the
    # reference's; a field's item i is its i-th present batch index, as the
    # reference's field reads its origin field map: with indices {0, 5} its
    # item 1 is batch 5 (features_at(1) was empty).
    c = torch.tensor([[0, 0, 0], [5, 1, 1], [5, 2, 2], [0, 3, 3]], dtype=torch.int32)
    x = ME.SparseTensor(torch.arange(8.0).reshape(4, 2), c)
    assert x.features_at(1).shape == (0, 2) and x.coordinates_at(5).shape == (2, 2)
    field = ME.TensorField(torch.arange(8.0).reshape(4, 2), c.double())
    for i in range(2):
        assert torch.equal(field.features_at(i), field.decomposed_features[i])
    assert torch.equal(field.features_at(1), x.features_at(5))
    with pytest.raises(IndexError, match="batch item 5 of 2"):
        field.features_at(5)
    # A field's batch column is rounded as everywhere else (0.4 -> 0, 0.6 -> 1).
    pts = torch.tensor([[0.4, 0.1, 0.1], [0.6, 0.2, 0.2], [1.0, 0.3, 0.3]])
    field = ME.TensorField(torch.ones(3, 1), pts)
    assert [len(p) for p in field.decomposition_permutations] == [1, 2]
    assert torch.equal(field.features_at(1), torch.ones(2, 1))
    # In f32, 2^31 is refused as past int32 (2^31 - 1 rounded to it in f32).
    with pytest.raises(ME.Error, match="within int32"):
        ME.MinkowskiGlobalAvgPooling()(ME.TensorField(
            torch.ones(1, 1), torch.tensor([[2.0 ** 31, 0.0, 0.0]])))
    # NaN, infinities and indices past int32 are refused by name (cast to
    # int32, batch 2^32 was pooled with batch 0).
    pool = ME.MinkowskiGlobalAvgPooling()
    for bad in (float("nan"), float("inf"), 2.0 ** 32):
        far = pts.clone().double()
        far[0, 0] = bad
        with pytest.raises(ME.Error, match="batch indices"):
            pool(ME.TensorField(torch.ones(3, 1, dtype=torch.float64), far))
    # InstanceNorm takes a field of integer coordinates (it refused them).
    ints = ME.TensorField(torch.tensor([[1.0], [2.0], [4.0], [8.0]]),
                          torch.tensor([[0, 0, 0], [0, 1, 1], [1, 0, 0], [1, 2, 2]]))
    floats = ME.TensorField(ints.F, ints.C.double())
    norm = ME.MinkowskiInstanceNorm(1)
    assert torch.allclose(norm(ints).F, norm(floats).F)


def test_slice_and_cat_slice_survive_feature_layers_on_the_field():
    pts = torch.tensor([[0, 0.2, 0.3], [0, 0.7, 0.1], [0, 1.5, 0.5], [1, 0.1, 0.1]])
    field = ME.TensorField(torch.tensor([[1.0], [3.0], [5.0], [7.0]]), pts)
    x = field.sparse()
    relu_field = ME.MinkowskiReLU()(field)  # keeps the field's quantizations
    back = x.slice(relu_field)
    assert back.F.flatten().tolist() == [2.0, 2.0, 5.0, 7.0]
    both = x.cat_slice(field)
    assert isinstance(both, ME.TensorField) and torch.equal(both.C, pts)
    assert both.F.tolist() == [[2.0, 1.0], [2.0, 3.0], [5.0, 5.0], [7.0, 7.0]]
    normed = ME.MinkowskiBatchNorm(1)(field)
    assert torch.equal(x.slice(normed).F, back.F)


def test_kernel_map_in_the_references_form():
    x = random_sparse(n=40, extent=6)
    mgr, key = x.coordinate_manager, x.coordinate_map_key
    strided = mgr.stride(key, [2])
    maps = mgr.kernel_map(key, strided, stride=2, kernel_size=2)
    c_in, c_out = mgr.coordinates(key), mgr.coordinates(strided)
    offsets = torch.tensor(ME.KernelRegion.cube([2]).offsets([1, 1])).view(-1, 2)
    assert sum(m.shape[1] for m in maps.values()) == len(x)  # each input in one window
    for k, m in maps.items():
        assert m.dtype == torch.int32 and m.shape[0] == 2 and m.shape[1] > 0
        i, o = m.long()
        # the output's coordinate plus offset k is the input's coordinate
        assert torch.equal(c_out[o, 0], c_in[i, 0])
        assert torch.equal(c_out[o, 1:] + offsets[k], c_in[i, 1:])
    same = mgr.kernel_map(key, key, kernel_size=1)
    assert list(same) == [0] and torch.equal(same[0][0], torch.arange(len(x), dtype=torch.int32))
    up = mgr.kernel_map(strided, key, stride=2, kernel_size=2, is_transpose=True)
    assert {k: torch.equal(m, up[k].flip(0)) for k, m in maps.items()} == \
        {k: True for k in maps}
    with pytest.raises(ME.Error, match="offset in"):
        mgr.region_kernel_map(key, key, ME.KernelRegion.cube([3]), False).offset_pairs(9)
