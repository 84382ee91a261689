"""SparseTensor, TensorField and building sparse inputs."""
import numpy as np
import pytest
import torch

import fieldkit
import fieldkit.minkowski as ME
from fieldkit.minkowski.coordinates import unique_coordinate_map

# 16 points, 14 distinct voxels (the reference suite's shape of example):
# rows 0/1 and 4/5 share a voxel.
COORDS = torch.tensor([[0, 0, 0], [0, 0, 0], [0, 1, 0], [0, 2, 0], [1, 0, 1], [1, 0, 1],
                       [1, 1, 1], [1, 2, 1], [0, 3, 3], [0, 4, 4], [1, 5, 5], [1, 6, 6],
                       [0, 7, 7], [1, 8, 8], [0, 9, 9], [1, 9, 9]], dtype=torch.int32)
FEATS = torch.arange(16, dtype=torch.float64)[:, None]


@pytest.mark.parametrize("mode,first_rows", [
    (ME.SparseTensorQuantizationMode.UNWEIGHTED_AVERAGE, [0.5, 4.5]),
    (ME.SparseTensorQuantizationMode.UNWEIGHTED_SUM, [1.0, 9.0]),
    (ME.SparseTensorQuantizationMode.MAX_POOL, [1.0, 5.0]),
    (ME.SparseTensorQuantizationMode.FIRST_OCCURRENCE, [0.0, 4.0]),
])
def test_duplicates_are_reduced_by_the_quantization_mode(mode, first_rows):
    x = ME.SparseTensor(FEATS, COORDS, quantization_mode=mode)
    assert len(x) == 14
    rows = {tuple(c): f.item() for c, f in zip(x.C.tolist(), x.F)}
    assert [rows[(0, 0, 0)], rows[(1, 0, 1)]] == first_rows
    assert rows[(0, 2, 0)] == 3.0


def test_random_subsample_keeps_one_of_the_duplicates_reproducibly():
    a = ME.SparseTensor(FEATS, COORDS)
    b = ME.SparseTensor(FEATS, COORDS)
    assert torch.equal(a.F, b.F)
    rows = {tuple(c): f.item() for c, f in zip(a.C.tolist(), a.F)}
    assert rows[(0, 0, 0)] in (0.0, 1.0) and rows[(1, 0, 1)] in (4.0, 5.0)


def test_unique_index_and_inverse_mapping_reconstruct_the_input():
    x = ME.SparseTensor(FEATS, COORDS)
    assert torch.equal(COORDS[x.unique_index], x.C)
    assert torch.equal(x.C[x.inverse_mapping], COORDS)


def test_quantization_is_differentiable():
    f = FEATS.clone().requires_grad_()
    x = ME.SparseTensor(f, COORDS, quantization_mode=ME.SparseTensorQuantizationMode.UNWEIGHTED_AVERAGE)
    x.F.sum().backward()
    assert f.grad[0].item() == 0.5 and f.grad[2].item() == 1.0


def test_float_coordinates_are_floored_with_a_warning():
    with pytest.warns(UserWarning, match="floored to int32"):
        x = ME.SparseTensor(torch.ones(2, 1), torch.tensor([[0, 0.7, -0.2], [0, 1.2, 3.9]]))
    assert x.C.tolist() == [[0, 0, -1], [0, 1, 3]]


@pytest.mark.filterwarnings("ignore:coordinates of dtype")
@pytest.mark.parametrize("coords,message", [
    (torch.tensor([[0, 2**32 + 5, 0], [0, 1, 1]], dtype=torch.int64), "within int32"),
    (torch.tensor([[0, -2.0**40, 0], [0, 1, 1]]), "within int32"),
    (torch.tensor([[0, 2.0**31, 0], [0, 1, 1]], dtype=torch.float32), "within int32"),
    (torch.tensor([[0, float("nan"), 0], [0, 1, 1]]), "finite coordinates"),
])
def test_coordinates_int32_cannot_hold_are_refused(coords, message):
    # A cast would wrap 2^32 + 5 around to 5: another point, silently.
    with pytest.raises(ValueError, match=message):
        ME.SparseTensor(torch.ones(2, 1), coords)
    with pytest.raises(ValueError, match=message):
        unique_coordinate_map(coords)


def test_sparse_quantize_with_labels():
    pts = np.array([[0.1, 0.2], [0.3, 0.4], [1.5, 0.2], [1.6, 0.1]])
    labels = np.array([3, 3, 1, 2])
    c, lab = sparse_quantize_labels(pts, labels)
    assert c.tolist() == [[0, 0], [1, 0]]
    assert lab.tolist() == [3, -100]  # the second voxel's points disagree


def sparse_quantize_labels(pts, labels):
    return ME.sparse_quantize(pts, labels=labels, quantization_size=1.0)


def test_sparse_quantize_returns_index_and_inverse():
    pts = torch.tensor([[0.1, 0.2], [2.5, 2.5], [0.3, 0.4]])
    c, idx, inv = ME.sparse_quantize(
        pts, return_index=True, return_inverse=True, quantization_size=0.5,
        quantization_mode=ME.SparseTensorQuantizationMode.FIRST_OCCURRENCE)
    assert c.tolist() == [[0, 0], [5, 5]]
    assert idx.tolist() == [0, 1] and inv.tolist() == [0, 1, 0]


def test_batched_coordinates_and_sparse_collate():
    a, b = torch.tensor([[1, 2], [3, 4]]), torch.tensor([[5, 6]])
    bc = ME.batched_coordinates([a, b])
    assert bc.dtype == torch.int32
    assert bc.tolist() == [[0, 1, 2], [0, 3, 4], [1, 5, 6]]
    c, f = ME.sparse_collate([a, b], [torch.ones(2, 3), torch.zeros(1, 3)])
    assert c.tolist() == bc.tolist() and f.shape == (3, 3)


def test_dense_places_every_feature_in_its_cell():
    x = ME.SparseTensor(torch.tensor([[1.0], [2.0]]), torch.tensor([[0, 1, 2], [1, 0, 0]]))
    d, lo, ts = x.dense()
    assert d.shape == (2, 1, 2, 3)
    assert d[0, 0, 1, 2] == 1.0 and d[1, 0, 0, 0] == 2.0 and d.sum() == 3.0


def test_tensor_field_slice_brings_features_back_to_the_points():
    pts = torch.tensor([[0, 0.2, 0.3], [0, 0.7, 0.1], [0, 1.5, 0.5], [1, 0.1, 0.1]])
    field = ME.TensorField(torch.tensor([[1.0], [3.0], [5.0], [7.0]]), pts)
    x = field.sparse()
    assert len(x) == 3
    back = x.slice(field)
    assert back.F.flatten().tolist() == [2.0, 2.0, 5.0, 7.0]  # voxel averages


def test_arithmetic_on_the_same_map():
    x = ME.SparseTensor(FEATS, COORDS)
    assert torch.equal((x + x).F, 2 * x.F)
    y = ME.SparseTensor(FEATS, COORDS)  # same coordinates, another manager
    with pytest.raises(ValueError, match="same coordinate map"):
        x + y


def test_power_keeps_the_coordinates_under_both_names():
    x = ME.SparseTensor(FEATS, COORDS)
    for y in (x ** 2, x.__power__(2)):
        assert torch.equal(y.F, x.F ** 2) and torch.equal(y.C, x.C)
        assert y.coordinate_map_key == x.coordinate_map_key
    field = ME.TensorField(FEATS, COORDS.double())  # every point, duplicates too
    assert torch.equal((field ** 3).F, FEATS ** 3) and torch.equal((field ** 3).C, field.C)


def test_errors_carry_the_cpp_message():
    with pytest.raises(fieldkit.Error, match="tensor stride"):
        ME.SparseTensor(torch.ones(1, 1), torch.tensor([[0, 1, 1]]), tensor_stride=2)
    x = ME.SparseTensor(torch.ones(3, 2), torch.tensor([[0, 0, 0], [0, 1, 0], [0, 2, 0]]))
    conv = ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2)  # 3 != 2 channels
    with pytest.raises(ValueError, match=r"minkowski::convolution: expected a weight of shape "
                                         r"\(K=9, C_in=2, C_out\), got \[9, 3, 4\]"):
        conv(x)
    with pytest.raises(fieldkit.Error, match="features' dtype f32, got f64"):
        ME.MinkowskiConvolution(2, 4, kernel_size=3, dimension=2).double()(x)
    with pytest.raises(fieldkit.Error, match="batch indices >= 0"):
        ME.MinkowskiGlobalMaxPooling()(
            ME.SparseTensor(torch.ones(1, 2), torch.tensor([[-1, 0, 0]])))
    with pytest.raises(fieldkit.Error, match=r"positive kernel size.*, got \[0,0\]"):
        ME.MinkowskiConvolution(1, 1, kernel_size=0, dimension=2)


def test_set_deterministic_round_trips():
    ME.set_deterministic(True)
    assert ME.is_deterministic()
    ME.set_deterministic(False)
    assert not ME.is_deterministic()


def test_shared_coordinate_manager_mode():
    ME.set_sparse_tensor_operation_mode(ME.SparseTensorOperationMode.SHARE_COORDINATE_MANAGER)
    try:
        a = ME.SparseTensor(FEATS, COORDS)
        b = ME.SparseTensor(FEATS, COORDS)
        assert a.coordinate_manager is b.coordinate_manager is ME.global_coordinate_manager()
        assert a.coordinate_map_key != b.coordinate_map_key  # a new map per insert
    finally:
        ME.clear_global_coordinate_manager()
        ME.set_sparse_tensor_operation_mode(
            ME.SparseTensorOperationMode.SEPARATE_COORDINATE_MANAGER)
    c = ME.SparseTensor(FEATS, COORDS)
    assert c.coordinate_manager is not a.coordinate_manager


def test_utils_module_path():
    c = ME.utils.batched_coordinates([torch.zeros(1, 2)])
    assert c.tolist() == [[0, 0, 0]]


def test_non_contiguous_features_give_the_contiguous_result():
    wide = torch.randn(len(COORDS), 6, dtype=torch.float64)
    view = wide[:, ::2]  # strided columns
    assert not view.is_contiguous()
    conv = ME.MinkowskiConvolution(3, 2, kernel_size=3, dimension=2).double()
    a = conv(ME.SparseTensor(view, COORDS, quantization_mode=ME.SparseTensorQuantizationMode.FIRST_OCCURRENCE))
    b = conv(ME.SparseTensor(view.contiguous(), COORDS,
                             quantization_mode=ME.SparseTensorQuantizationMode.FIRST_OCCURRENCE))
    assert torch.equal(a.F, b.F)


def test_cat_joins_channels_on_one_map_only():
    x = ME.SparseTensor(FEATS, COORDS)
    y = ME.SparseTensor(2 * x.F, coordinate_map_key=x.coordinate_map_key,
                        coordinate_manager=x.coordinate_manager)
    assert torch.equal(ME.cat(x, y).F, torch.cat([x.F, 2 * x.F], 1))
    with pytest.raises(ValueError, match="same coordinate map"):
        ME.cat(x, ME.SparseTensor(FEATS, COORDS))


def test_dense_to_sparse_and_back():
    dense = torch.zeros(2, 3, 4, 5, dtype=torch.float64)
    dense[0, :, 1, 2] = torch.tensor([1.0, 0.0, 2.0])
    dense[1, 1, 3, 4] = 5.0
    dense.requires_grad_()
    x = ME.to_sparse(dense)
    assert x.C.tolist() == [[0, 1, 2], [1, 3, 4]]
    assert torch.equal(ME.MinkowskiToDenseTensor([2, 3, 4, 5])(x), dense)
    assert len(ME.MinkowskiToSparseTensor(remove_zeros=False)(dense)) == 2 * 4 * 5
    x.F.sum().backward()
    assert dense.grad.sum() == 6  # the two kept cells, 3 channels each


def test_stack_containers_combine_their_childrens_outputs():
    x = ME.SparseTensor(FEATS, COORDS)
    a, b = ME.MinkowskiReLU(), ME.MinkowskiTanh()
    assert torch.equal(ME.MinkowskiStackCat(a, b)(x).F, torch.cat([a(x).F, b(x).F], 1))
    assert torch.equal(ME.MinkowskiStackSum(a, b)(x).F, a(x).F + b(x).F)
    assert torch.equal(ME.mean(a(x), b(x)).F, (a(x).F + b(x).F) / 2)


def test_global_pooling_gives_no_row_to_an_item_without_points():
    # The reference's origin map holds the items present: a scene cropped to
    # nothing (item 1 here) gets no row, and the glob broadcasts back.
    f = torch.tensor([[1.0], [2.0], [4.0]], requires_grad=True)
    x = ME.SparseTensor(f, torch.tensor([[2, 0, 0], [0, 1, 1], [2, 1, 0]], dtype=torch.int32))
    y = ME.MinkowskiGlobalAvgPooling()(x)
    assert y.C.tolist() == [[0, 0, 0], [2, 0, 0]] and y.F.tolist() == [[2.0], [2.5]]
    b = ME.MinkowskiBroadcastAddition()(x, y)
    assert b.F.tolist() == [[3.5], [4.0], [6.5]]
    b.F.sum().backward()
    assert f.grad.tolist() == [[2.0], [2.0], [2.0]]
    # the decomposition lists the same items, in the same order
    assert [p.tolist() for p in x.decomposition_permutations] == [[1], [0, 2]]


def test_tensor_field_quantizes_large_coordinates_exactly():
    # Integer points past 2^24 (which f32 cannot hold) keep their voxel; f32
    # points past it on a stride-3 grid land on a multiple of 3.
    pts = torch.tensor([[0, 16777217, 3], [0, 33554435, 5], [0, 123456789, -98765431]])
    for dtype in (torch.int32, torch.int64):
        tf = ME.TensorField(torch.ones(3, 1), pts.to(dtype))
        assert tf.sparse().C.tolist() == pts.tolist()
    field = ME.TensorField(torch.ones(1, 1), torch.tensor([[0.0, 33554432.0, 0.0]]))
    assert field.sparse(tensor_stride=3).C.tolist() == [[0, 33554430, 0]]


def test_dense_refuses_a_negative_batch_index():
    x = ME.SparseTensor(torch.tensor([[7.0], [3.0]]),
                        torch.tensor([[-1, 1, 1], [0, 1, 1]], dtype=torch.int32))
    with pytest.raises(ValueError, match="batch indices >= 0, got -1"):
        x.dense()
