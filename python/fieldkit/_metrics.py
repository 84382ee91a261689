"""nefi's metrics on arrays of your own (the reference's ``nefi.metrics``):
the definitions behind every run's metrics.json (mse, psnr, ssim, iou, ...),
so a score computed here is the score a run reports; rmse, mae and dice are
the usual definitions. Inputs are real arrays of anything numpy reads,
torch tensors too (on any device, requiring grad or not); complex ones are
refused (score np.abs(z), or the parts, yourself).

- ``mse``, ``rmse``, ``mae`` (optionally weighted by a mask), ``psnr``
  (10 log10(range^2 / mse), the range the ground truth's max - min (1 if
  that is 0) unless ``data_range`` is given; at most 99 dB, an exact
  match's score), ``relative_error`` (||x - gt|| / ||gt||, or
  ||x|| where gt is all zero);
- ``ssim`` (7-tap Gaussian window, sigma 1.5, 'valid' positions; 1-D, 2-D, and
  3-D as the mean over slices along the last axis), ``masked_ssim``;
- ``iou`` (of x > tau and gt > tau, tau = fraction * max(gt)), ``iou_above``
  (at a given tau), ``iou_below`` (of x < tau and gt < tau), ``dice``;
- localisation (2-D maps): ``peak_positions``, ``hungarian_f1`` (peaks
  matched one to one to the true sources within ``radius`` pixels),
  ``gmsd``, ``sliced_wasserstein`` (alias ``swd``);
- ``edge_f1`` (3-D volumes: edges where the gradient magnitude exceeds
  threshold * max |grad gt|, matched within ``dilate`` cells)."""
import numpy as np

from ._core import Error
from ._core import nefi as _nefi
from ._operators import _integer
from ._time_stepper import _values

_m = _nefi.metrics

__all__ = ["mse", "rmse", "mae", "psnr", "relative_error", "ssim", "masked_ssim", "iou",
           "iou_above", "iou_below", "dice", "peak_positions", "hungarian_f1", "gmsd",
           "sliced_wasserstein", "swd", "edge_f1"]


def _arr(where, x):
    """x as a C-contiguous float64 array of its own shape (a 0-d one stays
    0-d: ascontiguousarray made it (1,)); a torch tensor on any device too;
    complex values refused (scoring the real parts alone said a conjugate
    was exact)."""
    a = _values(x, where)
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _pair(where, x, gt):
    a, b = _arr(where, x), _arr(where, gt)
    if a.ndim == 0 or b.ndim == 0:
        raise Error(f"{where}: expected arrays of at least one axis, got shapes {a.shape} and "
                    f"{b.shape}")
    if a.shape != b.shape or a.size == 0:
        raise Error(f"{where}: expected two non-empty arrays of one shape, got {a.shape} and "
                    f"{b.shape}")
    return a, b


def _weights(where, mask, shape):
    if mask is None:
        return None
    w = _arr(where, mask)
    if w.shape != shape or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
        raise Error(f"{where}: expected a mask of the arrays' shape {shape} with finite weights "
                    f">= 0 and some weight, got shape {w.shape}")
    return w


def _number(where, name, value, low=None):
    # A 0-d array or tensor is its number (gt.max() - gt.min() of a tensor).
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) \
            or not np.isfinite(value) or (low is not None and value <= low):
        want = "a finite number" + ("" if low is None else f" > {low}")
        raise Error(f"{where}: expected {name} {want}, got {value!r}")
    return float(value)


def mse(x, gt, mask=None):
    a, b = _pair("mse", x, gt)
    w = _weights("mse", mask, a.shape)
    if w is None:
        return _m.mse(a, b)
    return float(np.sum(w * (a - b) ** 2) / np.sum(w))


def rmse(x, gt, mask=None):
    return float(np.sqrt(mse(x, gt, mask)))


def mae(x, gt, mask=None):
    a, b = _pair("mae", x, gt)
    w = _weights("mae", mask, a.shape)
    w = np.ones_like(a) if w is None else w
    return float(np.sum(w * np.abs(a - b)) / np.sum(w))


def psnr(x, gt, data_range=None):
    a, b = _pair("psnr", x, gt)
    if data_range is not None:
        data_range = _number("psnr", "data_range", data_range, 0)
    return _m.psnr(a, b, data_range)


def relative_error(x, gt):
    return _m.relative_error(*_pair("relative_error", x, gt))


def ssim(x, gt, data_range=None):
    a, b = _pair("ssim", x, gt)
    if data_range is not None:
        data_range = _number("ssim", "data_range", data_range, 0)
    return _m.ssim(a, b, data_range)


def masked_ssim(x, gt, mask, data_range=None):
    a, b = _pair("masked_ssim", x, gt)
    if data_range is not None:
        data_range = _number("masked_ssim", "data_range", data_range, 0)
    return _m.masked_ssim(a, b, _arr("masked_ssim", mask), data_range)


def iou(x, gt, fraction=0.5):
    a, b = _pair("iou", x, gt)
    return _m.iou(a, b, _number("iou", "fraction", fraction))


def iou_above(x, gt, tau):
    a, b = _pair("iou_above", x, gt)
    return _m.iou_above(a, b, _number("iou_above", "tau", tau))


def iou_below(x, gt, tau=0.03):
    a, b = _pair("iou_below", x, gt)
    return _m.iou_below(a, b, _number("iou_below", "tau", tau))


def dice(x, gt, fraction=0.5):
    """2 |A and B| / (|A| + |B|) of the masks x > tau, gt > tau, tau =
    fraction * max(gt) (1 when both are empty): iou's masks."""
    a, b = _pair("dice", x, gt)
    tau = _number("dice", "fraction", fraction) * float(b.max())
    pa, pb = a > tau, b > tau
    both = int(pa.sum() + pb.sum())
    return 1.0 if both == 0 else 2.0 * float(np.sum(pa & pb)) / both


def peak_positions(x, threshold=0.05):
    """(row, col) of the local maxima of a 2-D map above threshold * max,
    strongest first."""
    return _m.peak_positions(_arr("peak_positions", x),
                             _number("peak_positions", "threshold", threshold))


def _positions(where, p):
    p = np.asarray(p, dtype=np.float64)
    if p.size == 0:
        return []
    if p.ndim != 2 or p.shape[1] != 2 or not np.all(p == np.round(p)):
        raise Error(f"{where}: expected the true sources as integer (row, col) pairs, got an "
                    f"array of shape {p.shape}")
    return [(int(r), int(c)) for r, c in p]


def hungarian_f1(x, truth, radius=2.0, threshold=0.05):
    """The peaks of the 2-D map x (peak_positions at `threshold`) matched one
    to one to the true sources by minimum total distance; a pair within
    `radius` pixels is a hit. `truth`: the sources' (row, col) pairs (for a
    map of them, its peak_positions). Returns {f1, true_positives, n_pred,
    n_true, mean_distance}; f1 = 2 TP / (n_pred + n_true), 1 when both are
    empty; mean_distance (of the hits) is nan without a hit."""
    radius = _number("hungarian_f1", "radius", radius)
    return _m.hungarian_f1(peak_positions(x, threshold), _positions("hungarian_f1", truth),
                           radius)


def gmsd(x, ref, c=0.0026):
    a, b = _pair("gmsd", x, ref)
    return _m.gmsd(a, b, _number("gmsd", "c", c, 0))


def sliced_wasserstein(x, ref, n_proj=128):
    a, b = _pair("sliced_wasserstein", x, ref)
    n = _integer("sliced_wasserstein", "n_proj", n_proj)
    if n < 1:
        raise Error(f"sliced_wasserstein: expected n_proj a whole number >= 1, got {n_proj!r}")
    return _m.sliced_wasserstein(a, b, n)


swd = sliced_wasserstein


def edge_f1(x, gt, threshold=0.5, dilate=1):
    a, b = _pair("edge_f1", x, gt)
    d = _integer("edge_f1", "dilate", dilate)
    if d < 0:
        raise Error(f"edge_f1: expected dilate a whole number >= 0, got {dilate!r}")
    return _m.edge_f1(a, b, _number("edge_f1", "threshold", threshold), d)
