"""Batching samples: per-sample coordinates into one tensor with a batch
column (the reference's ``batched_coordinates`` and ``sparse_collate``), and
collate functions for a torch DataLoader (``batch_sparse_collate``,
``SparseCollation``)."""
import warnings

import numpy as np
import torch

from .._core import minkowski as _mk
from .functional import lend_streams, resolved


def batched_coordinates(coords, dtype=torch.int32, device=None):
    """Per-sample N_i x D coordinates -> (sum N_i) x (1+D) with the sample index
    in column 0, on `device` (default the CPU). An integer dtype floors real
    coordinates; a floating dtype keeps them as they are (as the reference
    does: it floors only for an integer dtype)."""
    coords = [resolved(torch.as_tensor(c)) for c in coords]
    for b, c in enumerate(coords):
        if c.dtype == torch.bool or c.is_complex():
            raise ValueError(f"batched_coordinates: expected integer or real coordinates, got "
                             f"{c.dtype} for sample {b}")
        if c.dim() != 2:
            raise ValueError(f"batched_coordinates: expected N_i x D coordinates, got shape "
                             f"{tuple(c.shape)} for sample {b}")
    # uint8/int8/int16 as int32, which the C++ batching takes (exactly).
    coords = [c.to(torch.int32) if c.dtype in (torch.uint8, torch.int8, torch.int16) else c
              for c in coords]
    if dtype.is_floating_point:
        return _real_batched_coordinates(coords, dtype, device)
    lend_streams(*coords)
    return _mk.batched_coordinates(coords).to(device=device, dtype=dtype)


def _real_batched_coordinates(coords, dtype, device):
    """batched_coordinates in a floating dtype: no floor, so torch, not the
    C++ batching (which floors), concatenates them."""
    where = "batched_coordinates"
    if not coords:
        raise ValueError(f"{where}: expected at least one coordinate tensor, got none")
    if coords[0].dim() != 2:
        raise ValueError(f"{where}: expected N_i x D coordinates, got shape "
                         f"{tuple(coords[0].shape)} for sample 0")
    d, device = coords[0].shape[1], torch.device("cpu") if device is None else device
    rows = []
    for b, c in enumerate(coords):
        if c.dim() != 2 or c.shape[1] != d:
            raise ValueError(f"{where}: expected N_i x {d} coordinates, got shape "
                             f"{tuple(c.shape)} for sample {b}")
        c = c.to(device=device, dtype=dtype)
        rows.append(torch.cat([c.new_full((len(c), 1), b), c], 1))
    return torch.cat(rows, 0)


def sparse_collate(coords, feats, labels=None, dtype=torch.int32, device=None):
    """Batches per-sample coordinates, features (and labels) into one
    coordinate tensor with a batch column, concatenated features and
    collated labels (see _collated_labels).

    The coordinates go where batched_coordinates puts them: on `device`, or
    the CPU when it is None (the reference instead follows the first
    sample's coordinates there). Features and tensor labels are moved to
    `device` when it is given and otherwise stay where they are."""
    coords, feats = list(coords), [torch.as_tensor(f) for f in feats]
    _check_feature_rows(coords, feats)
    bc = batched_coordinates(coords, dtype=dtype, device=device)
    bf = torch.cat(feats, 0).to(device)
    if labels is None:
        return bc, bf
    return bc, bf, _collated_labels(coords, labels, device)


def _check_feature_rows(coords, feats):
    # Sample b's rows must line up across the lists: torch.cat alone paired
    # one sample's coordinates with another's features without a word.
    where = "sparse_collate"
    if len(feats) != len(coords):
        raise ValueError(f"{where}: expected {len(coords)} feature tensors (one per coordinate "
                         f"tensor), got {len(feats)}")
    for b, (c, f) in enumerate(zip(coords, feats)):
        if f.dim() == 0 or len(f) != len(c):
            raise ValueError(f"{where}: expected {len(c)} feature rows for sample {b} (its "
                             f"coordinates'), got shape {tuple(f.shape)}")


def _collated_labels(coords, labels, device):
    """The reference's label collation: array labels concatenated (per point,
    or per sample as its classification examples pass one (1,) label per
    cloud, giving (B,)); labels that are no arrays (python ints) come back as
    the list given, as the reference returns them."""
    where = "sparse_collate"
    labels = list(labels)
    if len(labels) != len(coords):
        raise ValueError(f"{where}: expected {len(coords)} labels (one per coordinate tensor), "
                         f"got {len(labels)}")
    arrays = [isinstance(l, (torch.Tensor, np.ndarray)) for l in labels]
    if not any(arrays):
        return labels
    if not all(arrays):
        b = arrays.index(not arrays[0])
        raise ValueError(f"{where}: expected labels that are all tensors (or arrays) or all "
                         f"not, got {type(labels[0]).__name__} for sample 0 and "
                         f"{type(labels[b]).__name__} for sample {b}")
    # A 0-d label is one per sample; the reference's torch.cat refuses it.
    labels = [torch.as_tensor(l).reshape(1) if np.ndim(l) == 0 else torch.as_tensor(l)
              for l in labels]
    _check_label_shapes(coords, labels)
    return torch.cat(labels, 0).to(device)


def _check_label_shapes(coords, labels):
    # torch.cat takes any row counts, so a sample's per-point labels one row
    # short would shift every later sample's labels onto other points; rows
    # are per point in every sample, or the same (per sample) in every one.
    where = "sparse_collate"
    for b, l in enumerate(labels):
        if l.shape[1:] != labels[0].shape[1:]:
            raise ValueError(f"{where}: expected labels of shape (rows, *"
                             f"{tuple(labels[0].shape[1:])}) as sample 0's, got "
                             f"{tuple(l.shape)} for sample {b}")
    rows, points = [len(l) for l in labels], [len(c) for c in coords]
    if rows != points and len(set(rows)) != 1:
        raise ValueError(f"{where}: expected labels per point (rows {_first(points)}, each "
                         f"sample's coordinates) or per sample (the same rows for every sample), "
                         f"got label rows {_first(rows)}")


def _first(counts, n=8):
    """Up to n counts for an error message, '...' past them."""
    return ", ".join(map(str, counts[:n])) + (", ..." if len(counts) > n else "")


def batch_sparse_collate(data, dtype=torch.int32, device=None):
    """A DataLoader collate_fn over (coordinates, features) or (coordinates,
    features, labels) samples, as the reference takes either: sparse_collate
    of their coordinates, features (and labels)."""
    data = list(data)
    sizes = {len(s) if isinstance(s, (tuple, list)) else None for s in data}
    if not data or len(sizes) != 1 or sizes.pop() not in (2, 3):
        # zip(*data) would drop every sample's labels when one sample lacked
        # them, and fail to unpack naming nothing for other lengths.
        raise ValueError("batch_sparse_collate: expected samples that are all (coordinates, "
                         "features) or all (coordinates, features, labels), got "
                         f"{_sample_lengths(data)}")
    return sparse_collate(*zip(*data), dtype=dtype, device=device)


def _sample_lengths(data):
    """What the samples were, for batch_sparse_collate's error."""
    if not data:
        return "no samples"
    lengths = [str(len(s)) if isinstance(s, (tuple, list)) else type(s).__name__ for s in data]
    return "samples of length " + _first(lengths)


class SparseCollation:
    """A collate_fn like batch_sparse_collate that stops adding samples once
    their points would exceed limit_numpoints (when it is positive), with a
    warning naming how many samples and points were dropped."""

    def __init__(self, limit_numpoints=-1, dtype=torch.int32, device=None):
        self.limit_numpoints, self.dtype, self.device = limit_numpoints, dtype, device

    def __call__(self, data):
        kept, points = [], 0
        for sample in data:
            points += len(sample[0])
            if 0 < self.limit_numpoints < points:
                total = sum(len(s[0]) for s in data)
                warnings.warn(f"SparseCollation: kept {len(kept)} of {len(data)} samples "
                              f"({points - len(sample[0])} of {total} points) under "
                              f"limit_numpoints={self.limit_numpoints}")
                break
            kept.append(sample)
        if not kept:  # zip(*[]) once failed to unpack, naming nothing
            raise ValueError(f"SparseCollation: expected a first sample of at most "
                             f"limit_numpoints={self.limit_numpoints} points, got "
                             f"{len(data[0][0]) if data else 0} points"
                             + ("" if data else " (no samples)"))
        return batch_sparse_collate(kept, dtype=self.dtype, device=self.device)

