"""The reference's per-op Functions under its names and apply() signatures
(each equal to its layer, gradcheck in f64) and MinkowskiDirectMaxPoolingFunction
(against a plain loop written here)."""
import pytest
import torch
from conftest import random_sparse

import fieldkit.minkowski as ME

DMP = ME.MinkowskiDirectMaxPoolingFunction.apply


def loop_max_pool(in_map, out_map, feat, out_nrows):
    """(out, grad of out.sum()) by plain loops: per channel the max over the
    pairs, the gradient to the first pair reaching it."""
    out = torch.zeros(out_nrows, feat.shape[1], dtype=feat.dtype)
    grad = torch.zeros_like(feat)
    for o in range(out_nrows):
        pairs = [p for p in range(len(out_map)) if out_map[p] == o]
        for c in range(feat.shape[1]):
            if not pairs:
                continue
            best = max(pairs, key=lambda p: (feat[in_map[p], c].item(), -p))
            out[o, c] = feat[in_map[best], c]
            grad[in_map[best], c] += 1
    return out, grad


def test_direct_max_pooling_equals_a_loop_ties_to_the_first_pair():
    feat = torch.tensor([[1.0, 5.0], [3.0, 5.0], [3.0, 0.0], [2.0, 2.0], [-1.0, -4.0]],
                        dtype=torch.float64, requires_grad=True)
    in_map = torch.tensor([2, 1, 0, 3, 4, 1, 4], dtype=torch.int32)
    out_map = torch.tensor([0, 0, 0, 3, 1, 1, 0], dtype=torch.int32)
    out = DMP(in_map, out_map, feat, 5)
    out.sum().backward()
    expected, grad = loop_max_pool(in_map.tolist(), out_map.tolist(), feat.detach(), 5)
    assert torch.equal(out, expected)  # rows 2 and 4: no pair, 0
    assert torch.equal(feat.grad, grad)
    # channel 0 of row 0: rows 2 and 1 tie at 3, pair 0 (row 2) comes first
    assert feat.grad[2, 0] == 1 and feat.grad[1, 0] == 1  # row 1 via output row 1


def test_direct_max_pooling_gradcheck_and_random_parity():
    g = torch.Generator().manual_seed(3)
    feat = torch.randn(12, 4, generator=g, dtype=torch.float64, requires_grad=True)
    in_map = torch.randint(0, 12, (30,), generator=g)
    out_map = torch.randint(0, 7, (30,), generator=g)
    out = DMP(in_map, out_map, feat, 7, True)
    assert torch.equal(out, loop_max_pool(in_map.tolist(), out_map.tolist(), feat.detach(), 7)[0])
    assert torch.autograd.gradcheck(lambda f: DMP(in_map, out_map, f, 7), (feat,))


def test_direct_max_pooling_refuses_bad_maps():
    feat = torch.ones(3, 2)
    with pytest.raises(ValueError, match="one length, got 2 and 1"):
        DMP(torch.tensor([0, 1]), torch.tensor([0]), feat, 1)
    with pytest.raises(ValueError, match=r"in_map rows in \[0, 3\), got \[0, 3\]"):
        DMP(torch.tensor([0, 3]), torch.tensor([0, 0]), feat, 1)
    with pytest.raises(ValueError, match=r"out_map rows in \[0, 2\), got \[-1, 0\]"):
        DMP(torch.tensor([0, 1]), torch.tensor([0, -1]), feat, 2)
    with pytest.raises(ValueError, match="1-D integer tensor"):
        DMP(torch.tensor([0.0]), torch.tensor([0]), feat, 1)


def test_max_pool_quantization_routes_each_gradient_to_one_row():
    coords = torch.tensor([[0, 0, 0], [0, 0, 0], [0, 1, 1]], dtype=torch.int32)
    f = torch.tensor([[2.0], [2.0], [1.0]], dtype=torch.float64, requires_grad=True)
    x = ME.SparseTensor(f, coords, quantization_mode=ME.SparseTensorQuantizationMode.MAX_POOL)
    x.F.sum().backward()
    assert x.F.flatten().tolist() == [2.0, 1.0]
    assert f.grad.flatten().tolist() == [1.0, 0.0, 1.0]  # the tie: the first row


def conv_case(transposed):
    x = random_sparse(n=60, extent=8)
    down = ME.MinkowskiConvolution(3, 3, kernel_size=2, stride=2, dimension=2).double()
    if not transposed:
        return x, ME.MinkowskiConvolution(3, 4, kernel_size=3, stride=2, dimension=2).double()
    return down(x), ME.MinkowskiConvolutionTranspose(3, 4, kernel_size=3, stride=2,
                                                     dimension=2).double()


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_functions_equal_their_layers(transposed):
    x, layer = conv_case(transposed)
    fn = ME.MinkowskiConvolutionTransposeFunction if transposed else ME.MinkowskiConvolutionFunction
    y = layer(x)
    args = (layer.kernel_generator, layer.convolution_mode, x.coordinate_map_key)
    out = fn.apply(x.F, layer.kernel, *args, None, x.coordinate_manager)
    assert torch.equal(out, y.F)
    assert torch.equal(fn.apply(x.F, layer.kernel, *args, y.coordinate_map_key,
                                x.coordinate_manager), y.F)
    f = x.F.detach().clone().requires_grad_()
    w = layer.kernel.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda ff, ww: fn.apply(ff, ww, *args, None, x.coordinate_manager), (f, w))


MODES = [ME.PoolingMode.LOCAL_MAX_POOLING, ME.PoolingMode.LOCAL_AVG_POOLING,
         ME.PoolingMode.LOCAL_SUM_POOLING]
LAYERS = [ME.MinkowskiMaxPooling, ME.MinkowskiAvgPooling, ME.MinkowskiSumPooling]


@pytest.mark.parametrize("mode,cls", zip(MODES, LAYERS))
def test_local_pooling_function_equals_its_layer(mode, cls):
    x = random_sparse(n=60, extent=8)
    layer = cls(kernel_size=3, stride=2, dimension=2)
    fn = ME.MinkowskiLocalPoolingFunction.apply
    gen, key, mgr = layer.kernel_generator, x.coordinate_map_key, x.coordinate_manager
    assert torch.equal(fn(x.F, mode, gen, key, None, mgr), layer(x).F)
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: fn(ff, mode, gen, key, None, mgr), (f,))


def test_local_pooling_transpose_function_equals_unpooling():
    x = ME.MinkowskiSumPooling(kernel_size=2, stride=2, dimension=2)(random_sparse(n=60,
                                                                                 extent=8))
    layer = ME.MinkowskiPoolingTranspose(kernel_size=2, stride=2, dimension=2)
    fn = ME.MinkowskiLocalPoolingTransposeFunction.apply
    gen, key, mgr = layer.kernel_generator, x.coordinate_map_key, x.coordinate_manager
    mode = ME.PoolingMode.LOCAL_AVG_POOLING  # ignored: unpooling sums
    assert torch.equal(fn(x.F, mode, gen, key, None, mgr), layer(x).F)
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: fn(ff, mode, gen, key, None, mgr), (f,))


@pytest.mark.parametrize("mode", [ME.PoolingMode.GLOBAL_MAX_POOLING_KERNEL,
                                  ME.PoolingMode.GLOBAL_AVG_POOLING_PYTORCH_INDEX,
                                  ME.PoolingMode.GLOBAL_SUM_POOLING_DEFAULT])
def test_global_pooling_function_equals_its_layer(mode):
    x = random_sparse(n=40, extent=6)
    y = ME.MinkowskiGlobalPooling(mode)(x)
    fn = ME.MinkowskiGlobalPoolingFunction.apply
    key, mgr = x.coordinate_map_key, x.coordinate_manager
    assert torch.equal(fn(x.F, mode, key, None, mgr), y.F)
    assert torch.equal(fn(x.F, mode, key, y.coordinate_map_key, mgr), y.F)
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: fn(ff, mode, key, None, mgr), (f,))
    with pytest.raises(ValueError, match="expected the origin map"):
        fn(x.F, mode, key, key, mgr)


@pytest.mark.parametrize("mode,cls", [
    (ME.BroadcastMode.ELEMENTWISE_ADDITON, ME.MinkowskiBroadcastAddition),
    (ME.BroadcastMode.ELEMENTWISE_MULTIPLICATION, ME.MinkowskiBroadcastMultiplication)])
def test_broadcast_function_equals_its_layer(mode, cls):
    x = random_sparse(n=40, extent=6)
    glob = ME.MinkowskiGlobalAvgPooling()(x)
    fn = ME.MinkowskiBroadcastFunction.apply
    keys = (x.coordinate_map_key, glob.coordinate_map_key, x.coordinate_manager)
    assert torch.equal(fn(x.F, glob.F, mode, *keys), cls()(x, glob).F)
    f = x.F.detach().clone().requires_grad_()
    g = glob.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff, gg: fn(ff, gg, mode, *keys), (f, g))
    with pytest.raises(ValueError, match="expected a BroadcastMode"):
        fn(x.F, glob.F, 7, *keys)


def test_interpolation_function_returns_the_maps_and_weights():
    x = random_sparse(n=40, extent=6)
    g = torch.Generator().manual_seed(5)
    points = torch.cat([torch.randint(0, 2, (9, 1), generator=g).double(),
                        torch.rand(9, 2, generator=g, dtype=torch.float64) * 5], 1)
    fn = ME.MinkowskiInterpolationFunction.apply
    key, mgr = x.coordinate_map_key, x.coordinate_manager
    out, in_map, out_map, weights = fn(x.F, points, key, mgr)
    direct = torch.zeros_like(out).index_add(0, out_map, weights[:, None] * x.F[in_map])
    assert torch.allclose(out, direct, atol=1e-12)
    assert torch.equal(out, x.features_at_coordinates(points))
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: fn(ff, points, key, mgr)[0], (f,))


def test_functions_refuse_keys_and_managers_they_do_not_hold():
    x = random_sparse()
    other = random_sparse(seed=4)
    gen = ME.KernelGenerator(3, dimension=2)
    w = torch.zeros(9, 3, 2, dtype=torch.float64)
    with pytest.raises(ValueError, match="expected a CoordinateManager, got NoneType"):
        ME.MinkowskiConvolutionFunction.apply(x.F, w, gen, 0, x.coordinate_map_key)
    with pytest.raises(ValueError, match="expected an input key of the manager"):
        ME.MinkowskiConvolutionFunction.apply(x.F, w, gen, 0, ME.CoordinateMapKey([4, 4], "no"),
                                              None, x.coordinate_manager)
    with pytest.raises(ValueError, match=r"expected \d+ x C features"):
        ME.MinkowskiLocalPoolingFunction.apply(other.F[:3], ME.PoolingMode.LOCAL_MAX_POOLING,
                                               gen, x.coordinate_map_key, None,
                                               x.coordinate_manager)


def test_pruning_function_equals_its_layer_and_checks_a_given_key():
    x = random_sparse(n=40, extent=6)
    mask = x.F[:, 0] > 0
    y = ME.MinkowskiPruning()(x, mask)
    fn = ME.MinkowskiPruningFunction.apply
    key, mgr = x.coordinate_map_key, x.coordinate_manager
    assert torch.equal(fn(x.F, mask, key, None, mgr), y.F)
    assert torch.equal(fn(x.F, mask.to(torch.uint8), key, y.coordinate_map_key, mgr), y.F)
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: fn(ff, mask, key, None, mgr), (f,))
    with pytest.raises(ValueError, match="holding the kept coordinates"):
        fn(x.F, mask, key, key, mgr)
    with pytest.raises(ValueError, match="a bool or uint8 mask of"):
        fn(x.F, mask[:-1], key, None, mgr)


def test_instance_norm_function_normalizes_each_item_with_eps_1e_8():
    x = random_sparse(n=40, extent=6)
    fn = ME.MinkowskiInstanceNormFunction.apply
    key, mgr = x.coordinate_map_key, x.coordinate_manager
    out = fn(x.F, key, None, mgr)
    expected = torch.empty_like(x.F)
    for b in (0, 1):
        rows = x.C[:, 0] == b
        v = x.F[rows]
        expected[rows] = (v - v.mean(0)) / torch.sqrt(v.var(0, unbiased=False) + 1e-8)
    assert torch.allclose(out, expected, atol=1e-12)
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: fn(ff, key, None, mgr), (f,))
