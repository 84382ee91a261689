"""Porting gaps against MinkowskiEngine's documented API: what a script or a
checkpoint written for the reference expects of the same call. Expected
values are worked out by hand from the reference's stated semantics."""
import numpy as np
import pytest
import torch

import fieldkit.minkowski as ME

QM = ME.SparseTensorQuantizationMode


# -- batched_coordinates / sparse_collate: a float dtype keeps fractions -------
SAMPLES = [torch.tensor([[0.5, -1.25], [2.75, 3.0]]), torch.tensor([[-0.5, 0.25]])]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batched_coordinates_keep_fractions_in_a_float_dtype(dtype):
    b = ME.utils.batched_coordinates(SAMPLES, dtype=dtype)
    assert b.dtype == dtype
    assert b.tolist() == [[0, 0.5, -1.25], [0, 2.75, 3.0], [1, -0.5, 0.25]]


def test_batched_coordinates_floor_in_an_integer_dtype():
    b = ME.utils.batched_coordinates(SAMPLES)
    assert b.dtype == torch.int32
    assert b.tolist() == [[0, 0, -2], [0, 2, 3], [1, -1, 0]]


def test_sparse_collate_keeps_fractions_in_a_float_dtype():
    feats = [torch.ones(2, 1), 2 * torch.ones(1, 1)]
    bc, bf = ME.utils.sparse_collate(SAMPLES, feats, dtype=torch.float64)
    assert bc.tolist() == [[0, 0.5, -1.25], [0, 2.75, 3.0], [1, -0.5, 0.25]]
    assert bf.flatten().tolist() == [1.0, 1.0, 2.0]


def test_float_batched_coordinates_name_a_mismatched_sample():
    with pytest.raises(ValueError, match=r"expected N_i x 2 coordinates, got shape \(1, 3\) "
                                         r"for sample 1"):
        ME.utils.batched_coordinates([SAMPLES[0], torch.zeros(1, 3)], dtype=torch.float32)


# -- RANDOM_SUBSAMPLE: the kept rows are the rows unique_index names ----------
# Voxels a, b, a, c, b, a, c, b, a, c: first occurrences at rows 0, 1, 3.
VOXELS = torch.tensor([[0, 0, 0], [0, 1, 0], [0, 2, 2]], dtype=torch.int32)
DUPLICATED = VOXELS[torch.tensor([0, 1, 0, 2, 1, 0, 2, 1, 0, 2])]
ROW_FEATURES = torch.arange(10, dtype=torch.float64)[:, None]


def test_random_subsample_features_line_up_with_unique_index():
    labels = 10 * torch.arange(10)
    x = ME.SparseTensor(ROW_FEATURES, DUPLICATED)
    assert x.unique_index.tolist() == [0, 1, 3]
    assert torch.equal(x.F, ROW_FEATURES[x.unique_index])
    assert (labels[x.unique_index] == 10 * x.F.flatten().long()).all()


def test_a_fields_random_subsample_keeps_the_first_point_of_each_voxel():
    field = ME.TensorField(ROW_FEATURES, DUPLICATED.double() + 0.5,
                           quantization_mode=QM.RANDOM_SUBSAMPLE)
    x = field.sparse()
    assert x.F.flatten().tolist() == [0.0, 1.0, 3.0]


# -- cat / sum / mean / var: one list argument, and TensorFields -------------
def test_cat_takes_one_list_or_tuple():
    x = ME.SparseTensor(ROW_FEATURES, DUPLICATED)
    y = x * 2.0
    want = torch.cat([x.F, y.F], 1)
    assert torch.equal(ME.cat([x, y]).F, want) and torch.equal(ME.cat((x, y)).F, want)
    assert ME.cat([x, y]).coordinate_map_key == x.coordinate_map_key


POINTS = torch.tensor([[0, 0.2, 0.3], [0, 0.7, 0.1], [0, 1.5, 0.5], [1, 0.1, 0.1]])
POINT_FEATURES = torch.tensor([[1.0], [3.0], [5.0], [7.0]])


def test_cat_sum_mean_var_of_fields_on_the_same_points():
    field = ME.TensorField(POINT_FEATURES, POINTS)
    other = ME.TensorField(2 * POINT_FEATURES, POINTS.clone(),
                           coordinate_manager=field.coordinate_manager)
    both = ME.cat([field, other])
    assert isinstance(both, ME.TensorField) and torch.equal(both.C, POINTS)
    assert both.F.tolist() == [[1, 2], [3, 6], [5, 10], [7, 14]]
    assert ME.sum(field, other).F.flatten().tolist() == [3, 9, 15, 21]
    assert ME.mean(field, other).F.flatten().tolist() == [1.5, 4.5, 7.5, 10.5]
    assert ME.var(field, other).F.flatten().tolist() == [0.25, 2.25, 6.25, 12.25]


def test_cat_refuses_mixed_kinds_and_fields_on_other_points():
    field = ME.TensorField(POINT_FEATURES, POINTS)
    with pytest.raises(TypeError, match="all SparseTensors or all TensorFields"):
        ME.cat(field, field.sparse())
    moved = ME.TensorField(POINT_FEATURES, POINTS + 1, coordinate_manager=field.coordinate_manager)
    with pytest.raises(ValueError, match="expected TensorFields on the same points"):
        ME.cat(field, moved)


# -- slice / cat_slice with a SparseTensor ------------------------------------
SLICE_COORDS = torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 0], [1, 2, 2]], dtype=torch.int32)
SLICE_FEATURES = torch.tensor([[1.0], [2.0], [3.0], [4.0]])


def test_slice_with_the_sparse_tensor_that_made_the_map():
    x = ME.SparseTensor(SLICE_FEATURES, SLICE_COORDS)  # rows 1, 2, 4 (first occurrences)
    y = x * 2.0  # on x's map
    s = y.slice(x)
    assert isinstance(s, ME.TensorField)
    assert s.F.flatten().tolist() == [2.0, 4.0, 2.0, 8.0]  # each input row's voxel
    assert torch.equal(s.C, SLICE_COORDS.float())
    c = y.cat_slice(x)
    assert c.F.tolist() == [[2.0, 1.0], [4.0, 2.0], [2.0, 1.0], [8.0, 4.0]]


def test_slice_with_a_sparse_tensor_names_what_it_needs():
    x = ME.SparseTensor(SLICE_FEATURES, SLICE_COORDS)
    with pytest.raises(ValueError, match="expected a SparseTensor on this tensor's map"):
        x.slice(ME.SparseTensor(SLICE_FEATURES, SLICE_COORDS))  # another manager
    on_map = ME.SparseTensor(x.F, coordinate_map_key=x.coordinate_map_key,
                             coordinate_manager=x.coordinate_manager)
    with pytest.raises(ValueError, match="built from coordinates"):
        x.slice(on_map)
    with pytest.raises(TypeError, match="expected a TensorField or a SparseTensor, got Tensor"):
        x.cat_slice(SLICE_FEATURES)


# -- MinkowskiInterpolation(return_kernel_map=True): tensors ------------------
def test_interpolation_returns_its_kernel_map_as_tensors():
    x = ME.SparseTensor(torch.tensor([[1.0], [3.0]]),
                        torch.tensor([[0, 0, 0], [0, 1, 0]], dtype=torch.int32))
    # The query (0.25, 0) has corners (0, 0) (weight 0.75) and (1, 0) (0.25) present.
    out, (in_map, out_map), weights = ME.MinkowskiInterpolation(
        return_kernel_map=True, return_weights=True)(x, torch.tensor([[0, 0.25, 0.0]]))
    assert out.flatten().tolist() == [1.5]
    assert isinstance(in_map, torch.Tensor) and isinstance(out_map, torch.Tensor)
    pairs = sorted(zip(in_map.tolist(), out_map.tolist(), weights.tolist()))
    assert pairs == [(0, 0, 0.75), (1, 0, 0.25)]
    rebuilt = torch.zeros(1, 1, dtype=out.dtype).index_add(
        0, out_map, weights[:, None].to(out.dtype) * x.F[in_map].to(out.dtype))
    assert torch.equal(rebuilt, out)


# -- sparse_quantize: quantization_size None, numpy and torch per axis --------
def test_sparse_quantize_without_a_quantization_size_floors():
    c = np.array([[0.5, 1.7], [0.2, 1.1], [-0.5, 2.0]])
    assert ME.utils.sparse_quantize(c, quantization_size=None).tolist() == [[0, 1], [-1, 2]]


@pytest.mark.parametrize("size", [np.array([0.5, 2.0]), torch.tensor([0.5, 2.0]), [0.5, 2.0]])
def test_sparse_quantize_takes_a_per_axis_size_as_an_array(size):
    c = np.array([[1.2, 3.9], [1.4, 2.1], [0.4, 4.5]])  # / size: (2.4, 1.95), (2.8, 1.05), (0.8, 2.25)
    assert ME.utils.sparse_quantize(c, quantization_size=size).tolist() == [[2, 1], [0, 2]]


def test_sparse_quantize_names_a_bad_quantization_size():
    with pytest.raises(ValueError, match="expected quantization_size as None, a number"):
        ME.utils.sparse_quantize(np.zeros((2, 2)), quantization_size="fine")


@pytest.mark.parametrize("name, value", [("seed", 1.5), ("seed", True), ("seed", -1),
                                         ("seed", 2 ** 64), ("seed", None),
                                         ("ignore_label", 0.5), ("ignore_label", "x")])
def test_sparse_quantize_names_a_seed_or_label_that_is_not_a_whole_number(name, value):
    with pytest.raises(ValueError, match=f"expected {name} a whole number in"):
        ME.utils.sparse_quantize(np.zeros((2, 2)), labels=np.zeros(2, dtype=np.int64),
                                 **{name: value})


def test_sparse_quantize_takes_a_whole_float_or_0d_tensor_seed():
    c = np.random.default_rng(0).random((50, 2)) * 3
    mode = ME.SparseTensorQuantizationMode.RANDOM_SUBSAMPLE
    picks = [ME.utils.sparse_quantize(c, quantization_mode=mode, return_index=True, seed=s)[1]
             for s in (7, 7.0, torch.tensor(7), 8)]
    assert all(np.array_equal(picks[0], p) for p in picks[1:3])
    assert not np.array_equal(picks[0], picks[3])


# -- TensorField.sparse(tensor_stride, coordinate_map_key, quantization_mode) --
def test_field_sparse_takes_the_references_positional_order():
    field = ME.TensorField(POINT_FEATURES, POINTS)
    x = field.sparse(2, None, QM.UNWEIGHTED_SUM)  # stride 2: (0,0,0) holds 1+3+5, (1,0,0) 7
    assert x.tensor_stride == [2, 2]
    assert {tuple(c): f for c, f in zip(x.C.tolist(), x.F.flatten().tolist())} == \
        {(0, 0, 0): 9.0, (1, 0, 0): 7.0}
    assert field.dimension == field.D == 2


def test_field_sparse_onto_an_existing_map():
    field = ME.TensorField(POINT_FEATURES, POINTS)
    x = field.sparse()  # rows (0,0,0) avg 2, (0,1,0) 5, (1,0,0) 7
    assert x.C.tolist() == [[0, 0, 0], [0, 1, 0], [1, 0, 0]]
    other = ME.TensorField(torch.tensor([[10.0], [20.0], [40.0]]),
                           torch.tensor([[1, 0.9, 0.4], [0, 0.5, 0.5], [0, 0.1, 0.9]]),
                           coordinate_manager=field.coordinate_manager)
    y = other.sparse(coordinate_map_key=x.coordinate_map_key)
    assert y.coordinate_map_key == x.coordinate_map_key
    assert y.F.flatten().tolist() == [30.0, 0.0, 10.0]  # (0,1,0) has no point of `other`
    assert (y * 1.0).slice(other).F.flatten().tolist() == [10.0, 30.0, 30.0]
    away = ME.TensorField(torch.ones(1, 1), torch.tensor([[0, 5.0, 5.0]]),
                          coordinate_manager=field.coordinate_manager)
    with pytest.raises(ValueError, match="1 of 1 points off it"):
        away.sparse(coordinate_map_key=x.coordinate_map_key)


def test_field_sparse_with_splat_mode_splats():
    field = ME.TensorField(POINT_FEATURES.double(), POINTS.double())
    via_mode = field.sparse(quantization_mode=QM.SPLAT_LINEAR_INTERPOLATION)
    direct = field.splat()
    assert torch.equal(via_mode.C, direct.C) and torch.equal(via_mode.F, direct.F)


# -- 1x1 unit-stride transposed convolution: the reference's 2-D kernel -------
@pytest.mark.parametrize("layer", [ME.MinkowskiConvolutionTranspose,
                                   ME.MinkowskiGenerativeConvolutionTranspose])
def test_pointwise_transposed_kernel_is_in_by_out(layer):
    conv = layer(3, 2, kernel_size=1, stride=1, dimension=2).double()
    assert conv.kernel.shape == (3, 2)
    w = torch.arange(6, dtype=torch.float64).reshape(3, 2)
    conv.load_state_dict({"kernel": w})  # a reference checkpoint's shape
    c = torch.tensor([[0, 0, 0], [0, 1, 2], [1, 3, 1]], dtype=torch.int32)
    f = torch.tensor([[1.0, 0, 2], [0, 1, 0], [3, 1, 1]], dtype=torch.float64)
    y = conv(ME.SparseTensor(f, c))
    got = {tuple(r): v for r, v in zip(y.C.tolist(), y.F.tolist())}
    assert got == {tuple(r): v for r, v in zip(c.tolist(), (f @ w).tolist())}


# -- detach: in place, returning the tensor -----------------------------------
def test_detach_is_in_place_and_returns_the_tensor():
    x = ME.SparseTensor(SLICE_FEATURES.clone().requires_grad_(), SLICE_COORDS)
    field = ME.TensorField(POINT_FEATURES.clone().requires_grad_(), POINTS)
    for t in (x, field):
        assert t.requires_grad
        assert t.detach() is t and not t.requires_grad and not t.F.requires_grad


# -- SPLAT_LINEAR_INTERPOLATION elsewhere, get_gpu_memory_info ----------------
def test_splat_mode_has_the_references_value_and_is_refused_off_a_field():
    assert QM.SPLAT_LINEAR_INTERPOLATION == 5
    with pytest.raises(ValueError, match="got SPLAT_LINEAR_INTERPOLATION"):
        ME.SparseTensor(SLICE_FEATURES, SLICE_COORDS,
                        quantization_mode=QM.SPLAT_LINEAR_INTERPOLATION)
    with pytest.raises(ValueError, match="sparse_quantize: expected a quantization mode among"):
        ME.utils.sparse_quantize(np.zeros((2, 2)), quantization_mode=QM.SPLAT_LINEAR_INTERPOLATION)


def test_gpu_memory_info_is_total_then_free(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (3 << 30, 80 << 30))  # (free, total)
    assert ME.get_gpu_memory_info() == (80 << 30, 3 << 30)


def test_gpu_memory_info_without_a_device_says_so(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="expected a CUDA device visible to torch"):
        ME.get_gpu_memory_info()


def test_linear_and_nonlinearity_state_dict_keys_are_the_references():
    # MinkowskiLinear keeps its nn.Linear as `linear`, the nonlinearities
    # theirs as `module`: a reference checkpoint's keys load as they are.
    assert sorted(ME.MinkowskiLinear(3, 2).state_dict()) == ["linear.bias", "linear.weight"]
    assert list(ME.MinkowskiPReLU().state_dict()) == ["module.weight"]
    lin = ME.MinkowskiLinear(3, 2, bias=False)
    x = ME.SparseTensor(torch.arange(12.0).reshape(4, 3),
                        torch.tensor([[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1]], dtype=torch.int32))
    assert torch.allclose(lin(x).F, x.F @ lin.linear.weight.T)


def test_manager_stride_takes_an_int_and_origin_map_groups_rows_by_batch():
    mgr = ME.CoordinateManager(D=2)
    c = torch.tensor([[1, 0, 0], [0, 2, 2], [1, 3, 3], [0, 1, 0]], dtype=torch.int32)
    key, _ = mgr.insert_and_map(c)
    strided = mgr.stride(key, 2)
    assert strided == mgr.stride(key, [2, 2]) and strided.tensor_stride == [2, 2]
    with pytest.raises(ValueError, match="string_id"):
        mgr.stride(key, 2, string_id="other")
    items, rows = mgr.origin_map(key)
    coords = mgr.get_coordinates(key)
    assert items.tolist() == [0, 1]
    for b, r in zip(items.tolist(), rows):
        assert sorted(coords[r, 0].tolist()) == [b] * 2
    assert sorted(torch.cat(rows).tolist()) == [0, 1, 2, 3]
    assert mgr.get_kernel_map(key, key, kernel_size=3).keys() == \
        mgr.kernel_map(key, key, kernel_size=3).keys()


def test_map_key_has_the_references_accessors():
    x = ME.SparseTensor(torch.ones(2, 1), torch.tensor([[0, 0, 0], [0, 2, 2]], dtype=torch.int32),
                        tensor_stride=2)
    key = x.coordinate_map_key
    assert key.get_tensor_stride() == [2, 2]
    assert key.get_key() == ([2, 2], key.tag)
    assert key.get_coordinate_size() == 3 and key.is_key_set()


# -- slicing a field by a coarser tensor (ModelNet40's multi-scale FCNN) ----------
def test_slice_and_cat_slice_take_a_coarser_map_through_each_points_parent():
    g = torch.Generator().manual_seed(0)
    points = torch.cat([torch.zeros(400, 1), torch.rand(400, 3, generator=g) * 10], 1)
    tf = ME.TensorField(torch.rand(400, 4, generator=g), points)
    pool = ME.MinkowskiMaxPooling(3, 2, dimension=3)
    y2 = pool(tf.sparse())
    for y in (y2, pool(y2)):
        ts = y.tensor_stride[0]
        # Each point's voxel at stride ts, found by coordinates, not by the maps.
        voxel = torch.floor(points[:, 1:] / ts) * ts
        rows = [int(((y.C[:, 1:].float() - v).abs().sum(1) == 0).nonzero()[0]) for v in voxel]
        assert torch.equal(y.slice(tf).F, y.F[rows])
        assert torch.equal(y.cat_slice(tf).F, torch.cat([y.F[rows], tf.F], 1))
    # A map that does not hold every point's parent, and a field never quantized.
    other = ME.SparseTensor(torch.ones(1, 1), torch.tensor([[0, 0, 0, 0]], dtype=torch.int32),
                            tensor_stride=3, coordinate_manager=tf.coordinate_manager)
    with pytest.raises(ValueError, match="every input row's parent"):
        other.slice(tf)
    # A field never quantized in the tensor's manager is looked up by its
    # points' voxels, as one of another manager (it was refused).
    fresh = ME.TensorField(tf.F, points, coordinate_manager=tf.coordinate_manager)
    assert torch.equal(y2.slice(fresh).F, y2.slice(tf).F)
    with pytest.raises(ValueError, match="no quantization onto the map .* no finer one"):
        fresh.inverse_mapping(y2.coordinate_map_key)


# -- modules copy and pickle (EMA and teacher models, torch.save, spawn) ---------------
@pytest.mark.parametrize("make", [
    lambda: ME.MinkowskiConvolution(2, 3, kernel_size=3, stride=2, dimension=3),
    lambda: ME.MinkowskiConvolutionTranspose(2, 3, kernel_size=2, stride=2, dimension=3),
    lambda: ME.MinkowskiGenerativeConvolutionTranspose(2, 3, kernel_size=2, stride=2,
                                                        dimension=3),
    lambda: ME.MinkowskiChannelwiseConvolution(3, kernel_size=3, dimension=3),
    lambda: ME.MinkowskiMaxPooling(3, 2, dimension=3),
    lambda: ME.MinkowskiPoolingTranspose(2, 2, dimension=3),
    lambda: ME.MinkowskiConvolution(
        2, 3, kernel_generator=ME.KernelGenerator(3, region_type=ME.RegionType.HYPER_CROSS,
                                                  dimension=3), dimension=3),
])
def test_modules_with_a_kernel_deep_copy_and_pickle(make):
    import copy
    import io
    import pickle

    m = make()
    x = ME.SparseTensor(torch.rand(5, m.in_channels if hasattr(m, "in_channels") else 3),
                        torch.tensor([[0, 0, 0, 0], [0, 2, 2, 2], [0, 4, 0, 2], [0, 2, 4, 4],
                                      [0, 0, 2, 0]], dtype=torch.int32), tensor_stride=2)
    want = m(x).F
    buffer = io.BytesIO()
    torch.save(m, buffer)
    buffer.seek(0)
    for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m)),
                 torch.load(buffer, weights_only=False)):
        assert twin.kernel_generator.kernel_volume == m.kernel_generator.kernel_volume
        assert torch.equal(twin(x).F, want)


# -- region types as the reference's integers, strides as arrays -------------------
def test_region_type_takes_the_references_integers_and_refuses_the_rest():
    assert ME.KernelGenerator(kernel_size=3, region_type=1, dimension=3).kernel_volume == 7
    assert ME.KernelGenerator(kernel_size=3, region_type=0, dimension=3).kernel_volume == 27
    for bad in ("bogus", 5, True, 1.0):
        with pytest.raises(ValueError, match="region_type a RegionType"):
            ME.KernelGenerator(kernel_size=3, region_type=bad, dimension=3)


def test_strides_and_kernel_sizes_take_numpy_arrays():
    coords = torch.tensor([[0, 0, 0, 0], [0, 2, 2, 2]], dtype=torch.int32)
    x = ME.SparseTensor(torch.ones(2, 1), coords, tensor_stride=np.array([2, 2, 2]))
    assert x.tensor_stride == [2, 2, 2]
    conv = ME.MinkowskiConvolution(1, 2, kernel_size=np.array([3, 3, 1]), dimension=3)
    assert conv.kernel_generator.kernel_volume == 9
    assert ME.convert_to_int_list(np.array([1, 2, 3]), 3) == [1, 2, 3]
    assert ME.convert_to_int_list(np.int64(2), 3) == [2, 2, 2]


# -- dense(): the reference's shape and min_coordinate forms -----------------------
def test_dense_takes_the_channels_from_the_features_and_a_1_by_d_min_coordinate():
    coords = torch.tensor([[0, 0, 0], [0, 1, 2], [0, 2, 1]], dtype=torch.int32)
    x = ME.SparseTensor(torch.rand(3, 3), coords)
    d, lo, _ = x.dense(shape=torch.Size([1, 1, 4, 4]))  # a mask's shape: C = 1
    assert d.shape == (1, 3, 4, 4) and lo.tolist() == [[0, 0]] and lo.dtype == torch.int32
    for i, (b, u, v) in enumerate(coords.tolist()):
        assert torch.equal(d[b, :, u, v], x.F[i])
    d2, _, _ = x.dense(min_coordinate=lo)  # (1, D), as the reference passes it back
    assert torch.equal(d2, d[:, :, :3, :3])
    assert ME.MinkowskiToDenseTensor(torch.Size([1, 1, 4, 4]))(x).shape == (1, 3, 4, 4)
    with pytest.raises(ValueError, match="a shape of B, C and 2 spatial sizes"):
        x.dense(shape=[1, 3, 4])
    with pytest.raises(ValueError, match="a min coordinate of 1 or 2 values"):
        x.dense(min_coordinate=torch.zeros(3))


def test_interpolation_weights_are_in_the_features_dtype():
    coords = torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1]], dtype=torch.int32)
    for dtype in (torch.float32, torch.float64):
        x = ME.SparseTensor(torch.rand(4, 2, dtype=dtype), coords)
        points = torch.tensor([[0, 0.25, 0.5]], dtype=torch.float64)
        out, _, weights = ME.MinkowskiInterpolation(return_kernel_map=True,
                                                    return_weights=True)(x, points)
        assert weights.dtype == dtype and out.dtype == dtype
        assert float(weights.sum()) == pytest.approx(1.0)
