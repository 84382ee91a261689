"""How inputs reach the C++ side: torch's lazy negation, narrow integer
dtypes, f32 voxelization as the reference divides, sparse_collate's
per-sample checks, the device argument of sparse_quantize, slicing through
another manager's map, f64 points left as given, and the errors for what
cannot be read."""
import numpy as np
import pytest
import torch

import fieldkit
import fieldkit.minkowski as ME

QMode = ME.SparseTensorQuantizationMode


def coords_2d():
    return torch.tensor([[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 0, 2], [1, 2, 2]],
                        dtype=torch.int32)


def test_a_lazily_negated_tensor_is_read_as_its_values():
    # z.conj().imag only marks itself negated; DLPack exports the memory as
    # it is, which read as -values in pooling, convolution and spmm.
    z = torch.randn(5, 3, dtype=torch.cfloat, generator=torch.Generator().manual_seed(1))
    f = z.conj().imag
    assert f.is_neg()
    plain = f.resolve_neg()
    pool = ME.MinkowskiGlobalSumPooling()
    assert torch.equal(pool(ME.SparseTensor(f, coords_2d())).F,
                       pool(ME.SparseTensor(plain, coords_2d())).F)
    conv = ME.MinkowskiConvolution(3, 2, kernel_size=3, dimension=2)
    assert torch.equal(conv(ME.SparseTensor(f, coords_2d())).F,
                       conv(ME.SparseTensor(plain, coords_2d())).F)
    v = torch.tensor([1 + 2j, 3 + 4j]).conj().imag
    out = ME.spmm(torch.tensor([0, 1]), torch.tensor([0, 1]), v, (2, 2), torch.eye(2))
    assert out.diag().tolist() == [-2.0, -4.0]
    q = ME.utils.sparse_quantize(coords_2d()[:, 1:], f, quantization_mode=QMode.FIRST_OCCURRENCE)
    assert torch.equal(q[1], plain)
    x = ME.SparseTensor(torch.ones(4, 1), torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 1],
                                                        [0, 1, 1]], dtype=torch.int32))
    s = torch.tensor([[0, -0.25j, -0.5j]]).conj().imag  # (0, 0.25, 0.5), marked negated
    mgr, key = x.coordinate_manager, x.coordinate_map_key
    got, want = mgr.interpolation_map_weight(key, s), \
        mgr.interpolation_map_weight(key, s.resolve_neg())
    assert all(torch.equal(a, b) for a, b in zip(got, want))


def test_f32_points_voxelize_as_the_reference_divides():
    # The reference floors coords / size in the points' own precision:
    # f32(k * 0.02) / 0.02 is k there; an f64 division gave k - 1 for a
    # third of them.
    k = np.arange(2000)
    pts = np.float32(k * 0.02)[:, None]
    q = ME.utils.sparse_quantize(pts, quantization_size=0.02)
    assert q[:, 0].tolist() == k.tolist()
    assert ME.utils.sparse_quantize(np.float32([[0.7, 0.35]]), quantization_size=0.1).tolist() \
        == [[7, 3]]
    # f64 points divide in f64 (0.7 / 0.1 = 6.999...).
    assert ME.utils.sparse_quantize(np.float64([[0.7, 0.35]]), quantization_size=0.1).tolist() \
        == [[6, 3]]
    with pytest.raises(ValueError, match="positive finite quantization size"):
        ME.utils.sparse_quantize(pts, quantization_size=float("inf"))


def test_every_form_of_size_divides_as_the_reference_does():
    # The reference floors numpy points / np.array(sizes) (numpy's promotion:
    # f64 for Python floats, f32 for an f32 array), torch points /
    # torch.Tensor(sizes) (f32 sizes, so f64 points divide by rounded ones),
    # and points / a scalar in the points' own precision.
    k = np.random.default_rng(0).integers(0, 1000, (3000, 3))
    pts = (k * 0.1).astype(np.float32)
    first = QMode.FIRST_OCCURRENCE

    def voxels(c, s):
        q, _, inv = ME.utils.sparse_quantize(c, quantization_size=s, return_index=True,
                                             return_inverse=True, quantization_mode=first)
        return np.asarray(q)[np.asarray(inv)]

    sizes = ([0.1] * 3, np.array([0.1] * 3, np.float32), np.array([0.1] * 3),
             np.array([0.1] * 3, np.float16), 0.1, np.float32(0.1), np.float16(0.1))
    for points in (pts, k.astype(np.int16), k.astype(np.int32), pts.astype(np.float16)):
        for s in sizes:
            quotient = points / (np.array([v for v in s]) if np.ndim(s) else s)
            np.testing.assert_array_equal(voxels(points, s), np.floor(quotient).astype(np.int32))
    for c in (torch.from_numpy(pts), torch.from_numpy(k * 0.1), torch.from_numpy(k).int(),
              torch.from_numpy(pts).bfloat16()):
        want = (c / torch.Tensor([0.3] * 3)).floor().int().numpy()
        np.testing.assert_array_equal(voxels(c, [0.3] * 3), want)
        np.testing.assert_array_equal(voxels(c, 0.3), torch.floor(c / 0.3).int().numpy())
    with pytest.raises(ValueError, match="one number per axis, got an array of shape .1, 3."):
        ME.utils.sparse_quantize(pts, quantization_size=np.float32([[0.1] * 3]))


def test_narrow_integer_inputs_are_widened():
    c16 = coords_2d().to(torch.int16)
    # A size of 1 is not divided by: the widened coordinates go on (the raw
    # int16 ones reached the C++ quantizer, which takes no int16).
    for size in (1, 1.0, None):
        assert ME.utils.sparse_quantize(c16[:, 1:], quantization_size=size).tolist() == \
            ME.utils.sparse_quantize(coords_2d()[:, 1:]).tolist()
    # int16 compared against int32's bounds wrapped them: every value refused.
    x = ME.SparseTensor(torch.ones(5, 1), c16)
    assert torch.equal(x.C, coords_2d())
    assert ME.batched_coordinates([c16[:, 1:], torch.tensor([[1, 2]], dtype=torch.uint8)]) \
        .tolist()[-1] == [1, 1, 2]
    colours = torch.tensor([[255, 0, 3], [7, 8, 9], [1, 1, 1]], dtype=torch.uint8)
    pts = torch.tensor([[0, 0], [0, 0], [3, 1]], dtype=torch.int16)
    labels = torch.tensor([4, 4, 9], dtype=torch.int16)
    qc, qf, ql = ME.utils.sparse_quantize(pts, colours, labels,
                                          quantization_mode=QMode.FIRST_OCCURRENCE)
    assert qc.tolist() == [[0, 0], [3, 1]]
    assert qf.dtype == torch.uint8 and qf.tolist() == [[255, 0, 3], [1, 1, 1]]
    # A sum of narrow integers stays int32 (200 + 200 wrapped to 144); a mean
    # of any integers is float32 (int32's and int64's were truncated).
    qs = ME.utils.sparse_quantize(pts, colours, quantization_mode=QMode.UNWEIGHTED_SUM)[1]
    assert qs.dtype == torch.int32 and qs.tolist() == [[262, 8, 12], [1, 1, 1]]
    for dtype in (torch.uint8, torch.int16, torch.int32, torch.int64):
        qm = ME.utils.sparse_quantize(pts, colours.to(dtype),
                                      quantization_mode=QMode.UNWEIGHTED_AVERAGE)[1]
        assert qm.dtype == torch.float32 and qm.tolist() == [[131, 4, 6], [1, 1, 1]], dtype
        # ... as a SparseTensor's mean of the same rows (int32/int64 truncated)
        st = ME.SparseTensor(colours.to(dtype), torch.cat([torch.zeros(3, 1), pts], 1).int(),
                             quantization_mode=QMode.UNWEIGHTED_AVERAGE)
        assert st.F.dtype == torch.float32 and st.F.tolist() == [[131, 4, 6], [1, 1, 1]], dtype
        ss = ME.SparseTensor(colours.to(dtype), st.C.new_tensor([[0, 0, 0], [0, 0, 0], [0, 3, 1]]),
                             quantization_mode=QMode.UNWEIGHTED_SUM)  # uint8 255 + 7 wrapped
        assert ss.F.tolist() == [[262, 8, 12], [1, 1, 1]], dtype
        # ... whether or not a voxel holds two rows (the dtype followed the data)
        distinct = pts.new_tensor([[0, 0], [1, 0], [3, 1]])
        for mode, want in ((QMode.UNWEIGHTED_AVERAGE, torch.float32),
                           (QMode.UNWEIGHTED_SUM, torch.int32 if dtype in (torch.uint8, torch.int16)
                            else dtype)):
            assert ME.utils.sparse_quantize(distinct, colours.to(dtype),
                                            quantization_mode=mode)[1].dtype == want, (dtype, mode)
            one_each = ME.SparseTensor(colours.to(dtype),
                                       torch.cat([torch.zeros(3, 1), distinct], 1).int(),
                                       quantization_mode=mode)
            assert one_each.F.dtype == want, (dtype, mode)
    assert ql.dtype == torch.int16 and ql.tolist() == [4, 9]
    for bad in (torch.ones(3, 2, dtype=torch.bool), torch.ones(3, 2, dtype=torch.cfloat)):
        with pytest.raises(ValueError, match="integer or real coordinates"):
            ME.SparseTensor(torch.ones(3, 1), bad)
        with pytest.raises(ValueError, match="real or integer coordinates"):
            ME.utils.sparse_quantize(bad)


def test_sparse_quantize_keeps_the_features_differentiable():
    f = torch.randn(5, 2, dtype=torch.float64, requires_grad=True)
    pts = torch.tensor([[0, 0], [0, 0], [1, 1], [2, 2], [2, 2]])
    for mode, want in ((QMode.UNWEIGHTED_AVERAGE, [0.5, 0.5, 1, 0.5, 0.5]),
                       (QMode.UNWEIGHTED_SUM, [1.0] * 5),
                       (QMode.FIRST_OCCURRENCE, [1, 0, 1, 1, 0])):
        f.grad = None
        _, qf = ME.utils.sparse_quantize(pts, f, quantization_mode=mode)
        qf.sum().backward()
        assert f.grad[:, 0].tolist() == want, mode


def test_max_pooling_sends_a_nan_maxs_gradient_to_its_row():
    # The arg-max compared values == max, which a NaN never is: its gradient
    # was lost (torch.max and the C++ pooling send it to the first NaN).
    f = torch.tensor([[1.0], [float("nan")], [2.0]], requires_grad=True)
    _, q = ME.utils.sparse_quantize(torch.zeros(3, 2), f, quantization_mode=QMode.MAX_POOL)
    assert torch.isnan(q).all()
    q.sum().backward()
    assert f.grad.flatten().tolist() == [0.0, 1.0, 0.0]


def test_torch_features_of_numpy_points_stay_torch():
    f = torch.randn(3, 2, requires_grad=True)
    c, q = ME.utils.sparse_quantize(np.zeros((3, 2)), f)
    assert isinstance(c, np.ndarray) and isinstance(q, torch.Tensor) and q.requires_grad


def test_sparse_quantize_reads_its_device_and_return_flags():
    pts = torch.tensor([[0, 0], [1, 1]])
    with pytest.raises(ValueError, match="expected device 'cpu' or 'cuda', got 'bogus'"):
        ME.utils.sparse_quantize(pts, device="bogus")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="sees no CUDA device"):
            ME.utils.sparse_quantize(pts, device="cuda")
    with pytest.raises(ValueError, match="return_index=True with return_inverse=True"):
        ME.utils.sparse_quantize(pts, return_inverse=True)
    unique, inverse = ME.utils.sparse_quantize(pts, return_inverse=True, return_maps_only=True)
    assert unique.tolist() == [0, 1] and inverse.tolist() == [0, 1]


def test_sparse_collate_checks_each_samples_rows():
    a, b = torch.tensor([[1, 2], [3, 4], [5, 6]]), torch.tensor([[5, 6], [7, 8]])
    with pytest.raises(ValueError, match="expected 3 feature rows for sample 0"):
        ME.utils.sparse_collate([a, b], [torch.ones(2, 1), torch.ones(3, 1)])
    with pytest.raises(ValueError, match="expected 2 feature tensors"):
        ME.utils.sparse_collate([a, b], [torch.ones(3, 1)])
    # Labels neither per point (3, 2 rows) nor per sample (the same rows):
    with pytest.raises(ValueError, match="expected labels per point .rows 3, 2.*got label "
                                         "rows 4, 2"):
        ME.utils.sparse_collate([a, b], [torch.ones(3, 1), torch.ones(2, 1)],
                                [torch.arange(4), torch.arange(2)])
    big = [(torch.zeros(20, 2), torch.ones(20, 1), torch.zeros(20))]
    with pytest.raises(ValueError, match="first sample of at most limit_numpoints=5 points, "
                                         "got 20"):
        with pytest.warns(UserWarning):
            ME.utils.SparseCollation(limit_numpoints=5)(big)


def test_slicing_through_another_managers_map_looks_up_each_voxel():
    field = ME.TensorField(torch.arange(3.0)[:, None],
                           torch.tensor([[0, 0.1, 0.2], [0, 1.3, 0.9], [0, 2.5, 0.2]]))
    field.sparse()  # voxels (0, 0), (1, 0), (2, 0) under the key ts [1, 1]
    # Another manager's map under the same key, its rows in another order:
    # the field's cached rows once indexed it as if it were its own.
    other = ME.SparseTensor(torch.tensor([[10.0], [20.0], [30.0]]),
                            torch.tensor([[0, 2, 0], [0, 1, 0], [0, 0, 0]], dtype=torch.int32))
    assert other.slice(field).F.flatten().tolist() == [30.0, 20.0, 10.0]
    assert other.cat_slice(field).F.tolist() == [[30.0, 0.0], [20.0, 1.0], [10.0, 2.0]]
    off = ME.SparseTensor(torch.tensor([[10.0], [20.0]]),
                          torch.tensor([[0, 2, 0], [0, 1, 0]], dtype=torch.int32))
    with pytest.raises(ValueError, match="got 1 of 3 points off it"):
        off.slice(field)


def test_quantizing_a_field_leaves_its_f64_points_as_given():
    # The field holds the caller's f64 tensor; quantizing once floored it
    # in place, so a later quantization at stride 1 saw stride-2 points.
    pts = torch.tensor([[0, 0.3, 0.7], [0, 1.6, 2.2], [1, 2.5, 3.9], [1, 0.2, 0.9]],
                       dtype=torch.float64)
    given = pts.clone()
    tf = ME.TensorField(torch.ones(4, 1, dtype=torch.float64), pts)
    assert tf.sparse(tensor_stride=2).C.shape[0] == 4
    torch.testing.assert_close(pts, given, rtol=0, atol=0)
    fine = tf.sparse(tensor_stride=1, quantization_mode=QMode.UNWEIGHTED_SUM)
    assert sorted(map(tuple, fine.C.tolist())) == [(0, 0, 0), (0, 1, 2), (1, 0, 0), (1, 2, 3)]


def test_what_cannot_be_features_or_strides_is_named():
    with pytest.raises(TypeError, match="features as a torch.Tensor .N x C., got ndarray"):
        ME.SparseTensor(np.ones((5, 1)), coords_2d())
    with pytest.raises(TypeError, match="features as a torch.Tensor .N x C., got ndarray"):
        ME.TensorField(np.ones((5, 1)), coords_2d().float())
    with pytest.raises(ValueError, match="tensor stride of ints >= 1, got 0"):
        ME.TensorField(torch.ones(5, 1), coords_2d().float(), tensor_stride=0)
    field = ME.TensorField(torch.ones(5, 1), coords_2d().float())
    with pytest.raises(ValueError, match="tensor stride of ints >= 1, got 0"):
        field.sparse(tensor_stride=0)
    # The 1x1 (matrix product) path named the weights for integer features.
    conv = ME.MinkowskiConvolution(1, 2, kernel_size=1, dimension=2)
    with pytest.raises(fieldkit.Error, match="expected f32, f64, f16 or bf16 features, got "
                                             "torch.int64"):
        conv(ME.SparseTensor(torch.ones(5, 1, dtype=torch.int64), coords_2d()))
    # A fractional size was truncated, a one-entry size an IndexError.
    for size in ((3.5, 4), (3,), (True, 2)):
        with pytest.raises(ValueError, match="size as two whole numbers >= 0"):
            ME.spmm(torch.tensor([0, 1]), torch.tensor([0, 1]), torch.ones(2), size, torch.eye(4))
    assert ME.spmm(torch.tensor([0, 1]), torch.tensor([0, 1]), torch.ones(2), (3, 4.0),
                   torch.eye(4)).shape == (3, 4)


def test_f16_points_divide_by_a_scalar_size():
    # torch has no CPU floor for f16: the scalar path failed where a per-axis
    # size (promoted to f32) worked.
    pts = torch.tensor([[0.3, 1.7], [2.2, -0.4]], dtype=torch.float16)
    assert ME.utils.sparse_quantize(pts, quantization_size=0.5).tolist() == \
        ME.utils.sparse_quantize(pts, quantization_size=[0.5, 0.5]).tolist()


def test_a_tensor_field_refuses_what_it_cannot_quantize():
    f, pts = torch.ones(2, 1), torch.tensor([[0, 0.2, 0.3], [0, 0.4, 0.1]])
    with pytest.raises(ValueError, match="TensorField: expected a quantization mode that "
                                         "reduces.*got NO_QUANTIZATION"):
        ME.TensorField(f, pts, quantization_mode=QMode.NO_QUANTIZATION)
    with pytest.raises(ValueError, match="TensorField.sparse: expected a quantization mode"):
        ME.TensorField(f, pts).sparse(quantization_mode=QMode.NO_QUANTIZATION)
    with pytest.raises(ValueError, match="TensorField: expected a tensor_stride of 1 or 2 "
                                         "values"):
        ME.TensorField(f, pts, tensor_stride=[1, 2, 3])
    with pytest.raises(ValueError, match="TensorField.sparse: expected a tensor_stride of 1 or 2"):
        ME.TensorField(f, pts).sparse(tensor_stride=[1, 2, 3])
    with pytest.raises(ValueError, match="TensorField: expected integer or real coordinates, "
                                         "got torch.bool"):
        ME.TensorField(f, torch.zeros(2, 3, dtype=torch.bool))


def test_points_past_2_24_keep_their_digits_in_a_slice():
    # float32 rounded 16777217 to 16777216 (another voxel) in slice's points
    # and in a field's registered coordinates.
    c = torch.tensor([[0, 16777217, 0], [0, 16777219, 0]], dtype=torch.int32)
    x = ME.SparseTensor(torch.tensor([[1.0], [2.0]]), c)
    field = x.slice(x)
    assert field.C[:, 1].tolist() == [16777217, 16777219]
    assert torch.equal(field.sparse().C, x.C)
    small = ME.SparseTensor(torch.ones(1, 1), torch.tensor([[0, 3, 4]], dtype=torch.int32))
    assert small.slice(small).C.dtype == torch.float32  # the reference's, where exact
    mgr = x.coordinate_manager
    key = mgr.insert_field(c, [1, 1])
    assert mgr.get_coordinate_field(key)[:, 1].tolist() == [16777217, 16777219]
