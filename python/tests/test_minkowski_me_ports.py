"""Calls that ported MinkowskiEngine scripts make, taken as the reference
takes them: per-cloud labels in sparse_collate (its pointnet.py and
classification_modelnet40.py examples), (coordinates, features) pairs in
batch_sparse_collate, kaiming_normal_ on a Linear weight, and
MinkowskiInstanceNorm's mode."""
import math

import numpy as np
import pytest
import torch

import fieldkit.minkowski as ME


def clouds(sizes=(5, 3, 4), d=3):
    g = torch.Generator().manual_seed(0)
    return ([torch.rand(n, d, generator=g) * 10 for n in sizes],
            [torch.rand(n, 2, generator=g) for n in sizes])


# -- sparse_collate labels ------------------------------------------------------

def test_one_label_per_cloud_concatenates_to_one_per_sample():
    coords, feats = clouds()
    labels = [torch.tensor([7]), torch.tensor([3]), torch.tensor([1])]
    bc, bf, bl = ME.utils.sparse_collate(coords, feats, labels, dtype=torch.float32)
    assert bl.tolist() == [7, 3, 1]
    assert bc.shape == (12, 4) and bf.shape == (12, 2)


def test_per_point_labels_still_concatenate():
    coords, feats = clouds()
    labels = [torch.full((len(c), 1), b) for b, c in enumerate(coords)]
    _, _, bl = ME.utils.sparse_collate(coords, feats, labels)
    assert torch.equal(bl, torch.cat(labels))


def test_array_and_zero_dim_labels_become_tensors():
    coords, feats = clouds()
    _, _, bl = ME.utils.sparse_collate(coords, feats, [np.array([2]), np.array([0]),
                                                       np.array([5])])
    assert isinstance(bl, torch.Tensor) and bl.tolist() == [2, 0, 5]
    # The reference's torch.cat refuses 0-d labels; each is one sample's.
    _, _, bl = ME.utils.sparse_collate(coords, feats, list(torch.tensor([4, 5, 6])))
    assert bl.tolist() == [4, 5, 6]


def test_python_int_labels_come_back_as_the_list_given():
    coords, feats = clouds()
    _, _, bl = ME.utils.sparse_collate(coords, feats, (1, 0, 1))
    assert bl == [1, 0, 1]


def test_malformed_labels_are_refused_naming_the_sample():
    coords, feats = clouds()
    with pytest.raises(ValueError, match="expected 3 labels .one per coordinate tensor., got 2"):
        ME.utils.sparse_collate(coords, feats, [torch.tensor([1]), torch.tensor([2])])
    with pytest.raises(ValueError, match=r"shape \(rows, \*\(2,\)\).*got \(1, 3\) for sample 2"):
        ME.utils.sparse_collate(coords, feats, [torch.zeros(1, 2), torch.zeros(1, 2),
                                                torch.zeros(1, 3)])
    with pytest.raises(ValueError, match="got Tensor for sample 0 and int for sample 1"):
        ME.utils.sparse_collate(coords, feats, [torch.tensor([1]), 2, torch.tensor([3])])
    # Per-point labels one row short in sample 1 would shift sample 2's.
    with pytest.raises(ValueError, match="rows 5, 3, 4.*got label rows 5, 2, 4"):
        ME.utils.sparse_collate(coords, feats, [torch.zeros(5), torch.zeros(2), torch.zeros(4)])


def test_features_are_still_checked_per_sample():
    coords, feats = clouds()
    feats[1] = torch.zeros(2, 2)
    with pytest.raises(ValueError, match="expected 3 feature rows for sample 1"):
        ME.utils.sparse_collate(coords, feats, [torch.tensor([1])] * 3)


def test_coordinates_go_to_the_cpu_and_features_stay_where_they_are():
    # "meta" stands for an accelerator on a CPU-only torch, as in
    # test_minkowski_device_stream; the docstring says what happens here.
    coords, _ = clouds()
    feats = [torch.zeros(len(c), 2, device="meta") for c in coords]
    bc, bf = ME.utils.sparse_collate(coords, feats)
    assert bc.device.type == "cpu" and bf.device.type == "meta"


# -- batch_sparse_collate -------------------------------------------------------

def test_batch_sparse_collate_takes_coordinate_feature_pairs():
    data = [(np.zeros((2, 3)), np.ones((2, 1))), (np.ones((3, 3)), np.ones((3, 1)))]
    out = ME.utils.batch_sparse_collate(data)
    assert len(out) == 2
    assert out[0].shape == (5, 4) and out[0][:, 0].tolist() == [0, 0, 1, 1, 1]
    assert out[1].shape == (5, 1)
    c, f = ME.utils.SparseCollation()(data)
    assert torch.equal(c, out[0]) and torch.equal(f, out[1])


def test_batch_sparse_collate_refuses_mixed_or_other_lengths():
    pair = (torch.zeros(2, 3), torch.ones(2, 1))
    with pytest.raises(ValueError, match="all .coordinates, features. or all .*got samples "
                                         "of length 2, 3"):
        ME.utils.batch_sparse_collate([pair, pair + (torch.zeros(2),)])
    with pytest.raises(ValueError, match="got samples of length 1"):
        ME.utils.batch_sparse_collate([pair[:1]])
    with pytest.raises(ValueError, match="got no samples"):
        ME.utils.batch_sparse_collate([])


# -- kaiming_normal_ ------------------------------------------------------------

@pytest.mark.parametrize("mode", ["fan_in", "fan_out", "FAN_IN", "Fan_Out"])
def test_kaiming_normal_reads_a_2d_tensor_as_a_linear_weight(mode):
    linear = torch.nn.Linear(4096, 8)  # weight (out=8, in=4096)
    torch.manual_seed(0)
    ME.utils.kaiming_normal_(linear.weight, mode=mode, nonlinearity="relu")
    fan = 4096 if mode.lower() == "fan_in" else 8
    assert abs(linear.weight.std().item() / (math.sqrt(2.0 / fan)) - 1) < 0.05
    # torch's own initializer reads a Linear weight the same way.
    ref = torch.nn.init.kaiming_normal_(torch.empty(8, 4096), mode=mode.lower(),
                                        nonlinearity="relu")
    assert abs(linear.weight.std().item() / ref.std().item() - 1) < 0.05


def test_kaiming_normal_refuses_an_unknown_mode():
    with pytest.raises(ValueError, match="expected mode 'fan_in' or 'fan_out', got 'fan_avg'"):
        ME.utils.kaiming_normal_(torch.empty(3, 4), mode="fan_avg")


# -- MinkowskiInstanceNorm's mode -----------------------------------------------

def sparse_input():
    coords = torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 1], [1, 2, 2], [1, 3, 3]])
    return ME.SparseTensor(torch.randn(5, 3, dtype=torch.float64,
                                       generator=torch.Generator().manual_seed(0)), coords)


def test_instance_norm_takes_the_references_mode():
    x = sparse_input()
    default = ME.MinkowskiInstanceNorm(3).double()
    for mode in ME.GlobalPoolingMode:
        norm = ME.MinkowskiInstanceNorm(3, mode=mode).double()
        assert norm.mode is mode
        assert torch.equal(norm(x).F, default(x).F)  # one computation here
    assert ME.MinkowskiInstanceNorm(3, ME.GlobalPoolingMode.SPARSE).mode.name == "SPARSE"


def test_instance_norm_keeps_eps_as_a_keyword():
    x = sparse_input()
    assert ME.MinkowskiInstanceNorm(3).eps == 1e-8
    wide = ME.MinkowskiInstanceNorm(3, eps=1e3).double()
    assert wide.eps == 1e3 and wide(x).F.abs().max() < 0.2  # eps dominates var
    with pytest.raises(TypeError, match="expected mode to be a GlobalPoolingMode .pass eps as "
                                        "eps=., got 1e-05"):
        ME.MinkowskiInstanceNorm(3, 1e-5)


def test_global_pooling_mode_is_not_read_as_a_pooling_mode():
    # AUTO is 0, PoolingMode.SUM's value: an IntEnum would have pooled sums.
    with pytest.raises(ValueError, match="expected a PoolingMode"):
        ME.MinkowskiGlobalPooling(ME.GlobalPoolingMode.AUTO)
