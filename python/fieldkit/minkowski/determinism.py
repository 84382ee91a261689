"""The reference's determinism mode (``set_deterministic``): the
convolutions take their input in coordinate order, so a point set gives the
same output rows whatever order its rows came in."""
import contextlib

import torch

from .._core import minkowski as _mk
from .sparse_tensor import SparseTensor

is_deterministic, set_deterministic = _mk.is_deterministic, _mk.set_deterministic

_SORTED_TAG = "@sorted"


def _in_order(c):
    """Whether the rows of c (unique) ascend lexicographically."""
    d = (c[1:].long() - c[:-1].long())
    first = (d != 0).to(torch.uint8).argmax(1, keepdim=True)
    return bool((d.gather(1, first) > 0).all())


def lexicographic_order(c):
    """The permutation sorting the rows of c lexicographically, column 0 (the
    batch) most significant: stable sorts from the last column to the first
    (no packed key, so any D and any coordinate range)."""
    perm = torch.arange(c.shape[0], device=c.device)
    for col in reversed(range(c.shape[1])):
        perm = perm[torch.sort(c[perm, col], stable=True).indices]
    return perm


def sorted_coordinates(st):
    """``st`` with its rows in lexicographic coordinate order (batch first),
    the features permuted alike (differentiable). A tensor already in order
    (every map a stride makes is) is returned as it is; otherwise the sorted
    rows are a map of st's own manager, tagged "<tag>@sorted" and made once
    per map, so every layer sorting the same map shares the result and its
    kernel maps. (The reference builds a new SparseTensor from coordinates,
    so in its default mode a new manager per call: see python/README.md.)"""
    if len(st) <= 1:
        return st
    c = st.C
    if _in_order(c):
        return st
    perm = lexicographic_order(c)
    mgr, key = st.coordinate_manager, st.coordinate_map_key
    sorted_key = _mk.MapKey(list(key.tensor_stride), key.tag + _SORTED_TAG)
    # One twin per map, however many threads sort it at once.
    with getattr(mgr, "_keys_lock", contextlib.nullcontext()):
        if not mgr.has(sorted_key):
            rows = c[perm].contiguous()
            sorted_key = mgr.insert(rows, list(key.tensor_stride), sorted_key.tag)[0]
            twins = getattr(mgr, "_twin_rows", None)
            if twins is not None:  # map_rows._aligned_rows joins them without a search
                inverse = torch.empty_like(perm)
                inverse[perm] = torch.arange(len(perm), device=perm.device)
                twins[(sorted_key, key)] = perm.cpu()
                twins[(key, sorted_key)] = inverse.cpu()
    return SparseTensor(st.F[perm], coordinate_map_key=sorted_key, coordinate_manager=mgr)
