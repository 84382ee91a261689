"""Global pooling over a TensorField: per batch item the sum / mean / max of
its points' features (a plain per-item reduction), a SparseTensor at
(b, 0, ..., 0); gradcheck in f64; an item without points gets no row."""
import pytest
import torch

import fieldkit.minkowski as ME

MODES = {
    ME.PoolingMode.SUM: lambda f: f.sum(0),
    ME.PoolingMode.AVG: lambda f: f.mean(0),
    ME.PoolingMode.MAX: lambda f: f.max(0).values,
}


def random_field(n=25, batches=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    c = torch.rand(n, 3, generator=g, dtype=torch.float64) * 4 - 2
    c[:, 0] = torch.arange(n) % batches
    f = torch.randn(n, 2, generator=g, dtype=torch.float64)
    return ME.TensorField(f, c)


@pytest.mark.parametrize("mode", list(MODES))
def test_field_global_pooling_is_a_per_item_reduction(mode):
    x = random_field()
    y = ME.MinkowskiGlobalPooling(mode)(x)
    assert isinstance(y, ME.SparseTensor) and len(y) == 3
    assert y.C.tolist() == [[b, 0, 0] for b in range(3)]
    for b in range(3):
        rows = x.C[:, 0] == b
        torch.testing.assert_close(y.F[b], MODES[mode](x.F[rows]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", list(MODES))
def test_field_global_pooling_gradcheck(mode):
    x = random_field(n=12)
    pool = ME.MinkowskiGlobalPooling(mode)
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda ff: pool(ME.TensorField(ff, x.C, coordinate_manager=x.coordinate_manager)).F, (f,))


def test_field_and_its_quantization_pool_alike():
    x = random_field()
    s = x.sparse(quantization_mode=ME.SparseTensorQuantizationMode.UNWEIGHTED_SUM)
    torch.testing.assert_close(ME.MinkowskiGlobalSumPooling()(x).F,
                               ME.MinkowskiGlobalSumPooling()(s).F)


def test_a_batch_item_without_points_gets_no_row():
    x = random_field(n=6, batches=3)
    c = x.C.clone()
    c[c[:, 0] == 1, 0] = 2
    y = ME.MinkowskiGlobalMaxPooling()(ME.TensorField(x.F, c))
    present = sorted(set(int(b) for b in c[:, 0].tolist()))
    assert y.C[:, 0].tolist() == present and 1 not in present
    for row, b in enumerate(present):
        torch.testing.assert_close(y.F[row], x.F[c[:, 0] == b].max(0).values)
