"""sorted_coordinates and the convolutions under set_deterministic: the rows in
lexicographic order (checked against Python's sorted), one sorted map per map
of the manager, outputs independent of the input's row order, skip
connections of one manager still joinable."""
import pytest
import torch
from conftest import random_coordinates

import fieldkit.minkowski as ME


@pytest.fixture
def deterministic():
    ME.set_deterministic(True)
    yield
    ME.set_deterministic(False)


def shuffled(n=80, dim=2, extent=9, seed=0, lo=0):
    c = random_coordinates(n, dim, extent, seed=seed)
    c[:, 1:] += lo
    g = torch.Generator().manual_seed(seed + 7)
    perm = torch.randperm(len(c), generator=g)
    f = torch.randn(len(c), 3, generator=g, dtype=torch.float64)
    return c[perm], f[perm]


@pytest.mark.parametrize("dim,lo", [(2, 0), (3, -5)])
def test_sorted_coordinates_orders_rows_lexicographically(dim, lo):
    c, f = shuffled(dim=dim, lo=lo)
    x = ME.SparseTensor(f, c)
    s = ME.sorted_coordinates(x)
    order = sorted(range(len(c)), key=lambda i: tuple(c[i].tolist()))
    assert torch.equal(s.C, c[order])
    assert torch.equal(s.F, f[order])
    assert s.coordinate_manager is x.coordinate_manager
    assert s.coordinate_map_key != x.coordinate_map_key
    again = ME.sorted_coordinates(ME.SparseTensor(2 * x.F, coordinate_map_key=x.coordinate_map_key,
                                                  coordinate_manager=x.coordinate_manager))
    assert again.coordinate_map_key == s.coordinate_map_key  # one sorted map per map
    assert ME.sorted_coordinates(s) is s
    assert ME.utils.sorted_coordinates is ME.sorted_coordinates


def test_sorted_coordinates_is_differentiable_and_keeps_small_tensors():
    c, f = shuffled(n=30)
    x = ME.SparseTensor(f, c)
    ff = f.clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda t: ME.sorted_coordinates(ME.SparseTensor(t, coordinate_map_key=x.coordinate_map_key,
                                                        coordinate_manager=x.coordinate_manager)).F,
        (ff,))
    one = ME.SparseTensor(torch.ones(1, 2), torch.tensor([[0, 3, 1]], dtype=torch.int32))
    assert ME.sorted_coordinates(one) is one


def conv_of(c, f, layer):
    return layer(ME.SparseTensor(f, c))


def test_convolution_output_does_not_depend_on_the_row_order(deterministic):
    c, f = shuffled()
    g = torch.Generator().manual_seed(9)
    perm = torch.randperm(len(c), generator=g)
    for layer in [ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2).double(),
                  ME.MinkowskiConvolution(3, 4, kernel_size=3, stride=2, dimension=2).double(),
                  ME.MinkowskiGenerativeConvolutionTranspose(3, 2, kernel_size=3,
                                                             dimension=2).double()]:
        a, b = conv_of(c, f, layer), conv_of(c[perm], f[perm], layer)
        assert torch.equal(a.C, b.C) and torch.equal(a.F, b.F)
    layer = ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2).double()
    a = conv_of(c, f, layer)
    ME.set_deterministic(False)
    plain = conv_of(c, f, layer)  # the input's row order, the same values per coordinate
    order = sorted(range(len(c)), key=lambda i: tuple(c[i].tolist()))
    assert torch.equal(a.C, c[order]) and torch.allclose(a.F, plain.F[order], atol=1e-12)


def test_unet_skips_join_under_determinism(deterministic):
    c, f = shuffled(n=120, extent=12)
    x = ME.SparseTensor(f, c)
    enc = ME.MinkowskiConvolution(3, 4, kernel_size=3, dimension=2).double()
    down = ME.MinkowskiConvolution(4, 4, kernel_size=2, stride=2, dimension=2).double()
    mid = ME.MinkowskiConvolution(4, 4, kernel_size=3, dimension=2).double()
    up = ME.MinkowskiConvolutionTranspose(4, 4, kernel_size=2, stride=2, dimension=2).double()
    e = enc(x)
    d = up(mid(down(e)))
    assert d.coordinate_map_key == e.coordinate_map_key  # the encoder's (sorted) map
    out = ME.cat(e, d)
    assert out.F.shape == (len(x), 8)
    assert x.coordinate_manager.num_maps() == 3  # input, its sorted copy, stride 2


def test_the_unsorted_input_joins_its_sorted_outputs(deterministic):
    # conv(x) sits on x's "@sorted" twin: cat, + and += bring x's rows onto
    # its row order (the reference's new manager per conv refuses these).
    c, f = shuffled(n=60, extent=9)
    x = ME.SparseTensor(f, c)
    y = ME.MinkowskiConvolution(3, 3, kernel_size=3, dimension=2).double()(x)
    assert y.coordinate_map_key != x.coordinate_map_key
    row_of = {tuple(r): i for i, r in enumerate(c.tolist())}
    on_y = f[[row_of[tuple(r)] for r in y.C.tolist()]]  # x's features on y's rows
    assert torch.equal(ME.cat(y, x).F, torch.cat([y.F, on_y], 1))
    assert torch.equal((y + x).F, y.F + on_y) and (y + x).coordinate_map_key == y.coordinate_map_key
    back = x + y  # on x's rows
    assert torch.equal(back.F, f + y.F[[{tuple(r): i for i, r in enumerate(y.C.tolist())}[tuple(r)]
                                        for r in c.tolist()]])
    z = ME.SparseTensor(y.F.clone(), coordinate_map_key=y.coordinate_map_key,
                        coordinate_manager=y.coordinate_manager)
    z += x
    assert torch.equal(z.F, y.F + on_y)
    # Gradients reach x through the row permutation.
    fx = f.clone().requires_grad_()
    xs = ME.SparseTensor(fx, coordinate_map_key=x.coordinate_map_key,
                         coordinate_manager=x.coordinate_manager)
    ME.cat(y.detach(), xs).F[:, 3:].sum().backward()
    assert torch.equal(fx.grad, torch.ones_like(f))


def test_global_pools_join_across_sorted_twins_and_strides(deterministic):
    # Pools of x (its map) and of conv(x) (its "@sorted" twin) and of a
    # strided conv are all on one origin map, as the reference's single one.
    c, f = shuffled(n=60, extent=9)
    x = ME.SparseTensor(f, c)
    y = ME.MinkowskiConvolution(3, 3, kernel_size=3, dimension=2).double()(x)
    w = ME.MinkowskiConvolution(3, 3, kernel_size=2, stride=2, dimension=2).double()(x)
    pool = ME.MinkowskiGlobalAvgPooling()
    gx, gy, gw = pool(x), pool(y), pool(w)
    assert torch.equal(ME.cat(gx, gy, gw).F, torch.cat([gx.F, gy.F, gw.F], 1))
    assert (gx + gw).coordinate_map_key == gx.coordinate_map_key


def test_the_twin_join_reuses_the_sort(deterministic):
    # sorted_coordinates keeps its permutation: a join is a gather, no search.
    c, f = shuffled(n=60, extent=9)
    x = ME.SparseTensor(f, c)
    y = ME.MinkowskiConvolution(3, 3, kernel_size=3, dimension=2).double()(x)
    twins = x.coordinate_manager._twin_rows
    assert (y.coordinate_map_key, x.coordinate_map_key) in twins
    assert (x.coordinate_map_key, y.coordinate_map_key) in twins
    rows = twins[(y.coordinate_map_key, x.coordinate_map_key)]
    assert torch.equal(x.C[rows], y.C)
