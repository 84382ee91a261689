"""Normalization, pruning, union, interpolation and spmm: gradcheck in f64 and
plain torch references."""
import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME


def test_instance_norm_normalizes_each_batch_item():
    x = random_sparse(n=60)
    norm = ME.MinkowskiInstanceNorm(3).double()
    with torch.no_grad():
        norm.weight.copy_(torch.tensor([[1.0, 2.0, 0.5]]))
        norm.bias.copy_(torch.tensor([[0.0, 1.0, -1.0]]))
    y = norm(x)
    for b in range(2):
        rows = x.C[:, 0] == b
        f = x.F[rows]
        ref = (f - f.mean(0)) / torch.sqrt(f.var(0, unbiased=False) + 1e-8)
        ref = ref * norm.weight + norm.bias
        assert torch.allclose(y.F[rows], ref, atol=1e-10)


def test_instance_norm_gradcheck():
    x = random_sparse(n=30)
    norm = ME.MinkowskiInstanceNorm(3).double()

    def run(f, w, b):  # the layer with its parameters replaced by w, b
        norm._parameters["weight"], norm._parameters["bias"] = w, b
        return norm(on_map(x, f)).F

    f = x.F.clone().requires_grad_()
    w = torch.rand(1, 3, dtype=torch.float64, requires_grad=True)
    b = torch.rand(1, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(run, (f, w, b))


def test_batch_norm_is_torchs_over_the_features():
    x = random_sparse(n=60)
    bn = ME.MinkowskiBatchNorm(3).double()
    ref = torch.nn.functional.batch_norm(x.F, None, None, training=True)
    assert torch.allclose(bn(x).F, ref, atol=1e-12)
    assert set(bn.state_dict()) >= {"bn.weight", "bn.running_mean"}


def test_pruning_keeps_the_masked_rows():
    x = random_sparse(n=40)
    mask = x.F[:, 0] > 0
    y = ME.MinkowskiPruning()(x, mask)
    assert torch.equal(y.C, x.C[mask]) and torch.equal(y.F, x.F[mask])
    f = x.F.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: ME.MinkowskiPruning()(on_map(x, ff), mask).F,
                                    (f,))
    empty = ME.MinkowskiPruning()(x, torch.zeros(len(x), dtype=torch.bool))
    assert len(empty) == 0 and empty.F.shape == (0, 3)


def test_union_adds_overlapping_rows():
    mgr = ME.CoordinateManager(2)
    a = ME.SparseTensor(torch.tensor([[1.0], [2.0]], dtype=torch.float64),
                        torch.tensor([[0, 0, 0], [0, 1, 0]]), coordinate_manager=mgr)
    b = ME.SparseTensor(torch.tensor([[3.0], [4.0]], dtype=torch.float64),
                        torch.tensor([[0, 1, 0], [0, 2, 0]]), coordinate_manager=mgr)
    u = ME.MinkowskiUnion()(a, b)
    rows = {tuple(c): f.item() for c, f in zip(u.C.tolist(), u.F)}
    assert rows == {(0, 0, 0): 1.0, (0, 1, 0): 5.0, (0, 2, 0): 4.0}
    fa, fb = a.F.clone().requires_grad_(), b.F.clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda p, q: ME.MinkowskiUnion()(on_map(a, p), on_map(b, q)).F, (fa, fb))


def test_interpolation_is_bilinear_inside_and_exact_on_voxels():
    c = torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 1]])
    x = ME.SparseTensor(torch.tensor([[0.0], [1.0], [2.0], [3.0]], dtype=torch.float64), c)
    q = torch.tensor([[0, 0.5, 0.5], [0, 1.0, 0.0], [0, 0.25, 0.0]], dtype=torch.float64)
    out = x.features_at_coordinates(q)
    assert torch.allclose(out.flatten(), torch.tensor([1.5, 1.0, 0.25], dtype=torch.float64))
    f = x.F.clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda ff: ME.MinkowskiInterpolation()(on_map(x, ff), q), (f,))


def test_spmm_matches_dense_matmul_and_gradcheck():
    rows = torch.tensor([0, 0, 2, 1, 2])
    cols = torch.tensor([1, 3, 0, 1, 0])  # (2, 0) twice: duplicates add up
    vals = torch.rand(5, dtype=torch.float64, requires_grad=True)
    mat = torch.rand(4, 2, dtype=torch.float64, requires_grad=True)
    dense_a = torch.zeros(3, 4, dtype=torch.float64).index_put((rows, cols), vals.detach(),
                                                               accumulate=True)
    assert torch.allclose(ME.spmm(rows, cols, vals, (3, 4), mat), dense_a @ mat)
    assert torch.autograd.gradcheck(lambda v, m: ME.spmm(rows, cols, v, (3, 4), m), (vals, mat))


def test_spmm_rejects_out_of_range_rows():
    with pytest.raises(ValueError, match="spmm"):
        ME.spmm(torch.tensor([5]), torch.tensor([0]), torch.ones(1), (3, 4), torch.ones(4, 1))


def test_instance_norm_sums_f32_parameter_gradients_in_f32_over_half_features():
    # The f32 weight and bias were cast to the features' f16: their gradients
    # were summed in f16 (a bias gradient past 65504 was inf) and rounded on
    # the way back. They are applied as the reference applies them, promoted.
    n = 70000
    c = torch.zeros(n, 3, dtype=torch.int32)
    c[:, 1] = torch.arange(n) % 1000
    c[:, 2] = torch.arange(n) // 1000
    x = ME.SparseTensor(torch.randn(n, 2, generator=torch.Generator().manual_seed(0)).half(), c)
    norm = ME.MinkowskiInstanceNorm(2)
    out = norm(x)
    assert out.F.dtype == torch.float32
    out.F.sum().backward()
    assert norm.bias.grad.tolist() == [[float(n), float(n)]]
    same = ME.MinkowskiInstanceNorm(2).half()  # one dtype: the fused path, f16 out
    assert same(x).F.dtype == torch.float16
