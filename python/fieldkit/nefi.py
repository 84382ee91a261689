"""nefi's inverse solvers from Python.

    import fieldkit.nefi as nefi
    out = nefi.invert("configs/toy1d_smoke.yaml", seed=0)
    out["neural"]["metrics"]["psnr"], out["neural"]["reconstruction"]  # numpy

A config is an instance name (its defaults), a YAML path with the CLI's layout
(``instance``, ``config``, ``solver``, ``run``), and/or a dict of overrides
with the same keys: instance keys at the top level or under ``config``,
``solver.*`` and ``run.seed`` / ``run.methods``. Results are what ``nefi run``
writes: per method the metrics (dict), the reconstruction, ground truth and
fields (numpy arrays), the loss history (dict of numpy columns) and stages.
``batch_invert`` solves one problem per seed together in one loop and gives
the same per-problem results. ``from_forward`` brings your own problem: a
forward model in Python (numpy, torch or a matrix), one measurement and a
prior in words, with every other choice made from the problem's size and data;
``operators`` holds the built-in forward models it solves natively (MRI's
fourier_sampling, sampling, downsample, phase_retrieval, beer_lambert), and
``TimeStepper`` wraps a time loop written with torch as a forward model whose
gradient replays the loop in blocks (memory as the square root of the steps);
``wave_step``, ``advection_diffusion_step``, ``laplacian``, ``stable_dt``,
``wave_energy`` and ``ricker`` are steps to write such a loop with.
``diagnose`` tells what the data can say about a field (the linearized
operator's singular values, each cell's sensitivity, the null space, the
misfit against the noise) for an instance or a from_forward problem;
``autotune`` chooses an instance method's (or a from_forward problem's)
learning rate, regularizer weights and budget by pilot solves; ``sweep``
and ``ablate`` run paired campaigns of one setting's values or of parts
switched off, as ``nefi sweep`` and ``nefi ablate`` do. ``metrics`` scores
arrays of your own with the definitions a run's metrics.json uses (psnr,
ssim, relative_error, iou, hungarian_f1, gmsd, sliced_wasserstein, ...).
"""
import os

from . import _metrics as metrics
from . import _operators as operators
from ._byop import ForwardProblem, estimate_noise, from_forward, lr_range_test, quick_report
from ._forward_problem import _INT_MAX, _whole
from ._custom_prior import register_prior, unregister_prior
from ._time_stepper import TimeStepper
from ._run_args import (_campaign_sets, _methods, _names, _seed, _seeds, _sets, _target,
                        _yaml_scalar)
from ._time_steps import (advection_diffusion_step, laplacian, ricker, stable_dt, wave_energy,
                          wave_step)
from ._core import Error
from ._core import nefi as _nefi

__all__ = ["instances", "measurement", "invert", "ensemble", "EnsembleResult", "batch_invert",
           "Solver", "bench", "config_yaml", "set_num_threads", "get_num_threads",
           "from_forward", "ForwardProblem", "quick_report", "lr_range_test", "estimate_noise",
           "operators",
           "metrics", "instance_operator",
           "register_prior", "unregister_prior", "diagnose", "autotune", "sweep", "ablate",
           "refine_edges", "TimeStepper", "wave_step", "wave_energy", "ricker",
           "advection_diffusion_step", "laplacian", "stable_dt"]


def instances():
    """{name: {summary, methods, scenes}} of every registered instance."""
    return _nefi.instances()


def config_yaml(instance, config=None, seed=None, methods=None):
    """The effective config (YAML text) that invert() would run, its
    run.methods those given (else the config's)."""
    target, overrides = _target("config_yaml", instance, config)
    sets, m, s = _sets(overrides)
    return _nefi.config_yaml(target, sets, _seed("config_yaml", s if seed is None else seed),
                             _methods("config_yaml", methods, m))


def measurement(instance, config=None, seed=None):
    """The data an instance's methods see for `seed` (default the config's
    run.seed, as invert) and its ground truth: {data, mask (None: all
    observed), noise_std (None: unknown), ground_truth}; with run.data
    (run.mask, run.noise_std) the file's, as invert solves it, and
    ground_truth None."""
    target, overrides = _target("measurement", instance, config)
    sets, _, s = _sets(overrides)
    return _nefi.measurement(target, sets, _seed("measurement", s if seed is None else seed))


def instance_operator(instance, config=None, seed=None, method=None):
    """The forward operator an instance's `method` (default its own solver
    method) inverts through for `seed`, as a ``nefi.operators.Operator`` on
    the field's grid: ``op(x)``, ``op.vjp(x, g)``, ``op.adjoint(y)`` (linear
    ones), ``op.output_shape(shape)``. The operator the solve uses, at the
    field's full resolution: simulate data, check a gradient, or hand it to
    ``from_forward``."""
    target, overrides = _target("instance_operator", instance, config)
    sets, _, s = _sets(overrides)
    if method is not None and not isinstance(method, str):
        raise Error(f"instance_operator: expected a method name, got {method!r}")
    core, shape = _nefi.instance_operator(
        target, sets, _seed("instance_operator", s if seed is None else seed), method or "")
    return operators.Operator(core, tuple(shape))


def invert(instance, config=None, seed=None, methods=None, device=None):
    """Solves `instance` (a name or a YAML path) with `config` (a dict of
    overrides or a YAML path); returns {method: result dict} (its
    "data_seed" the measurement's seed, its "seed" the field's: run.init_seed,
    else the data seed, or the restart that won). `config` may
    hold a `curriculum` dict (early_stop_patience, early_stop_min_delta,
    discrepancy_tau, time_budget_s, restarts, freeze (prefix lists: one for
    every stage or one per stage), optim: {ema, betas, lr_mult: {prefix:
    multiplier}}; parameter names: field.layer0.weight, field.out.bias, ...,
    operator.<k>) and a
    `run` dict with `data` (a .npy measured dataset in place of the synthetic
    one, shaped as the measurement it replaces), `mask` and `noise_std`
    (results then have no ground truth and no field metrics); `methods`
    takes the reference's names for the instance's own solver (neural, nefi,
    netmy, nefty, ...); `device` ("cpu", "cuda", "cuda:N"; default the
    config's run.device, else $NEFI_DEVICE, else cpu) is where a method's
    field trains (the deep decoder's and Gaussian splats' too; the direct
    baselines such as FBP, Wiener and ADMM run on the CPU)."""
    return _run("invert", instance, config, seed, methods, device)["results"]


def _run(where, instance, config, seed, methods, device):
    """What the engine's run gives: {instance, seed, config_yaml (the
    effective config, the seed it ran included), results}."""
    target, overrides = _target(where, instance, config)
    sets, m, s = _sets(overrides)
    if device is not None:
        sets.append(f"run.device={device}")
    methods = _methods(where, methods, m)
    return _nefi.run(target, sets, _seed(where, s if seed is None else seed), methods)


class EnsembleResult:
    """Solves of one measurement from several field initialisations (the
    reference's nefi.ensemble): ``results`` (one result dict per seed, as
    invert gives), ``seeds``, and the reconstructions' per-cell ``mean`` and
    ``std`` (population) as numpy arrays."""

    def __init__(self, results, seeds):
        import numpy as np

        self.results, self.seeds = results, list(seeds)
        first = results[0]["reconstruction"]
        if isinstance(first, dict):  # several fields (from_forward): per field
            stacks = {k: np.stack([r["reconstruction"][k] for r in results]) for k in first}
            self.mean = {k: v.mean(0) for k, v in stacks.items()}
            self.std = {k: v.std(0) for k, v in stacks.items()}
        else:
            stack = np.stack([r["reconstruction"] for r in results])
            self.mean, self.std = stack.mean(0), stack.std(0)

    def coefficient_of_variation(self):
        """mean(std) / mean(|mean|): the ensemble's spread against the field's
        size, one number (0 when every init gives the same field); a dict per
        field for several fields."""
        import numpy as np

        def cv(mean, std):
            return float(std.mean() / max(np.abs(mean).mean(), 1e-300))

        if isinstance(self.mean, dict):
            return {k: cv(self.mean[k], self.std[k]) for k in self.mean}
        return cv(self.mean, self.std)


def ensemble(instance, config=None, seeds=(0, 1, 2), seed=None, method=None, device=None):
    """`method` (default the instance's own solver; method= names the one
    method: run.methods in a dict of overrides is refused, a config file's is
    not used) on the measurement of data
    seed `seed` (default the config's), once per initialisation seed in
    `seeds` (run.init_seed): an EnsembleResult whose std maps where the data
    leave the field undetermined. `device` is where the field trains (default
    the config's run.device, else $NEFI_DEVICE, else the CPU). `instance` may
    also be a from_forward ForwardProblem, solved once per seed (on `device`,
    default the CPU)."""
    seeds = _seeds("ensemble", seeds)
    if not seeds:
        raise ValueError("ensemble: expected at least one initialisation seed, got none")
    if len(set(seeds)) < len(seeds):  # one member twice: a spread of 0 there
        raise Error(f"ensemble: expected distinct initialisation seeds, got {list(seeds)}")
    if isinstance(instance, ForwardProblem):  # from_forward's problem: its field seeds
        if config is not None or method is not None or seed is not None:
            raise ValueError("ensemble: expected only seeds and device with a from_forward "
                             "problem (its config, method and data are the problem's), got "
                             "config/method/seed")
        return _members(seeds, lambda k: instance.solve(seed=k, device=device or "cpu"),
                        "its field")
    target, overrides = _target("ensemble", instance, config)
    sets, m, s = _sets(overrides)
    if m is not None:
        raise Error(f"ensemble: expected no methods in the config (method= names the one method "
                    f"of the ensemble), got run.methods {m!r}")
    if device is not None:
        sets.append(f"run.device={device}")
    methods = [method or "neural"]  # the reference's name for the instance's own solver
    data_seed = _seed("ensemble", s if seed is None else seed)
    # Member k runs seeds k .. k + restarts - 1 and keeps the best: members
    # closer than that share runs (seeds 0, 1, 2 under restarts 3 kept 2, 2, 4).
    restarts = _restarts(_nefi.config_yaml(target, sets, data_seed, methods))
    ordered = sorted(seeds)
    if restarts > 1 and any(b - a < restarts for a, b in zip(ordered, ordered[1:])):
        raise Error(f"ensemble: expected initialisation seeds at least restarts = {restarts} "
                    f"apart (each member runs seeds k .. k + {restarts - 1} and keeps the "
                    f"best, so closer members share runs), got seeds {list(seeds)}")

    def member(k):
        out = _nefi.run(target, sets + [f"run.init_seed={k}"], data_seed, methods)
        return next(iter(out["results"].values()))

    return _members(seeds, member, f"method {methods[0]!r}")


def _members(seeds, solve, what):
    """An EnsembleResult of solve(k) for each seed; refused after the second
    member when it equals the first (`what` starts the same for every seed)."""
    results = []
    for k in seeds:
        results.append(solve(k))
        if len(results) == 2 and _same_fields(results[0], results[1]):
            raise Error(f"ensemble: expected members that differ with their initialisation "
                        f"seed, got identical fields for seeds {seeds[0]} and {seeds[1]} "
                        f"({what} starts the same for every seed: its spread would be 0 "
                        f"everywhere)")
    return EnsembleResult(results, seeds)


def _restarts(config_yaml):
    """The restarts a resolved config runs: its curriculum's override, else
    an instance's own `restarts` key, else 1; 1 under a step cap
    (run.max_total_steps > 0 makes one attempt)."""
    section, found = None, {}
    for line in config_yaml.splitlines():
        if line and not line[0].isspace():
            section = line.split(":", 1)[0]
            continue
        key, _, value = line.strip().partition(":")
        if (section, key) in (("curriculum", "restarts"), ("config", "restarts"),
                              ("run", "max_total_steps")):
            found[section] = int(value)
    if found.get("run", 0) > 0:
        return 1
    return found.get("curriculum", found.get("config", 1))


def _same_fields(a, b):
    """Two results' reconstructions (one array, or a dict of them) equal bit for bit."""
    import numpy as np
    x, y = a.get("reconstruction"), b.get("reconstruction")
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
    return x is not None and y is not None and np.array_equal(np.asarray(x), np.asarray(y))


def batch_invert(instance, config=None, seeds=None, method="neural", data_seeds=None,
                 chunk_size=0, loss_mode="auto", raise_on_error=True, device="cpu"):
    """Solves one problem per seed of `instance` (default seeds (0, 1, 2))
    with `config` together, in one
    optimisation loop (nefi's batch_invert): problem b's data come from
    data_seeds[b] (default seeds[b]) and its field from seeds[b] (from the
    config's run.init_seed for all when it sets one, as invert), so it matches
    ``invert(instance, config, seed=seeds[b], methods=method)``. Returns a list
    of result dicts as invert() gives per method, with ``data_seed``,
    ``batch_size`` and ``error`` (a failed problem's reason when
    raise_on_error is False). chunk_size > 0 fuses that many problems per
    sub-step; loss_mode is auto | shared | loop. device is "cpu", "cuda" or
    "cuda:N": where the batch trains (a device batch runs its steps as one
    CUDA graph per stage; results come back as numpy arrays either way); a
    device this process cannot use, or a batch the device path refuses,
    raises fieldkit.Error naming what was expected and given.

    ``instance`` may instead be a list of from_forward problems of one
    built-in model (``nefi.operators``), one per measurement (slices,
    frames, repeats), made with the same options: they are solved together
    in one loop on `device`, each with its own noise, data and penalty
    weights, stop and seed, all rebuilt to start from one problem's best
    constants (the medoid's: the fields then share heads; penalty weights
    are re-weighed from that start). Returns one result
    dict per problem, as ForwardProblem.solve() gives, with ``batch_size``
    and ``error`` (a failed problem, raise_on_error False: its fields,
    prediction and data fit None, its report the error)."""
    if isinstance(instance, (list, tuple)):
        given = [k for k, v in (("config", config), ("seeds", seeds), ("data_seeds", data_seeds))
                 if v is not None] + (["method"] if method != "neural" else [])
        if given:
            raise ValueError("batch_invert: expected only chunk_size, loss_mode, "
                             "raise_on_error and device with from_forward problems (their "
                             "seeds and data are the problems'), got " + ", ".join(given))
        problems = list(instance)
        for i, p in enumerate(problems):
            if not isinstance(p, ForwardProblem):
                raise ValueError(f"batch_invert: expected from_forward problems, got "
                                 f"{type(p).__name__} at {i}")
        out = _nefi.batch_forward([p._core for p in problems],
                                  _whole("batch_invert", "chunk_size", chunk_size, 0, _INT_MAX),
                                  str(loss_mode),
                                  bool(raise_on_error), str(device))
        for p, r in zip(problems, out):
            if r["reconstruction"] is not None:  # built-in models have one field
                r["reconstruction"] = r["reconstruction"].reshape(p.shape)
        return out
    seeds = (0, 1, 2) if seeds is None else seeds
    target, overrides = _target("batch_invert", instance, config)
    sets, m = _campaign_sets("batch_invert", overrides, "seeds= gives each problem's field "
                             "and data seed, data_seeds= its data's")
    if m is not None:
        raise Error(f"batch_invert: expected no methods in the config (method= names the one "
                    f"method batched), got run.methods {m!r}")
    return _nefi.batch_invert(target, sets, str(method), _seeds("batch_invert", seeds),
                              _seeds("batch_invert", data_seeds or [], "data_seeds"),
                              _whole("batch_invert", "chunk_size", chunk_size, 0, _INT_MAX),
                              str(loss_mode), bool(raise_on_error), str(device))


class Solver:
    """A configured solve: ``Solver(instance, config).solve(seed)``; keeps the
    last run's results and effective config."""

    def __init__(self, instance, config=None, methods=None):
        self.instance, self.config, self.methods = instance, config, methods
        self.results, self._solved_yaml = None, None

    @property
    def config_yaml(self):
        """The effective config (YAML text) of the last solve, its seed
        included; before any, the one solve() would run by default."""
        if self._solved_yaml is not None:
            return self._solved_yaml
        return config_yaml(self.instance, self.config, methods=self.methods)

    def solve(self, seed=None):
        out = _run("Solver.solve", self.instance, self.config, seed, self.methods, None)
        self.results, self._solved_yaml = out["results"], out["config_yaml"]
        return self.results


def bench(instance, config=None, methods=None, classes=None, n=4, seeds=(0, 1, 2),
          budget_scale=1.0, allow_inverse_crime=False, metrics=None):
    """A paired benchmark campaign as ``nefi bench`` runs it (one shard, no
    files written): a list of per-run rows (dicts with metrics, steps, time).
    A method whose operator drew the data is refused unless
    allow_inverse_crime; ``metrics`` (names) keeps only those columns."""
    target, overrides = _target("bench", instance, config)
    sets, m = _campaign_sets("bench", overrides,
                             "seeds= gives each unit's, as nefi bench's --seeds")
    methods = _methods("bench", methods, m)
    return _nefi.bench(target, sets, methods, _names(classes), _whole("bench", "n", n, 1, _INT_MAX),
                       _seeds("bench", seeds), float(budget_scale), bool(allow_inverse_crime),
                       _names(metrics))


def _variants(instance, config, base, kind, axis=None, values=(), modifiers=(),
              independent=False, classes=None, n=4, seeds=(0, 1, 2), budget_scale=1.0,
              allow_inverse_crime=False):
    target, overrides = _target(kind, instance, config)
    sets, m = _campaign_sets(kind, overrides, f"seeds= gives each unit's, as nefi {kind}'s --seeds")
    m = _names(m)
    if base is None and len(m) > 1:
        raise Error(f"{kind}: expected at most one method in the config (the base the {kind} "
                    f"varies; base= names it), got run.methods {m!r}")
    base = base if base is not None else (m[0] if m else None)

    def listed(v):  # one value, or several; each as the YAML text of a --set
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__") or \
                getattr(v, "ndim", None) == 0:
            v = [v]
        return [x if isinstance(x, str) else _yaml_scalar(x) for x in v]

    return _nefi.variant_campaign(target, sets, base, kind, axis or "", listed(values),
                                  listed(modifiers), bool(independent), _names(classes),
                                  _whole(kind, "n", n, 1, _INT_MAX), _seeds(kind, seeds),
                                  float(budget_scale), bool(allow_inverse_crime))


def sweep(instance, axis, values, config=None, base=None, *, n=4, seeds=(0, 1, 2), classes=None,
          budget_scale=1.0, allow_inverse_crime=False):
    """``nefi sweep``: the base method (default the instance's own solver) at
    each value of one setting: ``axis`` a config key, ``stage.ATTR``,
    ``optim.ATTR``, ``curriculum.ATTR`` or ``weight.NAME``. Every row is a
    paired campaign of the same units (class, sample, seed) as bench()
    runs. Returns {rows (bench's rows, each ``method`` its row's label
    KEY=V), variants (label, method, sets), summary (the mean ± 95 % CI
    table as markdown)}."""
    return _variants(instance, config, base, "sweep", axis=axis, values=values, n=n, seeds=seeds,
                     classes=classes, budget_scale=budget_scale,
                     allow_inverse_crime=allow_inverse_crime)


def ablate(instance, modifiers, config=None, base=None, *, independent=False, n=4,
           seeds=(0, 1, 2), classes=None, budget_scale=1.0, allow_inverse_crime=False):
    """``nefi ablate``: the base method with parts switched off, one row per
    modifier (no_annealing, no_pe, single_stage, grid_field, drop_loss:NAME,
    set_weight:NAME=W, set:KEY=V, stage:ATTR=V, optim:ATTR=V), cumulative
    (row i applies modifiers 1..i) unless ``independent``, each paired with
    the full method's row ``full`` on the same units. Returns what sweep()
    returns."""
    return _variants(instance, config, base, "ablate", modifiers=modifiers,
                     independent=independent, n=n, seeds=seeds, classes=classes,
                     budget_scale=budget_scale, allow_inverse_crime=allow_inverse_crime)


def refine_edges(problem, result, mode="levelset", **options):
    """The reference's refine_edges for a from_forward problem:
    ``problem.refine_edges(result, mode, **options)`` (see there); returns
    (result, report). An instance refines through its config keys (refine,
    refine_mode, refine_levels, ...; the 3-D instances declare them)."""
    if not isinstance(problem, ForwardProblem):
        raise ValueError(f"refine_edges: expected a from_forward ForwardProblem (an instance "
                         f"refines through its config: refine=true), got "
                         f"{type(problem).__name__}")
    return problem.refine_edges(result, mode, **options)


def diagnose(instance, config=None, seed=None, method=None, *, solve=False, at=None, probes=32,
             k=8, n_iter=None, exact_sensitivity=False, out=None, plot=True, hessian=0,
             hessian_iter=None, device=None):
    """What the data can tell about the field (``nefi diagnose``): the forward
    operator linearized at the field's start, or with ``solve=True`` at the
    solution a full run reaches. Returns a dict: ``singular_values`` (the k
    largest, by n_iter Lanczos steps on J v and J^T u; n_iter >= k, by
    default max(24, k) as the CLI's),
    ``condition`` (s1 / s_k; None when s_k is 0), ``sensitivity`` (``map``:
    each cell's Jacobian column norm squared, a numpy array of the field's
    shape, by ``probes`` Hutchinson probes or exactly; ``blind_fraction``:
    the cells the data do not see), ``null_space`` (``dark_fraction``: random
    directions the data barely see), ``gauges`` (``constant_visibility``:
    how well the data see the field's mean, ``constant_is_gauge`` below
    1e-3 of sigma_1: only the prior fixes it), ``data_fit`` (RMS residual, noise,
    their ratio and a reading), ``jvp_mode`` and ``report`` (the markdown
    ``nefi diagnose`` prints). ``out``: a directory for diagnostics.md,
    .json, sensitivity.npy and, with ``plot``, diagnostics.png. ``hessian``
    > 0 adds ``hessian``: the training loss's Hessian in the field's
    parameters at the same point, its ``hessian`` largest and smallest
    eigenvalues by ``hessian_iter`` Lanczos steps (default max(30, hessian))
    and their ``condition``
    (inf where not positive definite or the smallest is within 1e-4 of the
    largest, as hessian_spectrum's; null in the
    .json; ``nefi diagnose --hessian K``; with ``solve`` the method's own problem
    is trained in this process, on the config's run.device, the field back
    on the CPU after, so that its parameters are at hand).

    ``instance`` is an instance name or YAML path with ``config`` as for
    invert() (``method`` default the config's first, else the instance's
    own solver), or a from_forward ForwardProblem: then ``at`` is where to
    linearize (None: the field's starting constant; an array of the field's
    shape; or a result dict of problem.solve(), at its reconstruction).
    ``device`` ("cpu", "cuda", "cuda:N"; None: the config's run.device, else
    $NEFI_DEVICE, else the CPU; the CPU for a from_forward problem) is where
    the operator's products and the Hessian's gradients run (and, with
    solve, where the run trains)."""
    counts = {name: _whole("diagnose", name, v, lo, _INT_MAX) for name, v, lo in
              (("probes", probes, 1), ("k", k, 1), ("hessian", hessian, 0))}
    # Unless given, the Lanczos steps rise to the count asked for, as the
    # CLI's do (k=30 with the default 24 steps was an error).
    counts["n_iter"] = (max(24, counts["k"]) if n_iter is None
                        else _whole("diagnose", "n_iter", n_iter, 1, _INT_MAX))
    counts["hessian_iter"] = (max(30, counts["hessian"]) if hessian_iter is None
                              else _whole("diagnose", "hessian_iter", hessian_iter, 1, _INT_MAX))
    common = (counts["probes"], counts["k"], counts["n_iter"], bool(exact_sensitivity))
    out = "" if out is None else os.fspath(out)
    if isinstance(instance, ForwardProblem):
        if config is not None or method is not None or solve:
            raise ValueError("diagnose: expected only at= (and the probe settings) with a "
                             "from_forward problem, got config/method/solve (solve it and pass "
                             "the result as at=)")
        return instance.diagnose(at, *common, seed=0 if seed is None else _seed("diagnose", seed),
                                 out=out, plot=plot, hessian=counts["hessian"],
                                 hessian_iter=counts["hessian_iter"],
                                 device=device or "cpu")
    if at is not None:
        raise ValueError("diagnose: expected at= only with a from_forward problem (an "
                         "instance is diagnosed at its start or, with solve=True, its solution)")
    target, overrides = _target("diagnose", instance, config)
    sets, m, s = _sets(overrides)
    if device is not None:
        sets.append(f"run.device={device}")
    method = method if method is not None else (m[0] if m else None)
    return _nefi.diagnose(target, sets, _seed("diagnose", s if seed is None else seed), method,
                          bool(solve), *common, out, bool(plot), counts["hessian"],
                          counts["hessian_iter"])


def autotune(instance, config=None, seed=None, method=None, *, level="quick", compare=False,
             out=None, ground_truth=None, device=None):
    """The learning rate, regularizer weights and (levels standard and
    thorough) step budget of an instance's method chosen from the data by
    pilot solves and the discrepancy principle (``nefi autotune``). Returns a
    dict: ``decisions`` (each key's rule, value before and chosen, reason and
    pilot evidence), ``noise_std``, ``tuned_config_yaml`` (a config
    invert() and ``nefi run`` solve as tuned: write it to a file and pass the
    path), ``report`` (markdown) and, with ``compare``, ``comparison`` (full
    solves of the default and the tuned config). ``level``: quick, standard
    or thorough. ``out``: a directory for autotune.md, .json and
    tuned_config.yaml.

    A from_forward ForwardProblem is tuned the same way: its learning rate,
    each prior penalty's strength and (standard, thorough) budget; the dict
    then holds ``problem``, the problem rebuilt with the chosen values
    (ForwardProblem.autotune; ``ground_truth`` is scored for the reader;
    ``device``: where its pilots train)."""
    if isinstance(instance, ForwardProblem):
        if config is not None or method is not None or seed is not None or compare or out:
            raise ValueError("autotune: expected only level=, ground_truth= and device= with a "
                             "from_forward problem, got config/method/seed/compare/out")
        return instance.autotune(level, ground_truth, "cpu" if device is None else device)
    if ground_truth is not None or device is not None:
        raise ValueError("autotune: expected ground_truth= and device= only with a from_forward "
                         "problem (an instance scores its own; its config's run.device says "
                         "where it trains)")
    target, overrides = _target("autotune", instance, config)
    sets, m, s = _sets(overrides)
    method = method if method is not None else (m[0] if m else None)
    return _nefi.autotune(target, sets, _seed("autotune", s if seed is None else seed), method,
                          str(level),
                          bool(compare), "" if out is None else os.fspath(out))


def set_num_threads(n):
    """fk's thread count for the solves (the CLI's --threads)."""
    _nefi.set_num_threads(_whole("set_num_threads", "n", n, 1, 4096))


def get_num_threads():
    return _nefi.get_num_threads()
