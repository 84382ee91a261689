"""SparseTensor arithmetic across maps of one manager (the reference's union
with its asymmetric fill, against a dict-of-coordinates computation written
here; gradcheck in f64), in-place ops on one map only, and
MinkowskiToSparseTensor's zero removal as the reference's code does it."""
import operator

import pytest
import torch
from conftest import random_coordinates

import fieldkit.minkowski as ME

OPS = [operator.add, operator.sub, operator.mul, operator.truediv]


def two_maps(seed=0):
    """Two tensors of one manager on overlapping coordinate sets."""
    ca = random_coordinates(30, 2, 6, seed=seed)
    cb = random_coordinates(30, 2, 6, seed=seed + 1)
    g = torch.Generator().manual_seed(seed + 2)
    fa = torch.randn(len(ca), 3, generator=g, dtype=torch.float64)
    fb = torch.rand(len(cb), 3, generator=g, dtype=torch.float64) + 0.5  # no zero divisors
    a = ME.SparseTensor(fa, ca)
    b = ME.SparseTensor(fb, cb, coordinate_manager=a.coordinate_manager)
    return a, b


def rows(x):
    return {tuple(c): f for c, f in zip(x.C.tolist(), x.F)}


@pytest.mark.parametrize("op", OPS)
def test_arithmetic_across_maps_unites_them_as_the_reference_does(op):
    a, b = two_maps()
    out = op(a, b)
    ra, rb, ro = rows(a), rows(b), rows(out)
    assert set(ro) == set(ra) | set(rb)
    assert set(ra) & set(rb) and set(ra) - set(rb) and set(rb) - set(ra)
    for c, f in ro.items():
        if c in ra and c in rb:
            expected = op(ra[c], rb[c])
        elif c in ra:
            expected = ra[c]  # self's rows alone keep self's features, whatever op is
        else:
            expected = op(torch.zeros(3, dtype=torch.float64), rb[c])
        assert torch.equal(f, expected), c
    assert out.coordinate_manager is a.coordinate_manager
    fa = a.F.detach().clone().requires_grad_()
    fb = b.F.detach().clone().requires_grad_()

    def through(x, y):
        xa = ME.SparseTensor(x, coordinate_map_key=a.coordinate_map_key,
                             coordinate_manager=a.coordinate_manager)
        xb = ME.SparseTensor(y, coordinate_map_key=b.coordinate_map_key,
                             coordinate_manager=b.coordinate_manager)
        return op(xa, xb).F

    assert torch.autograd.gradcheck(through, (fa, fb))


def test_same_map_arithmetic_stays_on_the_map_and_managers_must_match():
    a, b = two_maps()
    assert (a * a).coordinate_map_key == a.coordinate_map_key
    assert torch.equal((a - 1.0).F, a.F - 1.0)
    other = ME.SparseTensor(a.F, a.C)
    with pytest.raises(ValueError, match="of one coordinate manager.*of another manager"):
        a + other


def test_in_place_ops_need_the_same_map():
    a, b = two_maps()
    f = a.F.clone()
    same = ME.SparseTensor(torch.full_like(f, 2.0), coordinate_map_key=a.coordinate_map_key,
                           coordinate_manager=a.coordinate_manager)
    x = a
    x += same
    x *= same
    x -= 1.0
    x /= same
    assert x is a and torch.allclose(a.F, ((f + 2) * 2 - 1) / 2, atol=1e-14)
    with pytest.raises(ValueError,
                       match="in-place arithmetic: expected tensors on the same coordinate map"):
        a += b


def test_to_sparse_tensor_removes_zeros_as_the_references_code_does():
    dense = torch.zeros(2, 3, 4, 5, dtype=torch.float64)
    dense[0, :, 1, 2] = torch.tensor([1.0, 0.0, 2.0])
    dense[1, 1, 3, 4] = 5.0
    cells = 2 * 4 * 5
    coords = ME.dense_coordinates(dense.shape)
    assert coords.shape == (cells, 3) and coords[:3].tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 2]]
    assert coords[-1].tolist() == [1, 3, 4]
    # remove_zeros alone keeps every cell (the reference's code, not its documentation)
    assert len(ME.MinkowskiToSparseTensor()(dense)) == cells
    assert len(ME.MinkowskiToSparseTensor(remove_zeros=False)(dense)) == cells
    kept = ME.MinkowskiToSparseTensor(coordinates=coords)(dense)  # with coordinates: removed
    assert kept.C.tolist() == [[0, 1, 2], [1, 3, 4]]
    every = ME.MinkowskiToSparseTensor(remove_zeros=False, coordinates=coords)(dense)
    assert torch.equal(every.C, coords)
    assert torch.equal(every.F, dense.movedim(1, -1).reshape(-1, 3))
    d = dense.clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda t: ME.MinkowskiToSparseTensor(remove_zeros=False, coordinates=coords)(t).F, (d,))
    with pytest.raises(ValueError, match="expected coordinates of 40 rows"):
        ME.to_sparse_all(dense, coords[:5])
    with pytest.raises(ValueError, match="expected a TensorField or a dense torch.Tensor"):
        ME.MinkowskiToSparseTensor()([1.0])


def test_arithmetic_with_a_field_or_a_non_tensor_says_what_it_takes():
    x = ME.SparseTensor(torch.ones(2, 1), torch.tensor([[0, 0, 0], [0, 1, 0]], dtype=torch.int32))
    field = ME.TensorField(torch.ones(2, 1), torch.tensor([[0, 0.5, 0.5], [0, 1.5, 0.5]]))
    with pytest.raises(TypeError, match="expected a SparseTensor, a torch.Tensor or a number, "
                                        "got TensorField \\(its sparse\\(\\)"):
        x + field
    with pytest.raises(TypeError, match="got str"):
        x * "2"
    assert torch.equal((x * 2).F, 2 * x.F)


def test_to_sparse_wants_a_spatial_axis():
    for where, fn in (("to_sparse", ME.to_sparse), ("to_sparse_all", ME.to_sparse_all)):
        with pytest.raises(ValueError, match=f"{where}: expected a dense B x C x s_1..s_D tensor "
                                             "\\(at least one spatial axis\\), got shape \\(2, 3\\)"):
            fn(torch.ones(2, 3))


def test_other_numbers_are_the_numbers_they_are():
    from fractions import Fraction

    import numpy as np

    x = ME.SparseTensor(torch.ones(2, 1, dtype=torch.float64),
                        torch.tensor([[0, 0, 0], [0, 1, 0]], dtype=torch.int32))
    assert torch.equal((x + Fraction(1, 2)).F, x.F + 0.5)
    from decimal import Decimal

    assert torch.equal((x + Decimal("0.5")).F, x.F + 0.5)  # real, not complex
    ints = ME.SparseTensor(torch.ones(2, 1, dtype=torch.int64), x.C)
    assert (ints * np.int64(3)).F.dtype == torch.int64
