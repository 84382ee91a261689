"""gradcheck in f64 of the feature paths that are torch ops around C++
coordinate work: duplicate reduction by every quantization mode, a field's
quantization and slice back, dense() and to_sparse, cat / sum / mean."""
import pytest
import torch
from conftest import on_map, random_sparse

import fieldkit.minkowski as ME

QM = ME.SparseTensorQuantizationMode
# rows 0/1/2 share a voxel, rows 4/5 another
COORDS = torch.tensor([[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 1, 2], [1, 3, 1], [1, 3, 1],
                       [1, 2, 2]], dtype=torch.int32)


@pytest.mark.parametrize("mode", [QM.UNWEIGHTED_AVERAGE, QM.UNWEIGHTED_SUM, QM.MAX_POOL,
                                  QM.RANDOM_SUBSAMPLE, QM.FIRST_OCCURRENCE])
def test_quantization_gradcheck(mode):
    g = torch.Generator().manual_seed(0)
    f = torch.randn(7, 2, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda t: ME.SparseTensor(t, COORDS, quantization_mode=mode).F, (f,))


def test_field_quantization_and_slice_gradcheck():
    g = torch.Generator().manual_seed(1)
    pts = torch.rand(9, 3, generator=g, dtype=torch.float64) * 3
    pts[:, 0] = torch.tensor([0.0] * 5 + [1.0] * 4)
    f = torch.randn(9, 2, generator=g, dtype=torch.float64, requires_grad=True)

    def through_voxels(t):
        field = ME.TensorField(t, pts)
        x = field.sparse()
        return (x * 2.0).slice(field).F

    assert torch.autograd.gradcheck(through_voxels, (f,))


def test_dense_and_to_sparse_gradcheck():
    x = random_sparse(n=30, extent=5)
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda t: on_map(x, t).dense(shape=[2, 3, 5, 5])[0], (f,))
    # every cell kept: a perturbed zero cell would change the map under gradcheck
    d = torch.randn(2, 3, 4, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: ME.to_sparse(t, remove_zeros=False).F, (d,))


def test_cat_sum_mean_gradcheck():
    x = random_sparse(n=30, extent=5)
    a = x.F.detach().clone().requires_grad_()
    b = torch.randn_like(a).requires_grad_()
    for op in (ME.cat, ME.sum, ME.mean):
        assert torch.autograd.gradcheck(lambda s, t: op(on_map(x, s), on_map(x, t)).F, (a, b))
