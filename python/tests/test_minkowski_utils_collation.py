"""ME.utils' collation helpers, unique_coordinate_map and kaiming_normal_,
against plain torch computations written here."""
import math

import pytest
import torch

import fieldkit.minkowski as ME


def samples():
    g = torch.Generator().manual_seed(0)
    return [(torch.randint(0, 5, (n, 2), generator=g), torch.randn(n, 3, generator=g),
             torch.arange(n)) for n in (4, 6, 5)]


def test_batch_sparse_collate_prepends_the_sample_index():
    data = samples()
    c, f, lab = ME.utils.batch_sparse_collate(data)
    assert c.dtype == torch.int32 and c.shape == (15, 3)
    assert c[:, 0].tolist() == [0] * 4 + [1] * 6 + [2] * 5
    assert torch.equal(c[:, 1:], torch.cat([s[0] for s in data]).int())
    assert torch.equal(f, torch.cat([s[1] for s in data]))
    assert torch.equal(lab, torch.cat([s[2] for s in data]))


def test_sparse_collation_stops_at_the_point_limit():
    data = samples()
    with pytest.warns(UserWarning, match="kept 2 of 3 samples .10 of 15 points"):
        c, f, lab = ME.utils.SparseCollation(limit_numpoints=12)(data)
    assert len(c) == 10 and c[:, 0].max() == 1
    assert len(ME.utils.SparseCollation()(data)[0]) == 15


def test_unique_coordinate_map_reconstructs_the_input():
    c = torch.tensor([[0, 1, 1], [0, 2, 2], [0, 1, 1], [1, 1, 1], [0, 2, 2]], dtype=torch.int32)
    unique, inverse = ME.utils.unique_coordinate_map(c)
    assert unique.tolist() == [0, 1, 3]  # first occurrences
    assert torch.equal(c[unique][inverse], c)


@pytest.mark.parametrize("shape,mode,fan", [((27, 64, 32), "fan_in", 27 * 64),
                                             ((27, 64, 32), "fan_out", 27 * 32),
                                             ((512, 256), "fan_in", 256),
                                             ((512, 256), "fan_out", 512)])
def test_kaiming_normal_uses_the_kernels_fan(shape, mode, fan):
    torch.manual_seed(0)
    w = ME.utils.kaiming_normal_(torch.empty(shape), mode=mode, nonlinearity="relu")
    assert abs(w.std().item() / (math.sqrt(2.0) / math.sqrt(fan)) - 1) < 0.03
    with pytest.raises(ValueError, match="expected a .out, in. Linear weight or a .K, C_in, "
                                         "C_out. kernel"):
        ME.utils.kaiming_normal_(torch.empty(3))


def test_summary_counts_parameters_and_prints_each_layer(capsys):
    net = torch.nn.Sequential(ME.MinkowskiConvolution(2, 4, kernel_size=3, bias=True, dimension=2),
                              ME.MinkowskiReLU(), ME.MinkowskiLinear(4, 3))
    net[2].linear.weight.requires_grad_(False)
    x = ME.SparseTensor(torch.randn(5, 2), torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 1],
                                                          [1, 2, 2], [1, 3, 3]]))
    total, trainable = ME.utils.summary(net, x)
    assert total == 9 * 2 * 4 + 4 + 4 * 3 + 3 and trainable == total - 12
    out = capsys.readouterr().out
    assert "MinkowskiConvolution-1" in out and "[5, 4]" in out and "Linear-3" in out


def test_gradcheck_drops_arguments_this_torch_refuses_and_diagnostics_print(capsys):
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert ME.utils.gradcheck(torch.sin, (x,), atol=1e-6, not_a_gradcheck_argument=True)
    ME.print_diagnostics()
    out = capsys.readouterr().out
    assert "fieldkit" in out and "built with CUDA" in out and "torch" in out


def test_hash_vectors_equal_python_integer_arithmetic():
    import numpy as np

    arr = np.array([[0, -3, 7], [2, 5, -1], [0, -3, 7], [1, 0, 0]], dtype=np.int64)
    lo, hi = arr.min(0), arr.max(0)
    radix = hi - lo + 1
    ravel = [int(((r[0] - lo[0]) * radix[1] + r[1] - lo[1]) * radix[2] + r[2] - lo[2])
             for r in arr]
    assert ME.utils.ravel_hash_vec(arr).tolist() == ravel
    fnv = []
    for r in arr.tolist():
        h = 14695981039346656037
        for v in r:
            h = ((h * 1099511628211) % 2 ** 64) ^ (v % 2 ** 64)
        fnv.append(h)
    assert ME.utils.fnv_hash_vec(arr).tolist() == fnv
    assert fnv[0] == fnv[2] and len(set(fnv)) == 3
    with pytest.raises(ValueError, match="expected a 2-D array"):
        ME.utils.fnv_hash_vec(np.zeros(3))


def test_convert_to_int_list():
    assert ME.convert_to_int_list(2, 3) == [2, 2, 2]
    assert ME.convert_to_int_list((1, 2), 2) == [1, 2]
    assert ME.convert_to_int_list(torch.tensor([4, 5, 6]), 3) == [4, 5, 6]
    with pytest.raises(ValueError, match="expected an int or 3 values"):
        ME.convert_to_int_list([1, 2], 3)
