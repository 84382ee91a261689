"""Pooling, global pooling and broadcast: gradcheck in f64 and equality with
plain torch references."""
import pytest
import torch
import torch.nn.functional as tf
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME


def gradcheck_features(fn, x):
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: fn(on_map(x, ff)).F, (f,))


LOCAL = [ME.MinkowskiMaxPooling, ME.MinkowskiAvgPooling, ME.MinkowskiSumPooling]


@pytest.mark.parametrize("cls", LOCAL)
@pytest.mark.parametrize("kernel,stride", [(2, 2), (3, 1), (3, 2)])
def test_local_pooling_gradcheck(cls, kernel, stride):
    gradcheck_features(cls(kernel_size=kernel, stride=stride, dimension=2), random_sparse())


def block_reference(x, reduce):
    """Per occupied 2x2 block: reduce over the present rows (plain loops)."""
    blocks = {}
    for (b, i, j), f in zip(x.C.tolist(), x.F):
        blocks.setdefault((b, i // 2 * 2, j // 2 * 2), []).append(f)
    return {k: reduce(torch.stack(v)) for k, v in blocks.items()}


@pytest.mark.parametrize("cls,reduce", [
    (ME.MinkowskiMaxPooling, lambda v: v.max(0).values),
    (ME.MinkowskiAvgPooling, lambda v: v.mean(0)),
    (ME.MinkowskiSumPooling, lambda v: v.sum(0)),
])
def test_stride_two_pooling_reduces_each_occupied_block(cls, reduce):
    x = random_sparse(n=50, extent=8)
    y = cls(kernel_size=2, stride=2, dimension=2)(x)
    ref = block_reference(x, reduce)
    assert len(y) == len(ref) and y.tensor_stride == [2, 2]
    for c, f in zip(y.C.tolist(), y.F):
        assert torch.allclose(f, ref[tuple(c)], atol=1e-12)


def block_reference_of(x, size, reduce):
    """Per occupied size x size block (floor parents): reduce over the present rows."""
    blocks = {}
    for (b, i, j), f in zip(x.C.tolist(), x.F):
        blocks.setdefault((b, i // size * size, j // size * size), []).append(f)
    return {k: reduce(torch.stack(v)) for k, v in blocks.items()}


@pytest.mark.parametrize("cls,reduce", [
    (ME.MinkowskiMaxPooling, lambda v: v.max(0).values),
    (ME.MinkowskiSumPooling, lambda v: v.sum(0)),
])
def test_odd_kernel_equal_to_stride_pools_each_block(cls, reduce):
    # The reference's stride map: k = s = 3 pools each input into its floor
    # parent's block (the centred window dropped every input at o + 2).
    x = random_sparse(n=50, extent=9)
    y = cls(kernel_size=3, stride=3, dimension=2)(x)
    ref = block_reference_of(x, 3, reduce)
    assert len(y) == len(ref)
    for c, f in zip(y.C.tolist(), y.F):
        assert torch.allclose(f, ref[tuple(c)], atol=1e-12)
    up = ME.MinkowskiPoolingTranspose(kernel_size=3, stride=3, dimension=2)(
        ME.SparseTensor(torch.ones(len(y), 1, dtype=torch.float64),
                        coordinate_map_key=y.coordinate_map_key,
                        coordinate_manager=y.coordinate_manager))
    assert torch.equal(up.F, torch.ones(len(x), 1, dtype=torch.float64))  # one parent each
    mgr = x.coordinate_manager
    kmap = mgr.kernel_map(x.coordinate_map_key, y.coordinate_map_key, stride=3, kernel_size=3,
                          is_pool=True)
    assert list(kmap) == [0] and kmap[0].shape[1] == len(x)


def test_max_pooling_equals_dense_max_pooling_on_positive_features():
    x = random_sparse(n=50, extent=8)
    x = on_map(x, x.F.abs() + 0.1)  # absent cells (0) never win
    y = ME.MinkowskiMaxPooling(kernel_size=2, stride=2, dimension=2)(x)
    dense = tf.max_pool2d(x.dense(shape=[2, 3, 8, 8])[0], 2, 2)
    c = y.C.long()
    assert torch.equal(y.F, dense.movedim(1, -1)[c[:, 0], c[:, 1] // 2, c[:, 2] // 2])


def test_pooling_transpose_is_the_adjoint_of_sum_pooling():
    x = random_sparse(n=50, extent=8)
    pool = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)
    unpool = ME.MinkowskiPoolingTranspose(kernel_size=2, stride=2, dimension=2)
    y = pool(x)
    g = torch.randn_like(y.F)
    back = unpool(on_map(y, g))
    assert back.coordinate_map_key == x.coordinate_map_key
    assert torch.allclose((y.F * g).sum(), (x.F * back.F).sum(), atol=1e-10)
    gradcheck_features(unpool, y.detach())


@pytest.mark.parametrize("cls,reduce", [
    (ME.MinkowskiGlobalMaxPooling, lambda v: v.max(0).values),
    (ME.MinkowskiGlobalAvgPooling, lambda v: v.mean(0)),
    (ME.MinkowskiGlobalSumPooling, lambda v: v.sum(0)),
])
def test_global_pooling(cls, reduce):
    x = random_sparse(n=50, extent=8)
    y = cls()(x)
    assert y.C.tolist() == [[0, 0, 0], [1, 0, 0]]
    for b in range(2):
        assert torch.allclose(y.F[b], reduce(x.F[x.C[:, 0] == b]), atol=1e-12)
    gradcheck_features(cls(), x)


def test_global_pools_of_two_strides_combine_as_on_one_origin_map():
    # The reference puts every global pool on its one stride-0 origin map, so
    # a head that concatenates pools of several stages works; ours are at
    # their inputs' strides with the same rows, and combine the same way.
    x = random_sparse(n=50, extent=8)
    y = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(x)
    gx, gy = ME.MinkowskiGlobalAvgPooling()(x), ME.MinkowskiGlobalMaxPooling()(y)
    assert gx.coordinate_map_key != gy.coordinate_map_key
    assert torch.equal(ME.cat(gx, gy).F, torch.cat([gx.F, gy.F], 1))
    assert torch.equal((gx + gy).F, gx.F + gy.F)
    assert torch.equal(ME.sum(gx, gy).F, gx.F + gy.F)
    f = x.F.detach().clone().requires_grad_()
    ME.cat(ME.MinkowskiGlobalSumPooling()(on_map(x, f)), gy).F[:, :3].sum().backward()
    assert torch.equal(f.grad, torch.ones_like(f))
    z = ME.SparseTensor(gx.F.clone(), coordinate_map_key=gx.coordinate_map_key,
                        coordinate_manager=gx.coordinate_manager)
    z += gy
    assert torch.equal(z.F, gx.F + gy.F)
    # Other rows (item 1 pruned away) are another map: a union, not a cat.
    kept = ME.MinkowskiPruning()(y, y.C[:, 0] == 0)
    gk = ME.MinkowskiGlobalAvgPooling()(kept)
    with pytest.raises(ValueError, match="same coordinate map"):
        ME.cat(gx, gk)
    # A local map is never an origin map, whatever its rows.
    with pytest.raises(ValueError, match="same coordinate map"):
        ME.cat(x, y)


@pytest.mark.parametrize("cls,op", [
    (ME.MinkowskiBroadcastAddition, lambda f, g: f + g),
    (ME.MinkowskiBroadcastMultiplication, lambda f, g: f * g),
    (ME.MinkowskiBroadcastConcatenation, lambda f, g: torch.cat([f, g], 1)),
])
def test_broadcast(cls, op):
    x = random_sparse(n=50, extent=8)
    glob = ME.MinkowskiGlobalAvgPooling()(x)
    out = cls()(x, glob)
    ref = op(x.F, glob.F[x.C[:, 0].long()])
    assert torch.allclose(out.F, ref, atol=1e-12)
    f = x.F.detach().clone().requires_grad_()
    g = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda ff, gg: cls()(on_map(x, ff), on_map(glob, gg)).F, (f, g))


def test_broadcast_refuses_another_manager():
    x, other = random_sparse(seed=1), random_sparse(seed=2)
    glob = ME.MinkowskiGlobalAvgPooling()(other)
    with pytest.raises(ValueError, match="another manager"):
        ME.MinkowskiBroadcastAddition()(x, glob)


@pytest.mark.parametrize("cls", [ME.MinkowskiGlobalAvgPooling, ME.MinkowskiGlobalMaxPooling,
                                 ME.MinkowskiGlobalSumPooling])
def test_global_pooling_of_an_empty_tensor_is_empty(cls):
    # A generative net pruned to nothing reaches its global head with no point.
    f = torch.randn(5, 2, requires_grad=True)
    x = ME.SparseTensor(f, torch.randint(0, 4, (5, 4), dtype=torch.int32))
    empty = ME.MinkowskiPruning()(x, torch.zeros(len(x), dtype=torch.bool))
    y = cls()(empty)
    assert tuple(y.F.shape) == (0, 2) and tuple(y.C.shape) == (0, 4)
    y.F.sum().backward()
    assert tuple(f.grad.shape) == (5, 2) and not f.grad.any()
    field = ME.TensorField(torch.zeros(0, 2), torch.zeros(0, 4))
    assert tuple(cls()(field).F.shape) == (0, 2)


@pytest.mark.parametrize("through", ["layer", "function"])
def test_unpooling_onto_new_cells_reaches_the_parents_cells_where_the_kernel_is_the_stride(
        through):
    # k = s = 3: each coarse cell's features go to the 3 x 3 cells it pools
    # (o..o+2), as the C++ pooling_transpose: the kernel's centred window
    # made a cell at -1 (no feature reaches it) and none at 5.
    x = ME.SparseTensor(torch.tensor([[1.0], [2.0]]), torch.tensor([[0, 0, 0], [0, 3, 0]]),
                        tensor_stride=3)
    if through == "layer":
        y = ME.MinkowskiPoolingTranspose(kernel_size=3, stride=3, dimension=2)(x)
        c, f = y.C.tolist(), y.F.flatten().tolist()
    else:
        kg = ME.KernelGenerator(kernel_size=3, stride=3, dimension=2)
        key = ME.CoordinateMapKey(3)
        out = ME.MinkowskiLocalPoolingTransposeFunction.apply(
            x.F, ME.PoolingMode.LOCAL_SUM_POOLING, kg, x.coordinate_map_key, key,
            x.coordinate_manager)
        c, f = x.coordinate_manager.get_coordinates(key).tolist(), out.flatten().tolist()
    got = {tuple(r): v for r, v in zip(c, f)}
    assert got == {(0, i, j): 1.0 if i < 3 else 2.0 for i in range(6) for j in range(3)}


def test_global_pools_of_two_strides_and_other_items_unite():
    # A stage whose batch item 1 was pruned away: its pool has rows for items
    # 0 only, at another stride; + and MinkowskiUnion were refused for the
    # strides (the reference keeps every pool on its one origin map).
    x = random_sparse(n=50, extent=8)
    y = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(x)
    y = ME.MinkowskiPruning()(y, y.C[:, 0] == 0)
    gx, gy = ME.MinkowskiGlobalSumPooling()(x), ME.MinkowskiGlobalMaxPooling()(y)
    assert gx.C[:, 0].tolist() == [0, 1] and gy.C[:, 0].tolist() == [0]
    for out in (gx + gy, ME.MinkowskiUnion()(gx, gy)):
        assert out.C[:, 0].tolist() == [0, 1]
        assert torch.allclose(out.F, torch.stack([gx.F[0] + gy.F[0], gx.F[1]]))
        assert out.coordinate_map_key.tag.endswith("@origin")
    assert torch.allclose((gx + gy + gx).F, torch.stack([2 * gx.F[0] + gy.F[0], 2 * gx.F[1]]))
