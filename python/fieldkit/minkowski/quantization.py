"""sparse_quantize: voxelizing points and their features and labels in one
call (the reference's MinkowskiEngine.utils.quantization), and the reduction
of a map's duplicate points by a quantization mode (SparseTensor and
TensorField.sparse)."""
import numpy as np
import torch

from .._core import minkowski as _mk
from .coordinates import SparseTensorQuantizationMode as QMode, core_mode
from .functional import MinkowskiDirectMaxPoolingFunction, lend_streams, resolved, widened


def _quantization_sizes(quantization_size):
    """quantization_size as the C++ quantizer takes it: a list of one value
    (every axis) or one per axis. None means no scaling, as in the reference;
    a sequence, numpy array or torch tensor gives one value per axis."""
    if quantization_size is None:
        return [1.0]
    try:
        return torch.as_tensor(quantization_size, dtype=torch.float64).flatten().tolist()
    except (TypeError, ValueError, RuntimeError):
        raise ValueError("sparse_quantize: expected quantization_size as None, a number or one "
                         f"number per axis, got {quantization_size!r}") from None


def _checked_sizes(quantization_size, dims):
    """The sizes as a list, refused by name unless positive, finite and one
    value or one per axis (a 2-D array was a raw TypeError)."""
    if quantization_size is not None and np.ndim(quantization_size) > 1:
        raise ValueError(f"sparse_quantize: expected quantization_size as a number or one number "
                         f"per axis, got an array of shape {np.shape(quantization_size)}")
    size = _quantization_sizes(quantization_size)
    for s in size:
        if not (np.isfinite(s) and s > 0):
            raise ValueError(f"sparse_quantize: expected a positive finite quantization size, "
                             f"got {s}")
    if dims and len(size) not in (1, dims):
        raise ValueError(f"sparse_quantize: expected a quantization size of 1 or {dims} values, "
                         f"got {len(size)} values")
    return size


def _whole(name, value, lo, hi, span):
    """sparse_quantize's `name` as an int in [lo, hi] (`span` says it):
    2 or 2.0 (a 0-d array or tensor too), never a truncated 1.5, a bool or a
    string."""
    v = value.item() if getattr(value, "ndim", None) == 0 and hasattr(value, "item") else value
    whole = isinstance(v, (int, np.integer)) or (
        isinstance(v, (float, np.floating)) and np.isfinite(v) and v == int(v))
    if not whole or isinstance(v, (bool, np.bool_)) or not lo <= int(v) <= hi:
        raise ValueError(f"sparse_quantize: expected {name} a whole number in {span}, "
                         f"got {value!r}")
    return int(v)


_NARROW = (torch.uint8, torch.int8, torch.int16)


def _widened_integers(t, what, wide):
    """t with a narrow integer dtype (uint8, int8, int16) as `wide`, which the
    C++ quantizer takes; bool and complex values are refused by name."""
    if t.dtype == torch.bool or t.is_complex():
        raise ValueError(f"sparse_quantize: expected real or integer {what}, got {t.dtype}")
    return t.to(wide) if t.dtype in _NARROW else t


def _quantize_device(device):
    """sparse_quantize's device as a torch.device: 'cpu' or 'cuda' (an
    index allowed), refused by name where torch has no CUDA device."""
    try:
        dev = torch.device(device)
    except (TypeError, RuntimeError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise ValueError(f"sparse_quantize: expected device 'cpu' or 'cuda', got {device!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"sparse_quantize: expected device 'cpu' or a CUDA device torch can "
                         f"reach, got {device!r} (torch sees no CUDA device)")
    return dev


def sparse_quantize(coordinates, features=None, labels=None, ignore_label=-100,
                    return_index=False, return_inverse=False, return_maps_only=False,
                    quantization_size=None, device="cpu", *,
                    quantization_mode=QMode.FIRST_OCCURRENCE, seed=0):
    """Voxelizes points: floor(c / quantization_size) (floor(c) when it is
    None), one row per voxel, the voxels in order of first occurrence. The
    positional parameters are the reference's, in its order. By default each
    voxel keeps its first point (the reference's CPU choice, and what a
    SparseTensor keeps); fieldkit's keyword-only quantization_mode picks
    another reduction of the features: RANDOM_SUBSAMPLE keeps a row drawn
    from `seed` (the unique index names it), UNWEIGHTED_AVERAGE,
    UNWEIGHTED_SUM or MAX_POOL reduce every point's. Returns what the
    reference returns: the coordinates, then features and labels when given,
    then the unique index and the inverse mapping when asked (or only those
    two with return_maps_only). numpy inputs give numpy outputs; torch
    outputs are on `device` ('cpu' or 'cuda'), the features where they were
    (differentiable, as the reference's features[unique_map]; torch features
    of numpy points stay torch). The division is the reference's own (numpy's
    or torch's promotion of the points and the size), so each point lands in
    the reference's voxel. Narrow integer
    inputs (uint8 colours, int16 coordinates or labels) are widened for the
    C++ quantizer: features come back in their dtype (a narrow integer sum
    as int32, which would wrap; a mean of integers as float32, never
    truncated), labels too where it holds ignore_label (int64 otherwise)."""
    as_numpy = isinstance(coordinates, np.ndarray)
    dev = _quantize_device(device)
    if return_inverse and not return_index and not return_maps_only:
        raise ValueError("sparse_quantize: expected return_index=True with return_inverse=True "
                         "(the reference's rule), got return_index=False")
    c = _widened_integers(resolved(torch.as_tensor(coordinates)), "coordinates", torch.int32)
    f = None if features is None else resolved(torch.as_tensor(features))
    f_in = f
    if f is not None:
        f = _widened_integers(f, "features", torch.int32)
    lab = None if labels is None else resolved(torch.as_tensor(labels))
    lab_in = lab
    if lab is not None:
        lab = _widened_integers(lab, "labels", torch.int64)
    size = _checked_sizes(quantization_size, c.shape[1] if c.dim() == 2 else 0)
    if quantization_size is not None and c.dim() == 2 and len(c):
        points = resolved(torch.as_tensor(coordinates))
        if points.dtype == torch.bool or points.is_complex():
            raise ValueError(f"sparse_quantize: expected real or integer coordinates, got "
                             f"{points.dtype}")
        floored = _reference_floor(coordinates if as_numpy else points, quantization_size,
                                   as_numpy)
        if floored is not None:
            c = torch.as_tensor(floored)
        size = [1.0]  # divided already
    lend_streams(c, f, lab)
    qc, qf, ql, unique, inverse = _mk.sparse_quantize(
        c, f, size, core_mode(quantization_mode), lab,
        _whole("ignore_label", ignore_label, -2 ** 63, 2 ** 63 - 1, "[-2^63, 2^63)"),
        _whole("seed", seed, 0, 2 ** 64 - 1, "[0, 2^64)"))
    if f is not None:
        if f_in.requires_grad:  # the same rows and reduction, recorded by torch
            qf = _reduce_duplicates(f_in, unique.to(f_in.device), inverse.to(f_in.device),
                                    QMode(quantization_mode))
        qf = qf.to(reduced_dtype(f_in.dtype, QMode(quantization_mode)))
    if lab is not None and lab_in.dtype != lab.dtype and \
            torch.iinfo(lab_in.dtype).min <= ignore_label <= torch.iinfo(lab_in.dtype).max:
        ql = ql.to(lab_in.dtype)
    if not as_numpy:
        qc, unique, inverse = qc.to(dev), unique.to(dev), inverse.to(dev)
        ql = None if ql is None else ql.to(dev)
    if return_maps_only:
        out = [unique, inverse] if return_inverse else [unique]
    else:
        out = [qc]
        if f is not None:
            out.append(qf)
        if lab is not None:
            out.append(ql)
        if return_index:
            out.append(unique)
        if return_inverse:
            out.append(inverse)
    if as_numpy:  # torch features stay torch (the reference's features[unique_map])
        keep = None if isinstance(features, np.ndarray) else qf
        out = [o if o is keep else o.numpy() for o in out]
    return out[0] if len(out) == 1 else tuple(out)


def quantize(coordinates):
    """(unique_map, inverse_map) of integer coordinates (N x D), as the
    reference's utils.quantization.quantize: coordinates[unique_map] are the
    distinct rows in order of first occurrence, and
    unique_map[inverse_map] gives each row's first equal row."""
    return sparse_quantize(coordinates, return_maps_only=True, return_inverse=True)


def quantize_label(coordinates, labels, ignore_label):
    """(unique_map, labels per voxel) of integer coordinates (N x D) and
    their labels, as the reference's utils.quantization.quantize_label: the
    first row of each distinct coordinate, and its label, or ignore_label
    where the rows of one coordinate carry different labels."""
    _, voxel_labels, unique = sparse_quantize(coordinates, labels=labels,
                                              ignore_label=ignore_label, return_index=True)
    return unique, voxel_labels


def _reference_floor(coordinates, quantization_size, as_numpy):
    """floor(coordinates / quantization_size) computed as the reference
    computes it, so that every point lands in its voxel: numpy points divided
    by np.array(sizes) for a size per axis, by the scalar otherwise (numpy's
    promotion: f32 points by a Python float stay f32, int16 points by an f32
    array are f32, f16 by f16 f16); torch points by torch.Tensor(sizes) (f32
    values) or by the scalar (torch's promotion: integers divide in f32, f16
    and bf16 in their own). A result in the caller's library, floored; None
    for a size of 1, which the reference does not divide by."""
    q = quantization_size
    if _per_axis(q):
        if as_numpy:
            sizes = q.detach().cpu().numpy() if isinstance(q, torch.Tensor) else \
                np.array([s for s in q])
            return np.floor(coordinates / sizes)
        sizes = torch.tensor([float(s) for s in q], dtype=torch.float32,
                             device=coordinates.device)
        return torch.floor(coordinates / sizes)
    if float(q) == 1:  # the reference skips the division
        return None
    if as_numpy:  # the scalar as given: numpy's promotion reads its type
        return np.floor(coordinates / q)
    scaled = coordinates / (q.item() if hasattr(q, "item") else q)
    # torch has no CPU floor for f16; in f32 it is the same (f32 holds every f16)
    return torch.floor(scaled.float() if scaled.dtype == torch.float16 else scaled)


def _per_axis(quantization_size):
    """Whether the size was given one per axis (a sequence, array or tensor
    of one or more values), as the reference tells the forms apart."""
    if quantization_size is None or np.isscalar(quantization_size):
        return False
    return np.ndim(quantization_size) > 0


def reduced_dtype(dtype, mode):
    """The dtype of features reduced per voxel by `mode`, whether or not any
    voxel held two rows: a mean of integers is float32 (int32 200 and 201
    truncated to 200), a sum of uint8/int8/int16 int32 (uint8 200 + 200
    wrapped to 144); otherwise the features' own."""
    integral = not (dtype.is_floating_point or dtype.is_complex)
    if integral and mode == QMode.UNWEIGHTED_AVERAGE:
        return torch.float32
    if dtype in _NARROW and mode == QMode.UNWEIGHTED_SUM:
        return torch.int32
    return dtype


def _reduce_duplicates(features, unique, inverse, mode):
    """The features of a map's rows from those of the input rows (torch ops,
    so torch differentiates them). unique: the first input row of each map
    row; inverse: the map row of each input row."""
    m = unique.numel()
    # RANDOM_SUBSAMPLE keeps the first occurrence too: the tensor records
    # `unique` as its unique_index, and the reference's contract is that
    # labels[x.unique_index] lines up with x.F (its CPU path keeps the first).
    if mode in (QMode.RANDOM_SUBSAMPLE, QMode.FIRST_OCCURRENCE, QMode.NO_QUANTIZATION):
        return features[unique]
    c = features.shape[1]
    if mode == QMode.MAX_POOL:  # the reference's direct max pooling (one arg-max row)
        rows = torch.arange(features.shape[0], device=features.device)
        return MinkowskiDirectMaxPoolingFunction.apply(rows, inverse, features, m)
    floating = features.is_floating_point() or features.is_complex()
    # Integers add in int64 (uint8 255 + 7 wrapped to 6).
    wide = widened(features) if floating else features.to(torch.int64)
    total = wide.new_zeros(m, c).index_add(0, inverse, wide)
    if mode == QMode.UNWEIGHTED_SUM:
        return total.to(reduced_dtype(features.dtype, mode))
    counts = torch.bincount(inverse, minlength=m).to(total.dtype)
    return (total / counts[:, None]).to(reduced_dtype(features.dtype, mode))


def _reduce_onto(features, rows, m, mode):
    """The features of m map rows from the points' (rows: each point's map
    row), reduced by the mode; rows no point lands on get zeros."""
    present, compact = torch.unique(rows, return_inverse=True)
    # A stable sort puts each map row's points in input order: the first
    # point of a row opens its run.
    order = torch.sort(compact, stable=True).indices
    counts = torch.bincount(compact, minlength=len(present))
    first = order[torch.cumsum(counts, 0) - counts]
    reduced = _reduce_duplicates(features, first, compact, mode)
    return reduced.new_zeros(m, features.shape[1]).index_copy(0, present, reduced)
