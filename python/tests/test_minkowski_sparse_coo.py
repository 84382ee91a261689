"""SparseTensor.sparse(): a torch sparse COO tensor (B x s_1..s_D x C) whose
entries are the features at (batch, (c - min) / ts), checked by a plain loop;
min defaults to the smallest coordinate, as the reference's; differentiable in
the features (gradcheck in f64)."""
import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME


def test_coo_entries_are_the_features_at_their_cells():
    x = random_sparse(n=30, extent=6)
    coo, lo, ts = x.sparse(min_coords=[0, 0])
    assert coo.is_sparse and lo.tolist() == [[0, 0]] and list(ts) == [1, 1]
    dense = coo.to_dense()
    assert list(dense.shape) == [2, int(x.C[:, 1].max()) + 1, int(x.C[:, 2].max()) + 1, 3]
    seen = torch.zeros(dense.shape[:-1], dtype=torch.bool)
    for c, f in zip(x.C.tolist(), x.F):
        torch.testing.assert_close(dense[c[0], c[1], c[2]], f, rtol=0, atol=0)
        seen[c[0], c[1], c[2]] = True
    assert (dense[~seen] == 0).all()
    torch.testing.assert_close(dense, x.dense()[0].movedim(1, -1))


def test_min_coords_default_to_the_smallest_coordinate():
    c = torch.tensor([[0, -4, 2], [0, 0, 6], [1, 4, -2]], dtype=torch.int32)
    x = ME.SparseTensor(torch.arange(6, dtype=torch.float64).view(3, 2), c, tensor_stride=2)
    coo, lo, ts = x.sparse()
    assert lo.tolist() == [[-2, -1]] and lo.dtype == torch.int32  # contracted: -4/2, -2/2
    assert list(coo.shape) == [2, 5, 5, 2]
    d = coo.to_dense()
    for (b, i, j), f in zip(c.tolist(), x.F):
        cell = (i // 2 - lo[0, 0], j // 2 - lo[0, 1])
        assert d[b, cell[0], cell[1]].tolist() == f.tolist()
    raw, lo, _ = x.sparse(contract_coords=False)
    assert lo.tolist() == [[-4, -2]] and list(raw.shape) == [2, 9, 9, 2]


def test_strided_coordinates_contract_from_min_coords():
    c = torch.tensor([[0, -4, 2], [0, 0, 6], [1, 4, -2]], dtype=torch.int32)
    x = ME.SparseTensor(torch.arange(6, dtype=torch.float64).view(3, 2), c, tensor_stride=2)
    coo, lo, _ = x.sparse(min_coords=[-4, -2], max_coords=[6, 8])
    assert list(coo.shape) == [2, 6, 6, 2]
    d = coo.to_dense()
    assert d[0, 0, 2].tolist() == [0, 1] and d[0, 2, 4].tolist() == [2, 3]
    assert d[1, 4, 0].tolist() == [4, 5]
    raw, _, _ = x.sparse(min_coords=[-4, -2], contract_coords=False)
    assert raw.to_dense()[1, 8, 0].tolist() == [4, 5]


def test_bad_bounds_raise():
    c = torch.tensor([[0, -1, 2]], dtype=torch.int32)
    x = ME.SparseTensor(torch.ones(1, 1), c)
    with pytest.raises(ValueError, match="min coordinate"):
        x.sparse(min_coords=[0, 0])
    with pytest.raises(ValueError, match="max_coords"):
        x.sparse(min_coords=[-1, 0], max_coords=[0, 1])


def test_coo_gradcheck():
    x = random_sparse(n=12, extent=4)
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda ff: on_map(x, ff).sparse()[0].to_dense(), (f,))
