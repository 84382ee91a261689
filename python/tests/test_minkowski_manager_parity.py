"""CoordinateManager's reference methods beyond insert/stride/kernel_map: the
origin map, batch counts, unique keys, lookups by tensor stride, coordinate
fields and their maps onto sparse maps, stride, union, interpolation and
origin-field maps. Expectations are worked
out by hand or with plain torch on the coordinates."""
import pytest
import torch

import fieldkit.minkowski as ME


def _ints(rows):
    return torch.tensor(rows, dtype=torch.int32)


def _voxels(points, ts):
    """floor(x / ts) * ts per spatial axis, batch rounded: the expected
    quantization, in plain torch."""
    v = points.clone()
    v[:, 0] = torch.round(v[:, 0])
    v[:, 1:] = torch.floor(v[:, 1:] / ts) * ts
    return v.to(torch.int32)


def _row_of(coordinates):
    return {tuple(r): i for i, r in enumerate(coordinates.tolist())}


# -- origin, batch counts -----------------------------------------------------

def test_origin_holds_one_row_per_batch_index_of_the_inserted_maps():
    mgr = ME.CoordinateManager(D=2)
    key, _ = mgr.insert_and_map(_ints([[2, 0, 0], [0, 2, 2], [2, 3, 3]]))
    mgr.insert_and_map(_ints([[5, 1, 1], [0, 4, 4]]))
    origin = mgr.origin()
    assert mgr.get_coordinates(origin).tolist() == [[0, 0, 0], [2, 0, 0], [5, 0, 0]]
    assert mgr.number_of_unique_batch_indices() == 3
    assert mgr.origin() == origin  # made once, then reused


def test_origin_is_the_map_global_pooling_of_the_input_writes_to():
    x = ME.SparseTensor(torch.ones(3, 1), _ints([[1, 0, 0], [0, 2, 2], [1, 3, 3]]))
    mgr = x.coordinate_manager
    pooled = ME.MinkowskiGlobalSumPooling()(x)
    assert pooled.coordinate_map_key == mgr.origin()
    assert mgr.number_of_unique_batch_indices() == len(pooled) == 2


def test_origin_of_a_manager_without_maps_is_refused_and_clear_forgets_them():
    mgr = ME.CoordinateManager(D=2)
    with pytest.raises(ValueError, match="expected a map inserted from coordinates"):
        mgr.origin()
    with pytest.raises(ValueError, match="got neither"):
        mgr.number_of_unique_batch_indices()
    mgr.insert_and_map(_ints([[0, 0, 0]]))
    assert mgr.number_of_unique_batch_indices() == 1
    mgr.clear()
    with pytest.raises(ValueError, match="expected a map inserted from coordinates"):
        mgr.origin()


def test_origin_field_is_the_map_a_tensor_field_pools_onto():
    points = torch.tensor([[0.0, 0.5, 1.5], [2.0, 3.2, 1.1], [0.2, 0.2, 0.7]])
    field = ME.TensorField(torch.ones(3, 2), points)
    mgr = field.coordinate_manager
    with pytest.raises(ValueError, match="expected a coordinate field"):
        mgr.origin_field()
    assert field.coordinate_key.tensor_stride == [1, 1]  # registers the points
    assert mgr.get_coordinates(mgr.origin_field()).tolist() == [[0, 0, 0], [2, 0, 0]]
    assert ME.MinkowskiGlobalMaxPooling()(field).coordinate_map_key == mgr.origin_field()
    # no map inserted from coordinates: the count is the fields'
    assert mgr.number_of_unique_batch_indices() == 2


# -- keys ---------------------------------------------------------------------

def test_unique_keys_name_no_map_and_can_be_inserted_under():
    mgr = ME.CoordinateManager(D=2)
    a, b = mgr.get_unique_coordinate_map_key(2), mgr.get_unique_coordinate_map_key([2, 4])
    assert a.tensor_stride == [2, 2] and b.tensor_stride == [2, 4] and a != b
    assert not mgr.has(a)
    key, _ = mgr.insert_and_map(_ints([[0, 2, 2]]), 2, a.tag)
    assert key == a and mgr.get_unique_coordinate_map_key(2) != a


@pytest.mark.parametrize("bad", [0, [1, 2, 3], [2, -2], "two"])
def test_a_bad_tensor_stride_names_what_was_expected(bad):
    mgr = ME.CoordinateManager(D=2)
    with pytest.raises(ValueError, match=r"expected a tensor stride of 1 or 2 positive ints"):
        mgr.get_unique_coordinate_map_key(bad)


def test_maps_are_found_by_tensor_stride():
    mgr = ME.CoordinateManager(D=2)
    c = _ints([[0, 0, 0], [0, 3, 1], [1, 2, 5]])
    key, _ = mgr.insert_and_map(c)
    strided = mgr.stride(key, 2)
    expected = c.clone()
    expected[:, 1:] = torch.div(c[:, 1:], 2, rounding_mode="floor") * 2
    assert sorted(mgr.get_coordinates(2).tolist()) == sorted(expected.tolist())
    assert torch.equal(mgr.get_coordinates([2, 2]), mgr.get_coordinates(strided))
    assert mgr.kernel_map(1, 2, kernel_size=2).keys() == \
        mgr.kernel_map(key, strided, kernel_size=2).keys()
    items, _ = mgr.origin_map(1)
    assert items.tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"got tensor stride \[4, 4\], which none has"):
        mgr.get_coordinates(4)


def test_tensors_have_the_references_coordinate_key():
    x = ME.SparseTensor(torch.ones(2, 1), _ints([[0, 0, 0], [0, 2, 2]]))
    assert x.coordinate_key == x.coordinate_map_key


# -- coordinate fields ----------------------------------------------------------

POINTS = torch.tensor([[0.0, 0.5, 1.5], [0.0, 3.2, 1.1], [1.0, -0.2, 0.7],
                       [0.9, -1.9, 1.9], [0.0, 1.9, 0.1]])


def test_insert_field_keeps_the_points_under_their_own_key():
    mgr = ME.CoordinateManager(D=2)
    key = mgr.insert_field(POINTS, [1, 1], "pts")
    assert key.tensor_stride == [1, 1] and key.tag == "pts"
    assert torch.equal(mgr.get_coordinate_field(key), POINTS)
    again = mgr.insert_field(POINTS.double(), 1, "pts")
    assert again != key and mgr.get_coordinate_field(again).dtype == torch.float64
    assert mgr.get_coordinate_field(mgr.insert_field(_ints([[0, 1, 2]]), 1)).dtype == \
        torch.float32


def test_field_to_sparse_insert_and_map_quantizes_the_points():
    mgr = ME.CoordinateManager(D=2)
    field = mgr.insert_field(POINTS, 1)
    key, (unique, inverse) = mgr.field_to_sparse_insert_and_map(field, 2)
    voxels = _voxels(POINTS, 2)
    coordinates = mgr.get_coordinates(key)
    assert key.tensor_stride == [2, 2]
    # 5 points, 3 voxels: (0, 0, 0) holds points 0 and 4, (1, -2, 0) points 2
    # and 3 (batch 0.9 rounds to 1)
    assert sorted(map(tuple, coordinates.tolist())) == [(0, 0, 0), (0, 2, 0), (1, -2, 0)]
    assert torch.equal(coordinates, voxels[unique]) and torch.equal(coordinates[inverse], voxels)
    assert mgr.exists_field_to_sparse(field, key)
    assert mgr.field_to_sparse_keys(field) == [key]
    got = mgr.get_field_to_sparse_map(field, key)
    assert torch.equal(got[0], unique) and torch.equal(got[1], inverse)


def test_field_to_sparse_map_pairs_the_points_on_an_existing_map():
    mgr = ME.CoordinateManager(D=2)
    sparse, _ = mgr.insert_and_map(_ints([[1, -2, 0], [0, 0, 0], [0, 4, 4]]), 2)
    field = mgr.insert_field(POINTS, 1)
    assert not mgr.exists_field_to_sparse(field, sparse)
    sparse_rows, field_rows = mgr.field_to_sparse_map(field, sparse)
    row = _row_of(mgr.get_coordinates(sparse))
    expected = [(row[v], i) for i, v in enumerate(map(tuple, _voxels(POINTS, 2).tolist()))
                if v in row]
    # point 1's voxel (0, 2, 0) is off the map: it is left out
    assert list(zip(sparse_rows.tolist(), field_rows.tolist())) == expected
    assert [i for _, i in expected] == [0, 2, 3, 4]
    assert mgr.exists_field_to_sparse(field, sparse)


def test_a_tensor_fields_key_maps_it_onto_its_sparse_tensor():
    # the reference's voxelize-with-centroids idiom
    field = ME.TensorField(torch.randn(5, 3), POINTS)
    x = field.sparse()
    tensor_map, field_map = x.coordinate_manager.field_to_sparse_map(field.coordinate_key,
                                                                     x.coordinate_key)
    assert torch.equal(field_map, torch.arange(5))
    assert torch.equal(tensor_map, field.inverse_mapping(x.coordinate_key))
    assert torch.equal(x.C[tensor_map], _voxels(POINTS, 1))
    # another field with these features keeps the registration
    assert ME.MinkowskiReLU()(field).coordinate_key == field.coordinate_key


def test_a_tensor_field_is_built_from_a_field_key():
    mgr = ME.CoordinateManager(D=2)
    key = mgr.insert_field(POINTS, 2)
    field = ME.TensorField(torch.ones(5, 1), coordinate_field_map_key=key,
                           coordinate_manager=mgr)
    assert torch.equal(field.C, POINTS) and field.tensor_stride == [2, 2]
    assert field.coordinate_key == key
    with pytest.raises(ValueError, match="expected coordinates, or a coordinate_field_map_key"):
        ME.TensorField(torch.ones(5, 1), coordinate_field_map_key=key)


def test_field_methods_name_the_key_they_expected():
    mgr = ME.CoordinateManager(D=2)
    sparse, _ = mgr.insert_and_map(_ints([[0, 0, 0]]))
    field = mgr.insert_field(POINTS, 1)
    strided = mgr.stride(sparse, 2)
    with pytest.raises(ValueError, match="expected the key of a coordinate field"):
        mgr.field_to_sparse_map(strided, sparse)  # a map's key, no field's
    with pytest.raises(ValueError, match="expected the key of a coordinate field"):
        mgr.get_coordinate_field(ME.CoordinateMapKey([1, 1], "none"))
    with pytest.raises(ValueError, match="expected the key of a map of this manager"):
        mgr.field_to_sparse_map(field, ME.CoordinateMapKey([1, 1], "none"))
    with pytest.raises(ValueError, match="expected a field and a map joined"):
        mgr.get_field_to_sparse_map(field, sparse)
    with pytest.raises(ValueError, match=r"expected N x 3 coordinates .* got shape \(5, 2\)"):
        mgr.insert_field(POINTS[:, :2], 1)
    with pytest.raises(ValueError, match="expected a tensor stride of 1 or 2 positive ints"):
        mgr.field_to_sparse_insert_and_map(field, [2, 2, 2])


# -- stride maps ----------------------------------------------------------------

def test_stride_map_gives_each_row_its_parent():
    mgr = ME.CoordinateManager(D=2)
    c = _ints([[0, 1, 1], [0, -1, 2], [1, 3, 0], [0, 0, 0]])
    key, _ = mgr.insert_and_map(c)
    strided = mgr.stride(key, 2)
    in_rows, out_rows = mgr.stride_map(key, strided)
    parents = c.clone()
    parents[:, 1:] = torch.div(c[:, 1:], 2, rounding_mode="floor") * 2
    assert torch.equal(in_rows, torch.arange(4))
    assert torch.equal(mgr.get_coordinates(strided)[out_rows], parents)
    with pytest.raises(ValueError, match=r"multiple of the input's \[2, 2\], got \[3, 3\]"):
        mgr.stride_map(strided, mgr.insert_and_map(_ints([[0, 3, 3]]), 3)[0])
    lone, _ = mgr.insert_and_map(_ints([[0, 0, 0]]), 2)
    with pytest.raises(ValueError, match="holding every input row's parent, got 2 of 4"):
        mgr.stride_map(key, lone)


def test_union_map_sets_an_unset_key_and_places_every_row():
    mgr = ME.CoordinateManager(D=2)
    a, _ = mgr.insert_and_map(_ints([[0, 0, 0], [0, 1, 1], [1, 2, 2]]))
    b, _ = mgr.insert_and_map(_ints([[0, 1, 1], [0, 3, 3]]), 1, "b")
    out = ME.CoordinateMapKey(3)
    assert not out.is_key_set() and out.get_coordinate_size() == 3
    assert out != ME.CoordinateMapKey(3)  # as the reference: unset keys are never equal
    maps = mgr.union_map([a, b], out)
    assert out.is_key_set() and mgr.size(out) == 4
    union = mgr.get_coordinates(out)
    assert len(_row_of(union)) == 4  # each coordinate once
    for key, m in zip((a, b), maps):
        assert m.dtype == torch.int64 and m.shape[0] == 2
        assert torch.equal(m[0], torch.arange(mgr.size(key)))
        assert torch.equal(union[m[1]], mgr.get_coordinates(key))
    # The reference's binary op over two maps, written on union_map.
    fa, fb = torch.randn(3, 2), torch.randn(2, 2)
    f = torch.zeros(4, 2)
    f[maps[0][1]] = fa
    f[maps[1][1]] += fb
    x = ME.SparseTensor(fa, coordinate_map_key=a, coordinate_manager=mgr)
    y = ME.SparseTensor(fb, coordinate_map_key=b, coordinate_manager=mgr)
    s = x + y
    assert torch.equal(s.F[torch.argsort(_order(s.C))], f[torch.argsort(_order(union))])
    with pytest.raises(ValueError, match="unset CoordinateMapKey"):
        mgr.union_map([a, b], out)  # set now
    with pytest.raises(ValueError, match="coordinate size 3, got 4"):
        mgr.union_map([a, b], ME.CoordinateMapKey(4))
    with pytest.raises(ValueError, match="at least 2"):
        ME.CoordinateMapKey(1)


def _order(c):
    """A sort key of each coordinate row (batch, x, y small)."""
    return (c[:, 0].long() * 100 + c[:, 1].long()) * 100 + c[:, 2].long()


def test_interpolation_map_weight_gives_the_multilinear_pairs():
    mgr = ME.CoordinateManager(D=2)
    key, _ = mgr.insert_and_map(_ints([[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 2, 2]]))
    samples = torch.tensor([[0, 0.25, 0.5], [1, 2.0, 2.0]], dtype=torch.float64)
    rows, points, w = mgr.interpolation_map_weight(key, samples)
    assert w.dtype == torch.float64
    got = {(int(p), int(r)): float(v) for r, p, v in zip(rows, points, w)}
    # Sample 0's corners (0,0) .75*.5, (1,0) .25*.5, (1,1) .25*.5, (0,1) absent:
    # the three present renormalized by their sum .625.
    assert got == pytest.approx({(0, 0): 0.6, (0, 1): 0.2, (0, 2): 0.2, (1, 3): 1.0})
    with pytest.raises(ValueError, match="float samples of shape Q x 3"):
        mgr.interpolation_map_weight(key, torch.zeros(2, 2))


def test_origin_field_map_groups_the_points_by_batch():
    tf = ME.TensorField(torch.ones(4, 1), torch.tensor([[0, 0.2, 0.1], [2, 0.5, 0.5],
                                                        [0, 1.0, 1.0], [2, 3.0, 1.0]]))
    items, rows = tf.coordinate_manager.origin_field_map(tf.coordinate_field_map_key)
    assert items.tolist() == [0, 2] and [r.tolist() for r in rows] == [[0, 2], [1, 3]]


def test_coords_manager_is_gone_as_in_the_reference():
    with pytest.raises(DeprecationWarning, match="use CoordinateManager"):
        ME.CoordsManager(D=3)


def test_instance_norm_defaults_to_the_references_eps():
    x = ME.SparseTensor(torch.randn(6, 2, dtype=torch.float64),
                        _ints([[0, 0, 0], [0, 1, 0], [0, 2, 1], [1, 0, 0], [1, 3, 3], [1, 1, 2]]))
    y = ME.MinkowskiInstanceNorm(2).double()(x)
    for b in (0, 1):
        rows = x.C[:, 0] == b
        v = x.F[rows]
        expected = (v - v.mean(0)) / torch.sqrt(v.var(0, unbiased=False) + 1e-8)
        assert torch.allclose(y.F[rows], expected, atol=1e-12)
    reference = ME.MinkowskiInstanceNormFunction.apply(x.F, x.coordinate_map_key, None,
                                                       x.coordinate_manager)
    assert torch.allclose(y.F, reference, atol=1e-12)


def test_f64_features_at_f32_points_keep_f64_weights():
    c = _ints([[0, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1]])
    f = torch.rand(4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    x = ME.SparseTensor(f, c)
    p = torch.tensor([[0, 0.3, 0.7]], dtype=torch.float32)
    wx, wy = float(p[0, 1]), float(p[0, 2])  # the f32 points' own values, in f64
    ref = f[0] * (1 - wx) * (1 - wy) + f[1] * wx * (1 - wy) + f[2] * (1 - wx) * wy + f[3] * wx * wy
    torch.testing.assert_close(x.features_at_coordinates(p)[0], ref, rtol=0, atol=1e-15)


def test_origin_map_groups_rows_in_order_of_batch_and_row():
    mgr = ME.CoordinateManager(D=2)
    key, _ = mgr.insert_and_map(_ints([[2, 0, 0], [0, 1, 1], [2, 1, 0], [1, 3, 3], [0, 2, 2]]))
    items, rows = mgr.origin_map(key)
    c = mgr.get_coordinates(key)
    assert items.tolist() == [0, 1, 2]
    for b, r in zip(items.tolist(), rows):
        assert r.tolist() == sorted(r.tolist()) and (c[r, 0] == b).all()
    assert sum(len(r) for r in rows) == 5
