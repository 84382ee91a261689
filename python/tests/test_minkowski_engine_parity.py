"""The Python layers give the C++ engine's own results (same output map,
bit-identical features): the map resolution done in Python (strided,
transposed onto the encoder's map, generative, pooling transpose, global)
matches the engine's."""
import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME
from fieldkit._core import minkowski as _mk


def engine_conv(kind, layer, x):
    g = layer.kernel_generator
    w = layer.kernel.detach()
    return _mk.engine_convolution(kind, x.coordinate_manager, x.coordinate_map_key,
                                  x.F.detach(), w, g.region, g.kernel_stride)


@pytest.mark.parametrize("kind,make", [
    ("conv", lambda: ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2)),
    ("conv", lambda: ME.MinkowskiConvolution(3, 4, kernel_size=3, stride=2, dimension=2)),
    ("channelwise", lambda: ME.MinkowskiChannelwiseConvolution(3, kernel_size=3, stride=2,
                                                               dimension=2)),
])
def test_convolutions_equal_the_engine(kind, make):
    x = random_sparse(n=60, extent=8)
    layer = make().double()
    y = layer(x)
    f, key = engine_conv(kind, layer, x)
    assert key == y.coordinate_map_key and torch.equal(f, y.F.detach())


@pytest.mark.parametrize("kind,cls", [
    ("transpose", ME.MinkowskiConvolutionTranspose),
    ("generative", ME.MinkowskiGenerativeConvolutionTranspose),
])
def test_transposed_convolutions_equal_the_engine(kind, cls):
    x = random_sparse(n=60, extent=8)
    down = ME.MinkowskiConvolution(3, 4, kernel_size=2, stride=2, dimension=2).double()
    y = down(x).detach()
    layer = cls(4, 3, kernel_size=2, stride=2, dimension=2).double()
    z = layer(y)
    f, key = engine_conv(kind, layer, y)
    # a generative map is new on every call (new tag): compare coordinates then
    if kind == "generative":
        mgr = y.coordinate_manager
        assert torch.equal(mgr.coordinates(key), z.C) and torch.equal(f, z.F.detach())
    else:
        assert key == z.coordinate_map_key == x.coordinate_map_key
        assert torch.equal(f, z.F.detach())


@pytest.mark.parametrize("mode,cls", [
    (_mk.PoolingMode.MAX, ME.MinkowskiMaxPooling),
    (_mk.PoolingMode.AVG, ME.MinkowskiAvgPooling),
    (_mk.PoolingMode.SUM, ME.MinkowskiSumPooling),
])
def test_pooling_equals_the_engine(mode, cls):
    x = random_sparse(n=60, extent=8)
    layer = cls(kernel_size=3, stride=2, dimension=2)
    y = layer(x)
    g = layer.kernel_generator
    f, key = _mk.engine_pooling("local", mode, x.coordinate_manager, x.coordinate_map_key,
                                x.F, g.region, g.kernel_stride)
    assert key == y.coordinate_map_key and torch.equal(f, y.F)


def test_pooling_transpose_and_global_pooling_equal_the_engine():
    x = random_sparse(n=60, extent=8)
    y = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(x)
    unpool = ME.MinkowskiPoolingTranspose(kernel_size=2, stride=2, dimension=2)
    z = unpool(y)
    g = unpool.kernel_generator
    f, key = _mk.engine_pooling("transpose", _mk.PoolingMode.SUM, y.coordinate_manager,
                                y.coordinate_map_key, y.F, g.region, g.kernel_stride)
    assert key == z.coordinate_map_key and torch.equal(f, z.F)
    glob = ME.MinkowskiGlobalMaxPooling()(x)
    f, key = _mk.engine_pooling("global", _mk.PoolingMode.MAX, x.coordinate_manager,
                                x.coordinate_map_key, x.F, g.region, [1])
    assert key == glob.coordinate_map_key and torch.equal(f, glob.F)


@pytest.mark.parametrize("cls,mode", [
    (ME.MinkowskiBroadcastAddition, _mk.BroadcastMode.ADD),
    (ME.MinkowskiBroadcastMultiplication, _mk.BroadcastMode.MULTIPLY),
    (ME.MinkowskiBroadcastConcatenation, _mk.BroadcastMode.CONCATENATE),
])
def test_broadcast_equals_the_engine(cls, mode):
    x = random_sparse(n=60, extent=8)
    glob = ME.MinkowskiGlobalAvgPooling()(x)
    y = cls()(x, glob)
    f, key = _mk.engine_broadcast(mode, x.coordinate_manager, x.coordinate_map_key, x.F,
                                  glob.coordinate_map_key, glob.F)
    assert key == y.coordinate_map_key and torch.equal(f, y.F)


def test_instance_norm_equals_the_engine():
    x = random_sparse(n=60, extent=8)
    norm = ME.MinkowskiInstanceNorm(3).double()
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
        norm.bias.uniform_(-1, 1)
    y = norm(x)
    f = _mk.engine_instance_norm(x.coordinate_manager, x.coordinate_map_key, x.F,
                                 norm.weight.detach().reshape(-1), norm.bias.detach().reshape(-1),
                                 norm.eps)
    assert torch.equal(f, y.F.detach())


def test_pruning_and_union_equal_the_engine():
    x = random_sparse(n=60, extent=8)
    mask = torch.arange(len(x)) % 3 != 0
    y = ME.MinkowskiPruning()(x, mask)
    f, c = _mk.engine_prune(x.coordinate_manager, x.coordinate_map_key, x.F, mask.tolist())
    assert torch.equal(c, y.C) and torch.equal(f, y.F)
    a = ME.MinkowskiPruning()(x, ~mask)
    u = ME.MinkowskiUnion()(x, a, y)
    f, c = _mk.engine_union(x.coordinate_manager, [t.coordinate_map_key for t in (x, a, y)],
                            [x.F, a.F, y.F])
    assert torch.equal(c, u.C) and torch.equal(f, u.F)


def test_interpolation_equals_the_engine():
    x = random_sparse(n=60, extent=8)
    g = torch.Generator().manual_seed(3)
    points = torch.rand(25, 3, generator=g, dtype=torch.float64) * 7
    points[:, 0] = torch.arange(25) % 2
    out = ME.MinkowskiInterpolation()(x, points)
    f = _mk.engine_interpolate(x.coordinate_manager, x.coordinate_map_key, x.F, points)
    assert torch.equal(f, out)


def test_generative_pooling_transpose_equals_the_engine_and_gradchecks():
    x = random_sparse(n=40, extent=8)
    y = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(x)
    unpool = ME.MinkowskiPoolingTranspose(kernel_size=2, stride=2, expand_coordinates=True,
                                          dimension=2)
    z = unpool(y)
    assert len(z) == 4 * len(y) and z.coordinate_map_key != x.coordinate_map_key
    g = unpool.kernel_generator
    f, key = _mk.engine_pooling("generative", _mk.PoolingMode.SUM, y.coordinate_manager,
                                y.coordinate_map_key, y.F, g.region, g.kernel_stride)
    assert torch.equal(y.coordinate_manager.coordinates(key), z.C) and torch.equal(f, z.F)
    ff = y.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda t: unpool(on_map(y, t)).F, (ff,))


@pytest.mark.parametrize("min_coordinate,contract", [(None, True), ([-2, 0], True),
                                                     ([-3, -1], False)])
def test_dense_equals_the_engine(min_coordinate, contract):
    x = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(
        random_sparse(n=60, extent=8))
    d, lo, ts = x.dense(min_coordinate=min_coordinate, contract_stride=contract)
    f, elo, ets = _mk.engine_dense(x.coordinate_manager, x.coordinate_map_key, x.F,
                                   min_coordinate, contract)
    assert torch.equal(f, d) and [elo] == lo.tolist() and ets == ts.tolist()
    assert lo.dtype == torch.int32  # 1 x D, as the reference's


@pytest.mark.parametrize("remove_zeros", [True, False])
def test_to_sparse_equals_the_engine(remove_zeros):
    g = torch.Generator().manual_seed(4)
    dense = torch.randn(2, 3, 4, 5, generator=g, dtype=torch.float64)
    dense[:, :, 1:3] = 0
    x = ME.to_sparse(dense, remove_zeros=remove_zeros)
    f, c = _mk.engine_to_sparse(dense, remove_zeros)
    assert torch.equal(c, x.C) and torch.equal(f, x.F)


@pytest.mark.parametrize("min_coordinate,contract,message", [
    ([0, 1], False, "expected coordinates >= the min coordinate"),
    ([-1, 0], True, "on the tensor stride"),
])
def test_dense_refuses_what_the_engine_refuses(min_coordinate, contract, message):
    x = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(
        random_sparse(n=60, extent=8))
    with pytest.raises(ValueError, match=message):
        x.dense(min_coordinate=min_coordinate, contract_stride=contract)
    with pytest.raises(ME.Error):
        _mk.engine_dense(x.coordinate_manager, x.coordinate_map_key, x.F, min_coordinate,
                         contract)
    with pytest.raises(ValueError, match="a shape holding every coordinate"):
        x.dense(shape=[2, 3, 2, 2])


def test_an_empty_tensor_is_dense_in_a_given_shape_only():
    f = torch.zeros((0, 3), dtype=torch.float64, requires_grad=True)
    x = ME.SparseTensor(f, torch.zeros((0, 3), dtype=torch.int32))
    with pytest.raises(ValueError, match="a shape for an empty tensor"):
        x.dense()
    with pytest.raises(ME.Error, match="a shape for an empty tensor"):
        _mk.engine_dense(x.coordinate_manager, x.coordinate_map_key, x.F, None, True)
    d, _, _ = x.dense(shape=[2, 3, 4, 5])
    assert d.shape == (2, 3, 4, 5) and not d.any()
    d.sum().backward()
    assert f.grad.shape == (0, 3)
