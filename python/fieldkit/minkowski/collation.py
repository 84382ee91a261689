"""Batching samples for a torch DataLoader (the reference's
``ME.utils.batch_sparse_collate`` and ``SparseCollation``)."""
import warnings

import torch

from .coordinates import sparse_collate


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

