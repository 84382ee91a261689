"""MinkowskiEngine API details ported code relies on: the reference's module
paths, small helpers it exports, spmm's keywords, unset output keys of the
per-op Functions, sparse_quantize's signature and default, in-place dtype
casts, dense()/sparse()'s tensor stride type and the key of a sliced field.
Expected values are worked out by hand from the reference's semantics."""
import importlib
import inspect

import numpy as np
import pytest
import torch

import fieldkit.minkowski as ME
from conftest import random_sparse

QM = ME.SparseTensorQuantizationMode


# -- the reference's module paths ---------------------------------------------
@pytest.mark.parametrize("path,name", [
    ("MinkowskiOps", "to_sparse"), ("MinkowskiOps", "MinkowskiLinear"), ("MinkowskiOps", "cat"),
    ("MinkowskiSparseTensor", "SparseTensor"), ("MinkowskiTensorField", "TensorField"),
    ("MinkowskiTensor", "SparseTensorQuantizationMode"),
    ("MinkowskiCommon", "convert_to_int_list"), ("MinkowskiKernelGenerator", "KernelGenerator"),
    ("MinkowskiConvolution", "MinkowskiConvolution"), ("MinkowskiPooling", "PoolingMode"),
    ("MinkowskiUnion", "MinkowskiUnionFunction"), ("sparse_matrix_functions", "spmm"),
    ("utils.quantization", "sparse_quantize"), ("utils.quantization", "quantize_label"),
    ("utils.collation", "SparseCollation"), ("modules.senet_block", "SEBasicBlock"),
])
def test_the_reference_module_paths_import(path, name):
    module = importlib.import_module(f"fieldkit.minkowski.{path}")
    top = ME.utils if path.startswith("utils.") else ME.modules if path.startswith("modules.") \
        else ME
    ours = {"quantize_label": None}.get(name, getattr(top, name, None))
    assert ours is None or getattr(module, name) is ours


def test_a_module_path_named_like_a_class_leaves_the_class():
    importlib.import_module("fieldkit.minkowski.MinkowskiConvolution")
    assert isinstance(ME.MinkowskiConvolution, type)
    assert ME.MinkowskiOps.to_sparse is ME.to_sparse and ME.MinkowskiOps._sum is ME.sum


def test_a_name_fieldkit_lacks_fails_to_import_by_name():
    with pytest.raises(ImportError, match="MinkowskiStableInstanceNorm"):
        from fieldkit.minkowski.MinkowskiNormalization import MinkowskiStableInstanceNorm  # noqa


def test_se_layer_scales_each_batch_items_channels_by_its_gate():
    torch.manual_seed(0)
    x = random_sparse(n=30, channels=4, dtype=torch.float32)
    se = ME.modules.SELayer(4, reduction=2, D=2)
    out = se(x)
    for b in torch.unique(x.C[:, 0]).tolist():
        rows = x.C[:, 0] == b
        gate = se.fc[3].module(se.fc[2].linear(torch.relu(se.fc[0].linear(
            x.F[rows].mean(0)))))
        assert torch.allclose(out.F[rows], x.F[rows] * gate, atol=1e-6)


@pytest.mark.parametrize("block,planes", [("SEBasicBlock", 4), ("SEBottleneck", 1)])
def test_se_blocks_build_and_run_with_the_reference_arguments(block, planes):
    x = random_sparse(n=30, channels=4, dtype=torch.float32)
    out = getattr(ME.modules, block)(4, planes, reduction=2, D=2)(x)
    assert out.F.shape == (len(x), 4) and out.coordinate_map_key == x.coordinate_map_key


# -- small names the reference exports -----------------------------------------
def test_get_kernel_volume_counts_the_offsets():
    RT = ME.RegionType
    assert ME.get_kernel_volume(RT.HYPER_CUBE, [3, 2, 3], None, None, 3) == 18
    assert ME.get_kernel_volume(RT.HYPER_CROSS, torch.IntTensor([3, 5]), None, None, 2) == 7
    offsets = torch.IntTensor([[0, 0], [1, 0], [0, 1]])
    assert ME.get_kernel_volume(RT.CUSTOM, 3, offsets, None, 2) == 3
    with pytest.raises(ValueError, match="axis_types"):
        ME.get_kernel_volume(RT.HYPER_CUBE, 3, None, [RT.HYPER_CUBE] * 2, 2)


def test_convert_region_type_returns_type_offsets_and_volume():
    RT = ME.RegionType
    kind, offsets, volume = ME.convert_region_type(RT.HYPER_CUBE, [1, 1], [3, 3], [1, 1],
                                                   [1, 1], None, None, 2)
    assert kind == RT.HYPER_CUBE and offsets.numel() == 0 and volume == 9
    given = torch.IntTensor([[0, 0], [2, -1]])
    kind, offsets, volume = ME.convert_region_type(RT.CUSTOM, [1, 1], [3, 3], [1, 1], [1, 1],
                                                   given, None, 2)
    assert kind == RT.CUSTOM and offsets.tolist() == given.tolist() and volume == 2


def test_convert_to_int_tensor():
    assert ME.convert_to_int_tensor(2, 3).tolist() == [2, 2, 2]
    assert ME.convert_to_int_tensor([1, 4], 2).dtype == torch.int32
    with pytest.raises(ValueError):
        ME.convert_to_int_tensor([1, 2, 3], 2)


def test_quantize_label_gives_the_first_rows_and_ignore_label_on_conflicts():
    from fieldkit.minkowski.utils.quantization import quantize_label

    c = np.array([[0, 0], [0, 0], [1, 1], [1, 1], [2, 2]], dtype=np.int32)
    unique, labels = quantize_label(c, np.array([1, 1, 2, 3, 4], dtype=np.int32), -7)
    assert unique.tolist() == [0, 2, 4] and labels.tolist() == [1, -7, 4]


def _union_inputs(requires_grad=False):
    a = ME.SparseTensor(torch.tensor([[1.0], [2.0]], dtype=torch.float64),
                        torch.IntTensor([[0, 0, 0], [0, 1, 1]]))
    b = ME.SparseTensor(torch.tensor([[10.0], [20.0]], dtype=torch.float64),
                        torch.IntTensor([[0, 0, 0], [0, 2, 2]]),
                        coordinate_manager=a.coordinate_manager)
    a.F.requires_grad_(requires_grad)
    b.F.requires_grad_(requires_grad)
    return a, b


def test_union_function_fills_the_unset_key_and_adds_overlaps():
    a, b = _union_inputs()
    key = ME.CoordinateMapKey(3)
    out = ME.MinkowskiUnionFunction.apply([a.coordinate_map_key, b.coordinate_map_key], key,
                                          a.coordinate_manager, a.F, b.F)
    assert key.is_key_set()
    got = dict(zip(map(tuple, a.coordinate_manager.coordinates(key).tolist()),
                   out.flatten().tolist()))
    assert got == {(0, 0, 0): 11.0, (0, 1, 1): 2.0, (0, 2, 2): 20.0}
    y = ME.SparseTensor(out, coordinate_map_key=key, coordinate_manager=a.coordinate_manager)
    assert len(y) == 3


def test_union_function_gradients():
    a, b = _union_inputs(requires_grad=True)
    keys, mgr = [a.coordinate_map_key, b.coordinate_map_key], a.coordinate_manager
    assert torch.autograd.gradcheck(
        lambda p, q: ME.MinkowskiUnionFunction.apply(keys, None, mgr, p, q), (a.F, b.F))


def test_union_function_refuses_a_set_out_key():
    a, b = _union_inputs()
    with pytest.raises(ValueError, match="unset CoordinateMapKey"):
        ME.MinkowskiUnionFunction.apply([a.coordinate_map_key, b.coordinate_map_key],
                                        a.coordinate_map_key, a.coordinate_manager, a.F, b.F)


# -- spmm takes the reference's keywords ----------------------------------------
@pytest.mark.parametrize("is_sorted", [False, True])
@pytest.mark.parametrize("alg", [1, 3])
def test_spmm_takes_is_sorted_and_cuda_spmm_alg(is_sorted, alg):
    rows, cols = torch.tensor([1, 0, 1, 0]), torch.tensor([1, 0, 0, 1])  # not row-sorted
    vals, mat = torch.tensor([3.0, 1.0, 4.0, 2.0]), torch.tensor([[1.0], [10.0]])
    out = ME.spmm(rows, cols, vals, torch.Size([2, 2]), mat, is_sorted=is_sorted,
                  cuda_spmm_alg=alg)
    assert out.flatten().tolist() == [21.0, 34.0]


# -- the per-op Functions fill an unset output key --------------------------------
def _x():
    return ME.SparseTensor(torch.tensor([[1.0], [2.0], [4.0]]),
                           torch.IntTensor([[0, 1, 1], [0, 2, 2], [1, 3, 3]]))


def test_pruning_function_fills_an_unset_key_as_the_reference_module_passes_it():
    x = _x()
    key = ME.CoordinateMapKey(3)
    out = ME.MinkowskiPruningFunction.apply(x.F, torch.tensor([True, False, True]),
                                            x.coordinate_map_key, key, x.coordinate_manager)
    y = ME.SparseTensor(out, coordinate_map_key=key, coordinate_manager=x.coordinate_manager)
    assert y.C.tolist() == [[0, 1, 1], [1, 3, 3]] and y.F.flatten().tolist() == [1.0, 4.0]


def test_convolution_and_pooling_functions_fill_unset_keys():
    x = _x()
    mgr = x.coordinate_manager
    kg = ME.KernelGenerator(kernel_size=2, stride=2, dimension=2)
    conv_key, pool_key, up_key = (ME.CoordinateMapKey(3) for _ in range(3))
    w = torch.randn(4, 1, 2)
    conv = ME.MinkowskiConvolutionFunction.apply(x.F, w, kg, ME.ConvolutionMode.DEFAULT,
                                                 x.coordinate_map_key, conv_key, mgr)
    layer = ME.MinkowskiConvolution(1, 2, kernel_size=2, stride=2, dimension=2)
    layer.kernel.data.copy_(w)
    assert conv_key == layer(x).coordinate_map_key and conv.shape == (mgr.size(conv_key), 2)
    ME.MinkowskiLocalPoolingFunction.apply(x.F, ME.PoolingMode.LOCAL_MAX_POOLING, kg,
                                           x.coordinate_map_key, pool_key, mgr)
    assert list(pool_key.tensor_stride) == [2, 2] and mgr.has(pool_key)
    up = ME.MinkowskiLocalPoolingTransposeFunction.apply(conv, ME.PoolingMode.LOCAL_AVG_POOLING,
                                                         kg, conv_key, up_key, mgr)
    assert up_key == x.coordinate_map_key and len(up) == len(x)


def test_global_pooling_function_fills_the_origin_key():
    x = _x()
    key = ME.CoordinateMapKey(3)
    out = ME.MinkowskiGlobalPoolingFunction.apply(x.F, ME.PoolingMode.GLOBAL_SUM_POOLING_DEFAULT,
                                                  x.coordinate_map_key, key,
                                                  x.coordinate_manager)
    assert key == ME.MinkowskiGlobalSumPooling()(x).coordinate_map_key
    assert out.flatten().tolist() == [3.0, 4.0]


def test_a_set_key_of_another_map_or_an_unset_key_of_another_size_is_refused():
    x = _x()
    mgr = x.coordinate_manager
    with pytest.raises(ValueError, match="origin map"):
        ME.MinkowskiGlobalPoolingFunction.apply(x.F, ME.PoolingMode.GLOBAL_SUM_POOLING_DEFAULT,
                                                x.coordinate_map_key, x.coordinate_map_key, mgr)
    kg = ME.KernelGenerator(kernel_size=2, stride=2, dimension=2)
    with pytest.raises(ValueError, match=r"coordinate size 3 \(D \+ 1\), got 4"):
        ME.MinkowskiLocalPoolingFunction.apply(x.F, ME.PoolingMode.LOCAL_MAX_POOLING, kg,
                                               x.coordinate_map_key, ME.CoordinateMapKey(4), mgr)
    with pytest.raises(ValueError, match="kept coordinates"):
        ME.MinkowskiPruningFunction.apply(x.F, torch.tensor([True, False, True]),
                                          x.coordinate_map_key, x.coordinate_map_key, mgr)


def test_instance_norm_function_fills_an_unset_global_key():
    x = _x()
    key = ME.CoordinateMapKey(3)
    ME.MinkowskiInstanceNormFunction.apply(x.F, x.coordinate_map_key, key, x.coordinate_manager)
    assert key == ME.MinkowskiGlobalSumPooling()(x).coordinate_map_key


# -- sparse_quantize: the reference's signature and default ---------------------
PTS = np.array([[0.1, 0.2], [0.15, 0.25], [1.2, 0.1]], dtype=np.float32)
FEATS = np.arange(6, dtype=np.float32).reshape(3, 2)


def test_sparse_quantize_has_the_reference_parameters_in_order_then_keywords():
    params = inspect.signature(ME.utils.sparse_quantize).parameters
    reference = ["coordinates", "features", "labels", "ignore_label", "return_index",
                 "return_inverse", "return_maps_only", "quantization_size", "device"]
    assert list(params)[:len(reference)] == reference
    assert all(p.kind == p.KEYWORD_ONLY for p in list(params.values())[len(reference):])


def test_sparse_quantize_takes_device_positionally():
    c = ME.utils.sparse_quantize(torch.from_numpy(PTS), None, None, -100, False, False, False,
                                 0.5, "cpu")
    assert c.tolist() == [[0, 0], [2, 0]]


def test_sparse_quantize_keeps_the_first_point_of_a_voxel_by_default():
    c, f, index = ME.utils.sparse_quantize(PTS, FEATS, quantization_size=0.5, return_index=True)
    assert index.tolist() == [0, 2] and f.tolist() == [[0.0, 1.0], [4.0, 5.0]]
    x = ME.SparseTensor(torch.from_numpy(FEATS), torch.IntTensor([[0, 0, 0], [0, 0, 0],
                                                                  [0, 2, 0]]))
    assert x.unique_index.tolist() == index.tolist()


def test_sparse_quantize_keeps_the_other_modes_by_keyword():
    _, f = ME.utils.sparse_quantize(PTS, FEATS, quantization_size=0.5,
                                    quantization_mode=QM.UNWEIGHTED_AVERAGE)
    assert f.tolist() == [[1.0, 2.0], [4.0, 5.0]]
    picks = {int(ME.utils.sparse_quantize(PTS, quantization_size=0.5, return_index=True,
                                          quantization_mode=QM.RANDOM_SUBSAMPLE, seed=s)[1][0])
             for s in range(16)}
    assert picks == {0, 1}


# -- float() / double() convert in place ---------------------------------------
@pytest.mark.parametrize("cast,dtype", [("double", torch.float64), ("float", torch.float32)])
def test_dtype_casts_convert_in_place_and_return_self(cast, dtype):
    x = ME.SparseTensor(torch.ones(1, 1, dtype=torch.float16), torch.IntTensor([[0, 0, 0]]))
    assert getattr(x, cast)() is x and x.dtype == dtype
    f = ME.TensorField(torch.ones(1, 1, dtype=torch.float16), torch.tensor([[0, 0.5, 0.5]]))
    assert getattr(f, cast)() is f and f.dtype == dtype


# -- dense() / sparse() return the tensor stride as an IntTensor ----------------
def test_dense_and_sparse_return_the_tensor_stride_as_an_int_tensor():
    x = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(random_sparse(n=20))
    for ts in (x.dense()[2], x.sparse()[2]):
        assert isinstance(ts, torch.IntTensor) and ts.tolist() == [2, 2]


# -- a sliced field keeps the source field's key ------------------------------------
@pytest.mark.parametrize("slicer", ["slice", "cat_slice"])
def test_a_sliced_field_shares_the_source_fields_key_read_first_or_not(slicer):
    for read_first in (False, True):
        f = ME.TensorField(torch.ones(2, 1), torch.tensor([[0, 0.2, 0.3], [0, 1.5, 1.5]]))
        if read_first:
            key = f.coordinate_field_map_key
        out = getattr(f.sparse(), slicer)(f)
        assert out.coordinate_field_map_key == f.coordinate_field_map_key
        if read_first:
            assert f.coordinate_field_map_key == key


def test_kernel_generators_keep_one_value_per_axis_and_the_references_slots():
    kg = ME.KernelGenerator(kernel_size=3, stride=(2, 1, 2), dimension=3)
    assert kg.kernel_size == [3, 3, 3] and kg.kernel_stride == [2, 1, 2]
    assert kg.kernel_dilation == [1, 1, 1] and kg.axis_types is None
    # The reference's name for "every stride is 1".
    assert not kg.requires_strided_coordinates
    assert ME.KernelGenerator(kernel_size=3, dimension=3).requires_strided_coordinates
    region_type, offsets, volume = kg.get_kernel([1, 1, 1], False)
    assert region_type == ME.RegionType.HYPER_CUBE and offsets.numel() == 0 and volume == 27
    assert list(kg.cache) == [(1, 1, 1)]
    custom = ME.KernelGenerator(region_type=ME.RegionType.CUSTOM, dimension=2,
                                region_offsets=[[0, 0], [1, 0]])
    assert custom.get_kernel([2, 2], False)[1].tolist() == [[0, 0], [1, 0]]
    with pytest.raises(ValueError, match="kernel_size of 1 or 3 ints, got \\[3, 3\\]"):
        ME.KernelGenerator(kernel_size=(3, 3), dimension=3)


def test_a_kernel_generator_of_another_dimension_is_refused():
    # Its flat offsets were re-split by the layer's dimension: a 3-D pair
    # read as three 2-D offsets, the origin counted twice.
    kg = ME.KernelGenerator(region_type=ME.RegionType.CUSTOM, dimension=3,
                            region_offsets=[[0, 0, 0], [1, 0, 0]])
    for make in (lambda: ME.MinkowskiSumPooling(kernel_generator=kg, dimension=2),
                 lambda: ME.MinkowskiConvolution(1, 1, kernel_generator=kg, dimension=2)):
        with pytest.raises(ValueError, match="kernel_generator of the layer's dimension 2, got "
                                             "one of dimension 3"):
            make()
