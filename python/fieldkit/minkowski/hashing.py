"""Row keys of integer coordinate arrays (numpy), the reference's
``ME.utils.ravel_hash_vec`` and ``fnv_hash_vec``: equal rows get equal keys,
so np.unique over the keys deduplicates the rows."""
import numpy as np

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


def _rows(arr, where):
    a = np.asarray(arr)
    if a.ndim != 2:
        raise ValueError(f"{where}: expected a 2-D array (rows of coordinates), got shape "
                         f"{a.shape}")
    return a


def ravel_hash_vec(arr):
    """Each row's index in the row-major grid spanning the rows (column minima
    subtracted, the last column varying fastest): collision-free while that
    grid has under 2^64 cells."""
    a = _rows(arr, "ravel_hash_vec")
    a = (a - a.min(0)).astype(np.uint64)
    radix = a.max(0) + np.uint64(1)
    keys = np.zeros(a.shape[0], dtype=np.uint64)
    for j in range(a.shape[1]):
        keys = keys * radix[j] + a[:, j]
    return keys


def fnv_hash_vec(arr):
    """A 64-bit FNV hash of each row, one step per column (multiply by the FNV
    prime, then xor the value as uint64: negative values wrap), as the
    reference computes it; any range, collisions possible but rare."""
    a = _rows(arr, "fnv_hash_vec").astype(np.uint64)
    keys = np.full(a.shape[0], _FNV_OFFSET, dtype=np.uint64)
    for j in range(a.shape[1]):
        keys = (keys * _FNV_PRIME) ^ a[:, j]
    return keys
