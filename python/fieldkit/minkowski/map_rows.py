"""How the rows of two maps of one manager line up: a point's row in a map,
and the joins cat, sum and the arithmetic make between tensors on one point
set under two keys (global pooling's origin maps at several strides, a map
and its deterministic-mode "@sorted" twin)."""
import torch


def _rows_in_map(map_coordinates, points):
    """Each point's row of a map (both N x (1+D) int32; the map's rows are
    distinct), -1 where the map lacks the point."""
    m = len(map_coordinates)
    both = torch.cat([map_coordinates.cpu().long(), points.cpu().long()], 0)
    if not len(both):
        return torch.zeros(0, dtype=torch.long)
    _, ids = torch.unique(both, dim=0, return_inverse=True)
    row_of_id = torch.full((int(ids.max()) + 1,), -1, dtype=torch.long)
    row_of_id[ids[:m]] = torch.arange(m)
    return row_of_id[ids[m:]]


def _aligned_rows(manager, a, b):
    """How the rows of map b line up with map a's when the keys of one
    manager name one point set: True when in the same order (equal keys, or
    two of global pooling's origin maps, of any strides and tags, with the
    same rows: the reference keeps every global pool on its one stride-0
    origin map); an
    index (b's row for each of a's rows) for a map and its "@sorted" twin of
    deterministic mode, so conv(x) still cats with x; None for two sets."""
    if a == b:
        return True
    if a.tag.endswith("@origin") and b.tag.endswith("@origin"):  # of any stride or twin
        ca, cb = manager.coordinates(a), manager.coordinates(b)
        return True if ca.shape == cb.shape and torch.equal(ca, cb) else None
    for tag, twin in ((a.tag, b.tag), (b.tag, a.tag)):
        if tag == twin + "@sorted" and a.tensor_stride == b.tensor_stride:
            # sorted_coordinates kept the permutation; else found once and kept.
            cache = _twin_rows(manager)
            rows = cache.get((a, b))
            if rows is None:
                rows = _rows_in_map(manager.coordinates(b), manager.coordinates(a))
                if manager.size(a) != manager.size(b) or not bool((rows >= 0).all()):
                    return None
                cache[(a, b)] = rows
            return rows
    return None


def _twin_rows(manager):
    """The manager's {(key a, key b): b's row of each of a's rows} for maps
    and their "@sorted" twins: a Python manager keeps it (clear() forgets it),
    a bare C++ one gets a throwaway dict."""
    try:
        return manager._twin_rows
    except AttributeError:
        return {}


def _aligned_features(x, other):
    """other's features on the rows of x's map (see _aligned_rows), None when
    the two maps are two point sets."""
    rows = _aligned_rows(x._manager, x._key, other._key)
    if rows is None:
        return None
    return other._F if rows is True else other._F[rows.to(other._F.device)]


def _features_on(x, other, where):
    """_aligned_features, or a ValueError naming both maps."""
    f = _aligned_features(x, other)
    if f is None:
        raise ValueError(f"{where}: expected tensors on the same coordinate map of one manager, "
                         f"got {x._key} and {other._key}")
    return f
