"""Bring your own problem: nefi.from_forward.

A forward model written in Python (numpy, torch, or a matrix), one
measurement and a prior in a few words become a solvable problem; every
choice a tuned instance makes by hand (network size, Fourier octaves, the
field's scale, noise level, loss weights, budget, learning rate, stopping)
is decided from the problem's size and data and listed with its reason in
``problem.decisions``.

The model's gradient comes from, in this order: a matrix (its transpose), an
``adjoint`` for a linear model, a ``vjp`` for a nonlinear one, else torch
autograd when ``forward`` is written with torch operations. Before anything
is solved the model is dry-run: wrong shapes, non-finite values, an adjoint
that is not the model's adjoint, or a vjp that disagrees with the model's
finite differences raise fieldkit.Error saying what to fix.
"""
import reprlib

import numpy as np

from ._core import Error
from ._core import nefi as _nefi
from . import _host, _operators
from ._forward_model import _Model, _shaped, _stack_complex
from ._forward_problem import _INT_MAX, _SEED_MAX, ForwardProblem, _real_values, _whole

__all__ = ["from_forward", "ForwardProblem", "quick_report", "lr_range_test", "estimate_noise"]


def estimate_noise(measurement, mask=None):
    """The noise sigma of a real measurement from the data alone, the one
    from_forward's noise="auto" takes: a median-absolute-deviation estimate
    of white noise over a signal smooth on the scale of a few cells (fourth
    differences in 1-D; Immerkaer's Laplacian mask over the last two axes
    in 2-D and up). Cells where ``mask`` is 0 are left out (they may hold
    NaN). Structure at the cell scale biases it up. Sampled or k-space data
    have their own: ``operators.sampling(m).estimate_noise(y)``."""
    where = "estimate_noise"
    y = _host.host_values(measurement)
    if y.dtype.kind not in "iuf":
        raise Error(f"{where}: expected real measured data, got dtype {y.dtype}")
    y = _host.c_contiguous(y.astype(np.float64, copy=False))
    if y.ndim == 0:  # the engine's message would name a 0-d array's shape [1]
        raise Error(f"{where}: expected measured data of at least one axis (5 cells along the "
                    f"last, or 3 x 3 in the last two), got shape ()")
    w = None
    if mask is not None:
        w = _real_values(where, "mask", mask)
        if w.shape != y.shape:
            raise Error(f"{where}: expected a mask of the measurement's shape {y.shape}, got "
                        f"{w.shape}")
        if not np.all((w >= 0) & (w <= 1)):
            raise Error(f"{where}: expected mask weights in [0, 1], got "
                        f"{w[~((w >= 0) & (w <= 1))].flat[0]!r}")
    observed = np.ones(y.shape, bool) if w is None else w > 0
    if not np.isfinite(y[observed]).all():
        raise Error(f"{where}: expected finite data at observed cells, got "
                    f"{int((~np.isfinite(y[observed])).sum())} non-finite value(s)")
    return _nefi.estimate_noise(np.where(observed, y, 0.0), w)


def lr_range_test(problem, lrs=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1), steps=20, seed=0,
                  device="cpu"):
    """Short solves of a ForwardProblem at each learning rate (the
    reference's lr_range_test): returns (best lr, [(lr, final data loss)])
    with the best the lowest finite data loss after `steps` steps (a
    diverged solve counts as inf). ``device``: where they train (as
    ``solve``'s)."""
    if not isinstance(problem, ForwardProblem):
        raise Error(f"lr_range_test: expected a from_forward ForwardProblem (an instance's "
                    f"learning rate: nefi.autotune), got {type(problem).__name__} "
                    f"{reprlib.repr(problem)}")
    if isinstance(lrs, (str, bytes)) or not hasattr(lrs, "__iter__") or \
            getattr(lrs, "ndim", None) == 0:
        raise Error(f"lr_range_test: expected lrs a sequence of positive learning rates (one "
                    f"rate: [lr]), got {type(lrs).__name__} {reprlib.repr(lrs)}")
    given = list(lrs)
    if not given:
        raise Error("lr_range_test: expected at least one learning rate in lrs, got none")
    lrs = []
    for lr in given:  # all of them checked before the first solve
        v = lr.item() if getattr(lr, "ndim", None) == 0 else lr  # a numpy or torch scalar
        if isinstance(v, bool) or not isinstance(v, (int, float)) or \
                not (np.isfinite(v) and v > 0):
            raise Error(f"lr_range_test: expected lrs a sequence of positive learning rates, "
                        f"got {lr!r} in {reprlib.repr(given)}")
        lrs.append(float(v))
    rows = []
    model = problem._model
    for lr in lrs:
        try:
            r = problem.solve(seed=seed, steps=steps, lr=lr, device=device)
            loss = float(r["stages"][-1]["final_data_loss"])
        except Error as e:  # the NaN guard gave up: this lr diverges; anything else is raised
            if "non-finite" not in str(e):
                raise
            loss = float("inf")
        rows.append((float(lr), loss if np.isfinite(loss) else float("inf")))
    if model.params:  # a probe's fit is no answer: back to the values given
        model.load_parameters(model.start)
    best = min(rows, key=lambda t: t[1])
    if not np.isfinite(best[1]):
        raise Error(f"lr_range_test: expected a learning rate among {list(lrs)} that trains, "
                    "got none (every solve diverged)")
    return best[0], rows


def quick_report(result, problem=None, gt=None):
    """The markdown summary a ForwardProblem.solve() result carries:
    parameters, data RMSE, chi = RMSE / sigma with a verdict (at the noise
    floor, slightly above, underfit, below the noise), stage stops, timings,
    ground truth metrics, decisions. The reference's (result, problem, gt)
    form: with ``gt`` (an array, or a dict {field: array}) and the problem
    that made the result, the report gains the fields' PSNR and relative
    error against it."""
    if not isinstance(result, dict) or "report" not in result:
        raise Error("quick_report: expected a ForwardProblem.solve() result (it carries its "
                    "report; an instance's result has its metrics and data_fit instead), got "
                    + ("a dict without 'report'" if isinstance(result, dict)
                       else type(result).__name__))
    if gt is None:
        return result["report"]
    if not isinstance(problem, ForwardProblem):
        raise Error(f"quick_report: expected the from_forward ForwardProblem that made the "
                    f"result beside gt, got {type(problem).__name__}")
    truths = dict(gt) if isinstance(gt, dict) else {problem._model.names[0]: gt}
    truths = {str(k): _real_values("quick_report", "ground truth", v) for k, v in truths.items()}
    fields = {str(k): np.ascontiguousarray(v, dtype=np.float64)
              for k, v in result.get("fields", {}).items()}
    lines = problem._core.ground_truth_lines(fields, truths)
    report = result["report"]
    at = report.find("\n| decision |")
    return report + lines if at < 0 else report[:at] + lines + report[at:]


def from_forward(forward, measurement, shape=None, *, adjoint=None, vjp=None, mask=None,
                 noise="auto", prior="unconstrained", extent=None, representation="neural",
                 budget="default", lr=None, homogeneity=None, hidden=None, depth=None,
                 n_octaves=None, discrepancy=True, discrepancy_tau=1.0, seed=0, check=True,
                 name="forward", multiscale=False, rank=None, shapes=None, harmonics=None,
                 vertices=None, layers=None, layer_axis=None, modes=None, smoothness=None,
                 support=None, trainable=False):
    """A solvable problem from a forward model and one measurement.

    forward: a built-in operator (``nefi.operators``: sampling,
      fourier_sampling, downsample, phase_retrieval, axis_integral,
      beer_lambert, gaussian_blur, radon, advection_diffusion, stack; solved
      with no Python call per step), a ``nefi.TimeStepper`` (a time loop
      written with torch, its gradient replayed in blocks), a matrix (2-D
      array: y = A x.ravel(), its rows the measurement's cells in C order
      when the measurement has several axes),
      a callable x -> y on numpy arrays with ``adjoint`` (g -> A^T g, a
      linear model; for complex data A^H g, of which the real part is used)
      or ``vjp`` ((x, g) -> g^T dF/dx),
      or a callable written with torch operations (autograd gives the
      gradient; a torch.nn.Module is frozen, as the reference's, unless
      ``trainable=True``: then its parameters that require grad are fitted
      with the field, left in the module, and returned as
      result["operator_parameters"]). Complex outputs are fitted as real and
      imaginary parts.
    measurement: the data (any shape the model returns; complex allowed).
    shape: the field's grid (1-3 axes; default: the matrix's columns, else
      the measurement's shape).
    mask: per-cell weights of the data in [0, 1] (0: unobserved).
    noise: "auto" (estimated from the data), a sigma, or 0 (noise-free).
    prior: e.g. "nonnegative + smooth", "bounded(0, 1) + tv(0.5)", "binary",
      "conserved(1) + symmetric(0)" (see nefi/byop/prior.h: unconstrained |
      nonnegative | positive | bounded(lo, hi) | binary | two_phase(lo, hi) |
      phases(v1, ..., vK);
      tv(s) | piecewise_constant(s), smooth(s), sparse(s), increasing(axis,
      s) | decreasing(axis, s); zero_mean, conserved(M), symmetric(axes),
      periodic(axes), known_support, scale(v); and terms added by
      register_prior); or a dict {field name: prior} for a model of several fields on one
      grid: forward then takes a dict {name: array} (torch tensors with
      autograd), vjp returns a dict {name: gradient}, and the result's
      reconstruction is a dict.
    budget: quick | default | thorough | a step count. representation: neural
      (Fourier features + MLP) | hash (a multiresolution hash grid + a small
      MLP) | grid (one value per cell) | lowrank (a rank-`rank` CP sum over
      the axes, default 8) | blobs | ellipses | stars (`shapes` gaussian blobs,
      soft-edged ellipses, or star-shaped regions, each with its own
      amplitude, centre and rotated axes, on a background, default 4: a
      scene of a few compact objects; about as many shapes as objects:
      spare shapes can stall the fit, see docs/performance.md). A star is
      an ellipse whose radius along each direction is scaled by exp of its
      angular harmonics of degrees 3..`harmonics` (default 6, at most 8;
      2-D and 3-D fields; degrees 1 and 2 are its centre and axes), opened
      one degree at a time while the fit anneals | polygons (2-D: an
      ellipse turned, over the first half of each stage, into a polygon of
      `vertices` corners, default 6, at most 16, at fixed angles about its
      centre, each corner at its own distance: straight sides and corners
      a star's harmonics round off) | layers (`layers` strata,
      default 3, stacked along axis `layer_axis`, default 0, each of one
      value, meeting at interfaces whose depth varies across the other axes
      as a cosine series of degree `harmonics`, default 6, 0 for flat
      layers; they start flat, evenly spaced and without jumps, the same
      for every seed, and bend and sharpen while the fit anneals) |
      layers+blobs | layers+ellipses (the shapes over those layers instead
      of a constant background: inclusions in strata; `harmonics` is the
      interfaces' degree) | spectral (a cosine series, `modes` cosines per
      axis, default one per cell, fitted by L-BFGS preconditioned by the
      gains (1 + k^2)^(-smoothness/2), k in half periods across the
      longest axis, smoothness default 2: the coarse modes fit first, and
      the Morozov stop, watching from the first step, ends the fit at the
      noise floor before the fine ones take up the noise: a smooth field
      without a penalty; with fewer modes than cells, a band-limited
      field; lr is where each L-BFGS line search starts, 1). lr, hidden, depth,
      n_octaves override the automatic choices.
    homogeneity: p with F(c x) = c^p F(x) when known (1 for adjoint/matrix);
        1 declares the model linear (additive too: the head's scale comes from
        a CGLS fit through it), so a 1-homogeneous model that is not additive,
        |A x| say, should leave it unset.
    check: dry-run the model first (shapes, finiteness, adjoint/vjp), at
      random fields within the values each field's prior allows.
    support: the field's known support, an array of its shape in [0, 1] (1
      inside; the field is 0 outside, or the low bound of a range that
      excludes 0), or a dict {field name: support}.
    """
    y = _host.host_values(measurement)  # as estimate_noise reads it
    # As the CLI reads a .npy: numbers, not bools or text (True read as 1).
    if y.dtype.kind not in "iufc":
        raise Error(f"from_forward: expected real or complex measured data, got dtype {y.dtype}")
    complex_data = np.iscomplexobj(y)
    native = isinstance(forward, _operators.Operator)
    if native and shape is None and forward.shape is None:
        raise Error(f"from_forward: expected shape= (the field's grid) for the built-in "
                    f"{forward.kind}, got none (it does not imply one)")
    if shape is not None:
        shape = _operators._shape("from_forward", shape)
    if native and shape is not None and forward.shape is not None and shape != forward.shape:
        raise Error(f"from_forward: expected the grid {forward.shape} the built-in {forward.kind} "
                    f"was made for, got shape {tuple(np.atleast_1d(shape))}")
    if shape is None and native:
        shape = forward.shape
    elif shape is None:
        matrix = hasattr(forward, "shape") and not callable(forward)
        if matrix and np.ndim(forward) != 2:  # its columns are the field's cells
            raise Error(f"from_forward: expected a matrix (2-D) or a callable as forward, got an "
                        f"array of shape {np.shape(forward)}")
        shape = (np.asarray(forward).shape[1],) if matrix else y.shape
    shape = tuple(int(s) for s in np.atleast_1d(shape))
    seed = _whole("from_forward", "seed", seed, 0, _SEED_MAX)
    # A built-in's output up to axes of length 1, as a Python model's is
    # taken (a measurement of (1, m) for an output of (m,)); a mask given in
    # the measurement's layout follows it.
    given_layout = None
    if native:
        out = tuple(forward.output_shape(shape))
        if y.shape != out and [n for n in y.shape if n != 1] == [n for n in out if n != 1]:
            given_layout, y = y.shape, y.reshape(out)
    if isinstance(prior, dict):
        if not prior:
            raise Error("from_forward: expected at least one field in the prior dict, got none")
        names, priors = [str(k) for k in prior], [str(v) for v in prior.values()]
    else:
        names, priors = ["x"], [str(prior)]
    if representation != "neural" and n_octaves is not None:
        raise Error(f"from_forward: expected n_octaves only with representation='neural' (the "
                    f"Fourier features), got it with {representation!r}")
    over_layers = ("layers+blobs", "layers+ellipses")
    for option, value, owners in (("rank", rank, ("lowrank",)),
                                  ("shapes", shapes,
                                   ("blobs", "ellipses", "stars", "polygons") + over_layers),
                                  ("harmonics", harmonics, ("stars", "layers") + over_layers),
                                  ("vertices", vertices, ("polygons",)),
                                  ("layers", layers, ("layers",) + over_layers),
                                  ("layer_axis", layer_axis, ("layers",) + over_layers),
                                  ("modes", modes, ("spectral",))):
        if value is not None and representation not in owners:
            raise Error(f"from_forward: expected {option} only with representation "
                        f"{' or '.join(repr(o) for o in owners)}, got it with "
                        f"{representation!r}")
        if value is not None and (isinstance(value, bool) or int(value) != value):
            raise Error(f"from_forward: expected an integer {option}, got {value!r}")
    if smoothness is not None and representation != "spectral":
        raise Error(f"from_forward: expected smoothness only with representation 'spectral', "
                    f"got it with {representation!r}")
    fixed = ("grid", "lowrank", "blobs", "ellipses", "stars", "polygons", "layers",
             "spectral") + over_layers
    if representation in fixed and (
            hidden is not None or depth is not None):
        raise Error("from_forward: expected hidden/depth only with a network (neural or hash), "
                    f"got them with representation={representation!r}")
    if isinstance(homogeneity, np.ndarray) and homogeneity.ndim == 0:
        homogeneity = homogeneity.item()
    if homogeneity is not None and (isinstance(homogeneity, (bool, np.bool_)) or not (
            isinstance(homogeneity, (int, float, np.number)) and np.isfinite(homogeneity))):
        raise Error(f"from_forward: expected homogeneity a finite number (or none), got "
                    f"{homogeneity!r}")
    if homogeneity is not None and homogeneity != 1 and not native and (
            adjoint is not None or hasattr(forward, "shape")):
        raise Error(f"from_forward: expected homogeneity 1 (or none) for a linear model (a "
                    f"matrix or an adjoint), got {homogeneity}")
    # The values each field's prior gives it (a bad prior is refused here, by
    # the parser auto_problem uses): the model is probed and dry-run inside.
    values = [_nefi.prior_values(p, "" if names == ["x"] else n) for n, p in zip(names, priors)]
    if not isinstance(trainable, (bool, np.bool_)):
        raise Error(f"from_forward: expected trainable True or False, got {trainable!r}")
    model = _Model(forward, shape, names, adjoint, vjp, homogeneity, values, bool(trainable))
    model.take_data_shape(y.shape)
    if model.complex_out != complex_data:
        raise Error(f"from_forward: expected {'complex' if model.complex_out else 'real'} "
                    f"measurements (the model's output is), got "
                    f"{'complex' if complex_data else 'real'} ones")
    data = _stack_complex(y)
    if check:
        model.check(data.shape, np.random.default_rng(seed))
    w = None
    if mask is not None:
        w = _host.host_values(mask)
        if np.iscomplexobj(w):  # numpy would keep the real part
            raise Error("from_forward: expected real mask weights in [0, 1], got complex ones")
        w = w.astype(np.float64, copy=False)
        if given_layout is not None and w.shape == given_layout:
            w = w.reshape(y.shape)
        if w.shape != y.shape:
            raise Error(f"from_forward: expected a mask of the measurement's shape {y.shape}, "
                        f"got {w.shape}")
        if not np.all((w >= 0) & (w <= 1)):  # NaN fails both
            bad = w[~((w >= 0) & (w <= 1))].flat[0]
            raise Error(f"from_forward: expected mask weights in [0, 1], got {bad!r}")
        w = np.stack([w, w]) if complex_data else w
    if isinstance(noise, str):
        if noise != "auto":
            raise Error(f"from_forward: expected noise 'auto' or a sigma >= 0, got {noise!r}")
        sigma = None
    else:
        # A real number: Python's, numpy's or a 0-d array or tensor (a
        # residual's .std()); not a bool, None or a complex value.
        a = _host.host_values(noise)
        if a.ndim != 0 or a.dtype.kind not in "iuf":
            raise Error(f"from_forward: expected noise 'auto' or a sigma >= 0 (a real number), "
                        f"got {noise!r}")
        sigma = float(a)
    # The model's output shaped as the data, whatever shape it returned.
    data_shape = data.shape
    supports = {}
    if support is not None:
        if not isinstance(support, dict) and len(names) > 1:
            raise Error(f"from_forward: expected a dict {{field name: support}} for a model of "
                        f"several fields ({', '.join(names)}), got one array")
        given = support if isinstance(support, dict) else {names[0]: support}
        for field, m in given.items():
            if field not in names:
                raise Error(f"from_forward: expected a support for a field of the problem "
                            f"({', '.join(names)}), got one for {field!r}")
            m = _host.host_values(m)
            if np.iscomplexobj(m):  # numpy would keep the real part
                raise Error(f"from_forward: expected a real support for {field!r}, got a "
                            f"complex one")
            m = m.astype(np.float64, copy=False)
            if m.shape != shape:
                raise Error(f"from_forward: expected a support of the field's shape {shape}, "
                            f"got {m.shape}")
            supports[field] = np.ascontiguousarray(m)
    core = _nefi.auto_problem(
        model.native._core if model.kind == "native" else
        (lambda xs: _shaped(model.forward(xs), data_shape)),
        lambda xs, g: [v.reshape(shape) if i < len(names) else v
                       for i, v in enumerate(model.vjp(xs, g))],
        list(shape), np.ascontiguousarray(data), None if w is None else np.ascontiguousarray(w),
        model.homogeneity, str(name), names, priors, sigma, [float(e) for e in (extent or [])],
        str(representation), str(budget), None if lr is None else float(lr),
        *[None if v is None else _whole("from_forward", name, v, lo, _INT_MAX)
          for name, v, lo in (("hidden", hidden, 1), ("depth", depth, 1),
                              ("n_octaves", n_octaves, 0))],
        bool(discrepancy), float(discrepancy_tau), seed,
        bool(multiscale), 8 if rank is None else int(rank), 4 if shapes is None else int(shapes),
        6 if harmonics is None else int(harmonics), 3 if layers is None else int(layers),
        0 if layer_axis is None else int(layer_axis), 0 if modes is None else int(modes),
        2.0 if smoothness is None else float(smoothness),
        6 if vertices is None else int(vertices), supports,
        list(model.start) if model.params else [])
    if model.params:  # the probe moved them
        model.load_parameters(model.start)
    return ForwardProblem(core, model, shape)
