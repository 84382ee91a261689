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
import contextlib
import os

import numpy as np

from ._core import Error
from ._core import nefi as _nefi
from . import _operators
from ._forward_model import _Model, _shaped, _stack_complex

__all__ = ["from_forward", "ForwardProblem", "quick_report", "lr_range_test"]


def _real_values(where, name, v):
    """An array of field values as float64, refused when complex or not
    finite (a PSNR would be nan or inf, a linearization meaningless, an
    imaginary part dropped); a torch tensor (one that requires grad too) is
    taken by value."""
    if hasattr(v, "detach"):
        v = v.detach().cpu().numpy()
    a = np.asarray(v)
    if np.iscomplexobj(a):
        raise Error(f"{where}: expected a real {name}, got complex values")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not np.isfinite(a).all():
        raise Error(f"{where}: expected a finite {name}, got "
                    f"{int((~np.isfinite(a)).sum())} non-finite value(s)")
    return a


class ForwardProblem:
    """A bring-your-own problem (from_forward): ``decisions`` (each automatic
    choice with its value and reason), ``noise_std`` (given or estimated),
    ``steps``, ``prior``; ``solve()`` runs it."""

    def __init__(self, core, model, shape):
        self._core, self._model, self.shape = core, model, tuple(shape)

    @property
    def decisions(self):
        return {d["key"]: {"value": d["value"], "why": d["why"]} for d in self._core.decisions}

    noise_std = property(lambda self: self._core.noise_std)
    noise_estimated = property(lambda self: self._core.noise_estimated)
    steps = property(lambda self: self._core.steps)
    fields = property(lambda self: list(self._model.names))

    @property
    def constant_fit(self):
        """Where the field starts (a dict per field for several)."""
        c = self._core.constant_fits
        return dict(zip(self._model.names, c)) if self._model.several else c[0]

    @property
    def head_scale(self):
        """What the head's O(1) output spans (a dict per field for several)."""
        s = self._core.head_scales
        return dict(zip(self._model.names, s)) if self._model.several else s[0]

    @property
    def prior(self):
        p = self._core.priors
        return dict(zip(self._model.names, p)) if self._model.several else p[0]

    def solve(self, seed=None, ground_truth=None, steps=None, lr=None, callback=None,
              device="cpu"):
        """Solves the problem; returns a dict: reconstruction (numpy, the field's
        shape), prediction (the model on it), data_fit (rmse, data_psnr,
        discrepancy_ratio = chi), history, stages, total_s, ms_per_step and ``report``
        (quick_report's markdown; with ``ground_truth``, its PSNR too: an
        array, or a dict {field: array} for several fields). ``steps``
        replaces the decided total for this solve (a multiscale problem's
        stages share it as decided) and ``lr`` the first stage's rate (a
        later stage keeps its decided ratio to it). ``callback(info)`` is
        called after every step with a dict (stage, step, global_step,
        total_steps, lr, progress, total, data_loss, step_ms; ``step`` is the
        stage's 0-based index, ``global_step`` the steps done so far, this one
        included: the history's 0-based global_step plus one); returning
        False ends the stage (a progress bar, a custom stop). ``device``
        ("cpu", "cuda", "cuda:N") is where the fit trains: a neural, grid,
        hash, lowrank, spectral, parametric or layered field through a
        built-in model with a device path (a spectral fit's L-BFGS evaluates
        there and recurses on the host; a Python forward model or another
        field is refused by name). One solve runs at a time per problem
        (another thread's call waits)."""
        if callback is not None and not callable(callback):
            raise Error(f"ForwardProblem.solve: expected a callable callback, got "
                        f"{type(callback).__name__}")
        if ground_truth is None:
            truths = {}
        elif isinstance(ground_truth, dict):
            truths = dict(ground_truth)
        elif self._model.several:
            raise Error(f"ForwardProblem.solve: expected a dict of ground truths for the fields "
                        f"{self._model.names}, got {type(ground_truth).__name__}")
        else:
            truths = {self._model.names[0]: ground_truth}
        truths = {str(k): _real_values("ForwardProblem.solve", "ground truth", v)
                  for k, v in truths.items()}
        try:
            out = self._core.solve(None if seed is None else
                                   _whole("ForwardProblem.solve", "seed", seed, 0, _SEED_MAX),
                                   truths,
                                   None if steps is None else
                                   _whole("ForwardProblem.solve", "steps", steps, 1, _INT_MAX),
                                   None if lr is None else float(lr), callback, str(device))
        except BaseException:
            if self._model.params:  # not a mid-solve value
                self._model.load_parameters(self._model.start)
            raise
        if self._model.params:  # the module keeps what the fit found
            self._model.load_parameters(out["operator_parameters"])
        if self._model.several:  # one array per field
            out["reconstruction"] = {n: out["fields"][n].reshape(self.shape)
                                     for n in self._model.names}
        else:
            out["reconstruction"] = out["reconstruction"].reshape(self.shape)
        return out


    def diagnose(self, at=None, probes=32, k=8, n_iter=24, exact_sensitivity=False, seed=0,
                 out=None, plot=True, hessian=0, hessian_iter=30, device="cpu"):
        """nefi.diagnose for this problem: the model linearized at ``at`` (None:
        the field's starting constant; an array of the field's shape; or a
        result dict of solve(), at its reconstruction and, for a torch
        module, its fitted parameters). A module's parameters are otherwise
        their values as given to from_forward. One field only. ``hessian`` >
        0 adds the loss Hessian's ends in the field's parameters
        (hessian_spectrum) to the dict, the report and the files: at the
        start (at=None) or at a result's field_parameters (not for an
        array). ``device`` ("cpu", "cuda", "cuda:N"): where the model's
        products and the Hessian's gradients run (a built-in model with a
        device path; the Lanczos arithmetic stays on the CPU)."""
        if self._model.several:
            raise Error(f"ForwardProblem.diagnose: expected a problem with one field (the "
                        f"linearization is in one field's cells), got {len(self._model.names)} "
                        f"fields {self._model.names}")
        fitted = []  # a torch module's fitted parameters, with the result's field
        parameters = None  # the field's, for the Hessian
        if hessian and at is not None and not isinstance(at, dict):
            raise Error("ForwardProblem.diagnose: expected at= None or a solve() result with "
                        "hessian= (the Hessian is in the field's parameters; an array of field "
                        "values has none)")
        if isinstance(at, dict):
            if "reconstruction" not in at:
                raise Error("ForwardProblem.diagnose: expected at= to be a field array or a "
                            f"solve() result, got a dict with keys {sorted(at)}")
            if hessian and at.get("field_parameters") is None:
                raise Error("ForwardProblem.diagnose: expected a result with field_parameters "
                            "with hessian= (a batch's or a refined result has none)")
            fitted = [np.array(v, dtype=np.float64) for v in at.get("operator_parameters", [])]
            if hessian:
                parameters = np.ascontiguousarray(at["field_parameters"], dtype=np.float64)
            at = at["reconstruction"]
        if at is not None:
            at = _real_values("ForwardProblem.diagnose", "at", at)
        where = "ForwardProblem.diagnose"
        with self._module_kept():
            return self._core.diagnose(at, fitted, _whole(where, "probes", probes, 1, _INT_MAX),
                                       _whole(where, "k", k, 1, _INT_MAX),
                                       _whole(where, "n_iter", n_iter, 1, _INT_MAX),
                                       bool(exact_sensitivity),
                                       _whole(where, "seed", seed, 0, _SEED_MAX),
                                       "" if out is None else os.fspath(out), bool(plot),
                                       _whole(where, "hessian", hessian, 0, _INT_MAX),
                                       _whole(where, "hessian_iter", hessian_iter, 1, _INT_MAX),
                                       parameters,
                                       str(device))

    def hessian_spectrum(self, at=None, k=6, n_iter=30, seed=0, device="cpu"):
        """The curvature of the training loss in the field's parameters (the
        reference's hessian_spectrum): the k largest and smallest eigenvalues
        of its Hessian by n_iter Lanczos steps on finite-difference
        Hessian-vector products, at the field's start (None) or at a solve's
        parameters (``at=result`` with its fitted model parameters, or its
        ``field_parameters``). Returns {largest, smallest, condition
        (largest / smallest when positive definite, else inf: negative
        curvature, or eigenvalues within the products' error, about 1e-4 of
        the largest, of 0; with n_iter below the parameter count a lower
        bound), parameters, lanczos_steps, invariant_subspace}. At the kinks
        of a non-smooth prior (tv, sparse) there is no Hessian, and the
        products come out as the gradient's jump over the step. A network's
        spectrum against a grid field's says how the parameterization
        reshapes the fit's curvature. ``device`` ("cpu", "cuda", "cuda:N"):
        where the products' gradients run (a built-in model with a device
        path and a field with one); the Lanczos arithmetic stays on the
        host."""
        fitted = []  # a torch module's fitted parameters, with the result's field
        if isinstance(at, dict):
            if at.get("field_parameters") is None:
                raise Error("ForwardProblem.hessian_spectrum: expected at= to be a solve() "
                            "result with field_parameters, got a dict without them (a batch's "
                            "results have none: their fields started elsewhere)")
            fitted = [np.array(v, dtype=np.float64) for v in at.get("operator_parameters", [])]
            at = at["field_parameters"]
        if at is not None:
            at = np.ascontiguousarray(at, dtype=np.float64)
        with self._module_kept():
            return self._core.hessian_spectrum(at, fitted, int(k), int(n_iter), int(seed),
                                               str(device))

    @contextlib.contextmanager
    def _module_kept(self):
        """A torch module's parameters as they were before the block (the
        model's calls load the values each solve or pilot trains)."""
        model = self._model
        before = [p.detach().cpu().numpy().astype(np.float64) for p in model.params]
        try:
            yield
        finally:
            if model.params:
                model.load_parameters(before)


    def refine_edges(self, result, mode="levelset", levels="auto", levels_by="separation",
                     start_levels=None, seed=0, device="cpu", **options):
        """Sharpens a solve's smooth field into phases (the reference's
        refine_edges; nefi/solve/refine.h, nefi/byop/refine_fit.h): mode
        levelset (K levels over one level set started at the field,
        thresholds by multi-level Otsu), voxels, tv_sharpen or phasefield,
        refitted to the same data and losses, and kept only when its chi
        (mean squared residual / sigma^2, not RMSE / sigma) stays within
        chi_factor (1.1) of max(the smooth fit's, 1), the interfaces stay in
        its transition band, the refit does not fit the noise and its values
        stay in the prior's range. levels: "auto" (by levels_by: separation
        of the smooth field's histogram, or chi) or K in [2, 8];
        start_levels: two given phase values (K = 2, a mass-matched
        threshold); seed: the refit's; device ("cpu", "cuda", "cuda:N"):
        where the refit trains (a built-in model with a device path). options
        (numbers): steps, lr (default 1e-2 x the field's spread), eps_start,
        eps_end, chi_factor, noise_sigmas, min_chi_smooth, band_fraction,
        band_width, support_share, max_levels, auto_separation,
        boundary_weight, boundary_eps, floor (default the prior's low
        bound), tv_weight, tv_eps, well_weight, phase_width. One-field
        problems whose model has no trainable parameters; priors the refit
        cannot keep (conserved, zero_mean, symmetric, known_support) are
        refused. Returns (result, report): a copy of the result (or of
        {"reconstruction": array}) whose reconstruction, fields, prediction
        and data_fit are the refined field's when accepted (its
        field_parameters then None, its report with a refine line), else as
        given, and the report under "refine"; the report holds accepted,
        reason, refusal, chi_smooth, chi_refined, levels, thresholds,
        in_band, support_kept, refit_steps and refit_graph_steps (how many
        replayed a captured CUDA graph on a device), refined (the refit,
        accepted or not), field, prediction and data_fit (of the field to
        use)."""
        given = result if isinstance(result, dict) else {"reconstruction": result}
        if "reconstruction" not in given:
            raise Error("refine_edges: expected a solve() result (a dict with its "
                        "reconstruction) or the field as an array, got a dict of "
                        f"{sorted(given)}")
        x = given["reconstruction"]
        if isinstance(x, dict):
            raise Error("refine_edges: expected a problem of one field, got a result of "
                        f"{len(x)} fields")
        if start_levels is not None:
            start_levels = [float(v) for v in np.asarray(start_levels, dtype=np.float64).ravel()]
            if len(start_levels) != 2:
                raise Error(f"refine_edges: expected two start_levels (a background and an "
                            f"inclusion value), got {len(start_levels)}")
        if isinstance(levels, str) and levels == "auto":
            levels = 2 if start_levels else 0
        elif isinstance(levels, (bool, str)) or not isinstance(
                levels, (int, float, np.integer, np.floating)) or int(levels) != levels:
            raise Error(f"refine_edges: expected levels 'auto' or a phase count, got {levels!r}")
        numbers = {}
        for k, v in options.items():
            if isinstance(v, (bool, str)) or not isinstance(v, (int, float, np.number)):
                raise Error(f"refine_edges: expected a number for option {k!r}, got {v!r}")
            numbers[str(k)] = float(v)
        rep = self._core.refine_edges(
            _real_values("refine_edges", "field", x), str(mode), int(levels), str(levels_by),
            start_levels or [], numbers, _whole("refine_edges", "seed", seed, 0, _SEED_MAX),
            str(device))
        out = dict(given)
        if rep["accepted"]:
            name = self._model.names[0]
            out["reconstruction"] = rep["field"]
            if isinstance(given.get("fields"), dict):
                out["fields"] = {**given["fields"], name: rep["field"]}
            out["prediction"] = rep["prediction"]
            out["data_fit"] = rep["data_fit"]
            out["field_parameters"] = None  # the refit is not in the field's parameters
            if "report" in given:
                out["report"] = (given["report"] + f"\n- refine {mode}: accepted, chi "
                                 f"{rep['chi_smooth']:.4g} -> {rep['chi_refined']:.4g}, levels "
                                 f"{', '.join(f'{v:.4g}' for v in rep['levels'])}\n")
        out["refine"] = rep
        return out, rep

    def autotune(self, level="quick", ground_truth=None, device="cpu"):
        """nefi.autotune for this problem: pilot solves choose the learning
        rate, each penalty's strength (tv, smooth, ...: the strongest whose
        fit still reaches the noise, Morozov's discrepancy principle) and, at
        levels standard and thorough, the step budget. Returns a dict:
        ``decisions`` (each with its rule, value before and chosen, reason
        and the pilots' residuals), ``noise_std``, ``report`` (markdown) and
        ``problem``, this problem rebuilt with the chosen values. A
        ``ground_truth`` is scored for each pilot (PSNR) for the reader; no
        decision reads it. ``device`` is where the pilots train (as
        ``solve``'s; a problem without a device path is refused before any
        pilot)."""
        if ground_truth is not None:
            if self._model.several:
                raise Error("ForwardProblem.autotune: expected no ground_truth for a problem "
                            f"of several fields, got one for {self._model.names}")
            ground_truth = np.ascontiguousarray(ground_truth, dtype=np.float64)
        with self._module_kept():  # the pilots train a module's parameters
            report, core = self._core.autotune(str(level), ground_truth, str(device))
        report["problem"] = ForwardProblem(core, self._model, self.shape)
        return report


def _whole(where, name, value, lo=0, hi=None):
    """A whole number in [lo, hi] (2.0 taken as 2), else a fieldkit.Error
    naming it, never a truncation or a binding's TypeError."""
    v = _operators._integer(where, name, value)
    if v < lo or (hi is not None and v > hi):
        raise Error(f"{where}: expected {name} a whole number in [{lo}, "
                    f"{'inf' if hi is None else hi}], got {value!r}")
    return v


_SEED_MAX = 2 ** 64 - 1
_INT_MAX = 2 ** 31 - 1  # what the engine keeps counts in


def lr_range_test(problem, lrs=(1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1), steps=20, seed=0,
                  device="cpu"):
    """Short solves of a ForwardProblem at each learning rate (the
    reference's lr_range_test): returns (best lr, [(lr, final data loss)])
    with the best the lowest finite data loss after `steps` steps (a
    diverged solve counts as inf). ``device``: where they train (as
    ``solve``'s)."""
    lrs = list(lrs)
    if not lrs:
        raise Error("lr_range_test: expected at least one learning rate in lrs, got none")
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
      array: y = A x.ravel()),
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
    y = np.asarray(measurement)
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
        shape = (np.asarray(forward).shape[1],) if hasattr(forward, "shape") and \
            not callable(forward) else y.shape
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
    if model.complex_out != complex_data:
        raise Error(f"from_forward: expected {'complex' if model.complex_out else 'real'} "
                    f"measurements (the model's output is), got "
                    f"{'complex' if complex_data else 'real'} ones")
    data = _stack_complex(y)
    if check:
        model.check(data.shape, np.random.default_rng(seed))
    w = None
    if mask is not None:
        w = np.asarray(mask, dtype=np.float64)
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
        sigma = float(noise)
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
            m = np.asarray(m, dtype=np.float64)
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
