"""Batching samples: per-sample coordinates into one tensor with a batch
column (the reference's ``batched_coordinates`` and ``sparse_collate``), and
collate functions for a torch DataLoader (``batch_sparse_collate``,
``SparseCollation``)."""
import warnings

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
    coordinate tensor with a batch column and concatenated features, all on
    `device` (default: where the features are)."""
    where = "sparse_collate"
    coords, feats = list(coords), [torch.as_tensor(f) for f in feats]
    labels = None if labels is None else [torch.as_tensor(l) for l in labels]
    # Sample b's rows must line up across the lists: torch.cat alone paired
    # one sample's coordinates with another's features without a word.
    for name, items in (("feature", feats), ("label", labels)):
        if items is None:
            continue
        if len(items) != len(coords):
            raise ValueError(f"{where}: expected {len(coords)} {name} tensors (one per "
                             f"coordinate tensor), got {len(items)}")
        for b, (c, x) in enumerate(zip(coords, items)):
            if x.dim() == 0 or len(x) != len(c):
                raise ValueError(f"{where}: expected {len(c)} {name} rows for sample {b} (its "
                                 f"coordinates'), got shape {tuple(x.shape)}")
    bc = batched_coordinates(coords, dtype=dtype, device=device)
    bf = torch.cat(feats, 0).to(device)
    if labels is None:
        return bc, bf
    return bc, bf, torch.cat(labels, 0).to(device)



def batch_sparse_collate(data, dtype=torch.int32, device=None):
    """A DataLoader collate_fn over (coordinates, features, labels) samples:
    sparse_collate of the samples' coordinates, features and labels."""
    coords, feats, labels = zip(*data)
    return sparse_collate(coords, feats, labels, dtype=dtype, device=device)


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

