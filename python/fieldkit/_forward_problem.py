"""The problem nefi.from_forward builds (ForwardProblem): its decisions,
solve, diagnose, Hessian spectrum, edge refinement and autotune, and the
checks its arguments share with from_forward."""
import contextlib
import os

import numpy as np

from ._core import Error
from ._host import c_contiguous, host_array, host_values
from . import _operators


def _real_values(where, name, v):
    """An array of field values as float64 of its own shape, refused when
    complex or not finite (a PSNR would be nan or inf, a linearization
    meaningless, an imaginary part dropped); a torch tensor (one that
    requires grad too) is taken by value."""
    a = host_values(v)
    if np.iscomplexobj(a):
        raise Error(f"{where}: expected a real {name}, got complex values")
    a = c_contiguous(a.astype(np.float64, copy=False))
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


    def diagnose(self, at=None, probes=32, k=8, n_iter=None, exact_sensitivity=False, seed=0,
                 out=None, plot=True, hessian=0, hessian_iter=None, device="cpu"):
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
        device path; the Lanczos arithmetic stays on the CPU). n_iter and
        hessian_iter default to max(24, k) and max(30, hessian)."""
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
        k, hessian = _whole(where, "k", k, 1, _INT_MAX), _whole(where, "hessian", hessian, 0,
                                                                 _INT_MAX)
        n_iter = max(24, k) if n_iter is None else n_iter
        hessian_iter = max(30, hessian) if hessian_iter is None else hessian_iter
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
        if at is not None:  # as diagnose's at: a cast would drop an imaginary part
            at = _real_values("ForwardProblem.hessian_spectrum", "at", at)
        where = "ForwardProblem.hessian_spectrum"
        k, n_iter = _whole(where, "k", k, 1, _INT_MAX), _whole(where, "n_iter", n_iter, 1, _INT_MAX)
        seed = _whole(where, "seed", seed, 0, _SEED_MAX)
        with self._module_kept():
            return self._core.hessian_spectrum(at, fitted, k, n_iter, seed, str(device))

    @contextlib.contextmanager
    def _module_kept(self):
        """A torch module's parameters as they were before the block (the
        model's calls load the values each solve or pilot trains)."""
        model = self._model
        before = [host_array(p).astype(np.float64) for p in model.params]
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
            # As solve's: a cast would drop an imaginary part.
            ground_truth = _real_values("ForwardProblem.autotune", "ground truth", ground_truth)
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
