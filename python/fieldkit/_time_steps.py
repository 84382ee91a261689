"""Steps to write a TimeStepper's loop with: torch functions for the wave
equation (leapfrog, its conserved energy, a Ricker source) and for a tracer
carried by a flow and spreading (explicit upwind finite volumes), with the
largest time step each stays stable at. The grid is the last len(spacing)
axes of the state (leading axes: a batch, shots say); every coefficient may
be a torch tensor that requires grad, so it can be the field being fitted."""
import math

import numpy as np

from ._core import Error

_BOUNDARIES = ("closed", "periodic", "dirichlet", "open")


def _torch():
    try:
        import torch
    except ImportError:
        raise Error("fieldkit.nefi step helpers: expected torch (they are torch code), but it is "
                    "not installed") from None
    return torch


def _number(x):
    """x as a float when it is one real number (a Python or numpy scalar, a
    0-d array or tensor; not a bool), else None."""
    torch = _torch()
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, float, np.integer, np.floating)):
        return float(x)
    if isinstance(x, torch.Tensor) and x.dim() == 0 and x.dtype != torch.bool and \
            not x.is_complex():
        return float(x)
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iuf":
        return float(x)
    return None


def _spacing(where, spacing):
    if _number(spacing) is not None:
        spacing = (spacing,)
    # A string is refused, not read as one size per character ("12").
    h = None if isinstance(spacing, (str, bytes)) or not hasattr(spacing, "__iter__") else \
        tuple(_number(s) for s in spacing)
    if h is None or None in h:
        raise Error(f"{where}: expected spacing as one positive cell size per grid axis, got "
                    f"{spacing!r}")
    if not 1 <= len(h) <= 3 or not all(math.isfinite(s) and s > 0 for s in h):
        raise Error(f"{where}: expected spacing as 1 to 3 positive cell sizes, got {spacing!r}")
    return h


def _boundaries(where, boundary, ndim, allowed):
    b = [boundary] * ndim if isinstance(boundary, str) else \
        list(boundary) if isinstance(boundary, (list, tuple)) else None
    if b is None or len(b) != ndim or any(x not in allowed for x in b):
        raise Error(f"{where}: expected boundary one of {', '.join(allowed)} (one for all "
                    f"{ndim} axes or one per axis), got {boundary!r}")
    return b


def _grid_of(where, u, h):
    torch = _torch()
    if not isinstance(u, torch.Tensor) or not u.is_floating_point():
        raise Error(f"{where}: expected a floating-point torch tensor, got "
                    f"{type(u).__name__}" + (f" of {u.dtype}" if hasattr(u, "dtype") else ""))
    if u.dim() < len(h):
        raise Error(f"{where}: expected a state with at least {len(h)} axes (the grid last), "
                    f"got shape {tuple(u.shape)}")
    for a in range(len(h)):
        if u.shape[u.dim() - len(h) + a] < 2:
            raise Error(f"{where}: expected at least 2 cells along each grid axis, got shape "
                        f"{tuple(u.shape)}")
    return [u.dim() - len(h) + a for a in range(len(h))]


def _coefficient(where, name, value, u):
    """A number, an array or a tensor broadcastable to u's shape, as a tensor
    of u's dtype and device (grad kept)."""
    torch = _torch()
    expected = f"{where}: expected {name} a number, array or tensor broadcastable to the " \
        f"state's shape {tuple(u.shape)}, got "
    try:  # straight to u's dtype: a float32 detour would round a number
        t = value.to(dtype=u.dtype, device=u.device) if isinstance(value, torch.Tensor) else \
            torch.as_tensor(value, dtype=u.dtype, device=u.device)
    except (TypeError, ValueError, RuntimeError):
        raise Error(expected + type(value).__name__) from None
    try:
        fits = torch.broadcast_shapes(t.shape, u.shape) == u.shape
    except RuntimeError:
        fits = False
    if not fits:
        raise Error(expected + f"shape {tuple(t.shape)}")
    return t.expand(u.shape)


def _check_finite(where, name, t):
    """Every value of t finite (a NaN would spread through the state); a check
    on a CUDA tensor would wait for the device at every step: not there."""
    torch = _torch()
    if t.device.type != "cpu":
        return
    with torch.no_grad():
        bad = ~torch.isfinite(t)
        if bool(bad.any()):
            raise Error(f"{where}: expected a finite {name} in every cell, got "
                        f"{float(t[bad].flatten()[0])!r}")


def _check_diffusivity(where, D):
    """D >= 0 and finite, as the built-in operator demands. A check on a CUDA
    tensor would wait for the device at every step: there stable_dt checks."""
    torch = _torch()
    if D.device.type != "cpu":
        return
    with torch.no_grad():
        bad = ~(torch.isfinite(D) & (D >= 0))
        if bool(bad.any()):
            raise Error(f"{where}: expected a diffusivity >= 0 and finite in every cell, got "
                        f"{float(D[bad].flatten()[0])!r}")


def _neighbours(u, axis, mode):
    """(lower, upper) neighbour of every cell along axis: wrapped (periodic),
    the cell itself (closed: zero flux) or 0 (dirichlet) past an edge."""
    torch = _torch()
    if mode == "periodic":
        return torch.roll(u, 1, axis), torch.roll(u, -1, axis)
    n = u.shape[axis]
    if mode == "closed":
        lo_edge, hi_edge = u.narrow(axis, 0, 1), u.narrow(axis, n - 1, 1)
    else:
        lo_edge = torch.zeros_like(u.narrow(axis, 0, 1))
        hi_edge = lo_edge
    return (torch.cat([lo_edge, u.narrow(axis, 0, n - 1)], axis),
            torch.cat([u.narrow(axis, 1, n - 1), hi_edge], axis))


def laplacian(u, spacing, boundary="closed"):
    """The sum over the grid axes of u's second difference / h^2, on u's last
    len(spacing) axes. ``boundary`` (one, or one per axis): "closed" (zero
    flux: the edge cell is its own outer neighbour; the sum of the result is
    0), "periodic" or "dirichlet" (u = 0 one cell past the edge). Symmetric
    in every mode, as an energy argument needs."""
    h = _spacing("laplacian", spacing)
    axes = _grid_of("laplacian", u, h)
    modes = _boundaries("laplacian", boundary, len(h), ("closed", "periodic", "dirichlet"))
    out = None
    for axis, ha, mode in zip(axes, h, modes):
        lo, hi = _neighbours(u, axis, mode)
        term = (lo - 2 * u + hi) / (ha * ha)
        out = term if out is None else out + term
    return out


def wave_step(state, c, dt, spacing, boundary="dirichlet", source=None):
    """One leapfrog step of u_tt = c^2 lap(u) + s: ``state`` is (u, u_prev),
    the result (u_next, u) with u_next = 2 u - u_prev + dt^2 (c^2 lap(u) + s).
    ``c`` the speed (a number or a tensor of the grid's shape, which may be
    the fitted field); ``boundary`` as laplacian's ("dirichlet": a rigid
    box). Second order in dt and h; stable while dt < stable_dt(spacing,
    c=c) (take safety < 1: at the bound itself a periodic axis of an even
    count grows its checkerboard linearly). wave_energy(...) stays constant
    to rounding at any dt; under the bound it is also positive."""
    where = "wave_step"
    u, prev, h, _ = _wave_state(where, state, spacing)
    dt = _positive_dt(where, dt)
    speed = _coefficient(where, "c", c, u)
    accel = speed * speed * laplacian(u, h, boundary)
    if source is not None:
        accel = accel + _coefficient(where, "source", source, u)
    return 2 * u - prev + dt * dt * accel, u


def _wave_state(where, state, spacing):
    """(u, u_prev, spacing, grid axes) of a leapfrog state, checked."""
    torch = _torch()
    if not isinstance(state, (tuple, list)) or len(state) != 2:
        raise Error(f"{where}: expected state as (u, u_prev), got {type(state).__name__}")
    u, prev = state
    h = _spacing(where, spacing)
    axes = _grid_of(where, u, h)
    if not isinstance(prev, torch.Tensor) or tuple(prev.shape) != tuple(u.shape) or \
            prev.device != u.device or prev.dtype != u.dtype:
        raise Error(f"{where}: expected u_prev a tensor of u's shape {tuple(u.shape)}, dtype "
                    f"{u.dtype} and device {u.device}, got " +
                    (f"{tuple(prev.shape)}, {prev.dtype} on {prev.device}"
                     if isinstance(prev, torch.Tensor) else type(prev).__name__))
    return u, prev, h, axes


def wave_energy(state, c, dt, spacing, boundary="dirichlet"):
    """The energy leapfrog conserves, of wave_step's state (u, u_prev): the
    kinetic part sum(((u - u_prev) / (c dt))^2) / 2 plus the potential part
    <u, -lap(u_prev)> / 2, times the cell volume, per batch row (the grid
    axes summed). Constant to rounding over source-free steps while
    dt < stable_dt(spacing, c=c); needs c > 0 in every cell."""
    where = "wave_energy"
    u, prev, h, axes = _wave_state(where, state, spacing)
    dt = _positive_dt(where, dt)
    speed = _coefficient(where, "c", c, u)
    if bool((speed.detach() <= 0).any()):
        raise Error(f"{where}: expected a wave speed c > 0 in every cell (the kinetic part "
                    f"divides by it), got {float(speed.detach().min())!r}")
    kinetic = ((u - prev) / (speed * dt)) ** 2
    potential = -u * laplacian(prev, h, boundary)
    return 0.5 * (kinetic + potential).sum(dim=axes) * math.prod(h)


def ricker(t, f0, t0=None):
    """The Ricker wavelet (1 - 2 a) exp(-a), a = (pi f0 (t - t0))^2, of peak
    frequency f0, centred at t0 (default 1 / f0, where it starts near 0):
    a seismic or acoustic source's time signature, 1 at t0."""
    torch = _torch()
    f = _number(f0)
    if f is None or not math.isfinite(f) or f <= 0:
        raise Error(f"ricker: expected a positive peak frequency f0, got {f0!r}")
    f0 = f
    if t0 is None:
        t0 = 1.0 / f0
    elif not isinstance(t0, torch.Tensor) and (_number(t0) is None or
                                               not math.isfinite(_number(t0))):
        raise Error(f"ricker: expected t0 a finite number (or a tensor), got {t0!r}")
    try:
        t = t if isinstance(t, torch.Tensor) else torch.as_tensor(t, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        raise Error(f"ricker: expected times t as numbers, an array or a tensor, got "
                    f"{type(t).__name__}") from None
    a = (math.pi * f0 * (t - t0)) ** 2
    return (1 - 2 * a) * torch.exp(-a)


def _positive_dt(where, dt):
    """dt checked positive and finite: a float, or a 0-d tensor that requires
    grad as it is (it keeps its gradient; the caller's arithmetic needs it on
    the state's device)."""
    value = _number(dt)
    if value is None or not math.isfinite(value) or value <= 0:
        raise Error(f"{where}: expected dt a positive number, got {dt!r}")
    return dt if isinstance(dt, _torch().Tensor) and dt.requires_grad else value


def _velocity(where, velocity, u, ndim):
    """One component per grid axis, each broadcast to u's shape: a sequence of
    numbers or tensors, or one tensor whose first axis is the components."""
    torch = _torch()
    if velocity is None:
        return [None] * ndim
    if isinstance(velocity, np.ndarray):
        velocity = torch.as_tensor(velocity)
    if isinstance(velocity, torch.Tensor):
        if velocity.dim() == 0 or velocity.shape[0] != ndim:
            raise Error(f"{where}: expected the velocity's first axis to be its {ndim} "
                        f"components, got shape {tuple(velocity.shape)}")
        velocity = list(velocity.unbind(0))
    elif _number(velocity) is not None or not isinstance(velocity, (list, tuple)) or \
            len(velocity) != ndim:
        raise Error(f"{where}: expected the velocity as one entry per grid axis ({ndim}): a "
                    f"list, a tuple or a tensor, got {velocity!r}")
    out = [_coefficient(where, "each velocity component", v, u) for v in velocity]
    for component in out:
        _check_finite(where, "velocity", component)
    return out


def _faces(where, u, h, velocity, diffusivity, boundary):
    """Per grid axis: (axis, h, mode, rate) where rate(c) gives each cell's
    (flux through its upper face, flux through its lower face), positive
    toward higher index, for the upwind advection and harmonic-mean
    diffusion of the state c. One closure per axis keeps the coefficients'
    face values computed once per step."""
    torch = _torch()
    axes = _grid_of(where, u, h)
    modes = _boundaries(where, boundary, len(h), ("closed", "open", "periodic"))
    v = _velocity(where, velocity, u, len(h))
    D = None if diffusivity is None else _coefficient(where, "diffusivity", diffusivity, u)
    if D is not None:
        _check_diffusivity(where, D)
    out = []
    for a, (axis, ha, mode) in enumerate(zip(axes, h, modes)):
        n = u.shape[axis]

        # A face's two cells, over the faces between cells (and, periodic,
        # the face from the last cell to the first). Bound now: closures in
        # a loop would otherwise all see the last axis.
        def upper_of(t, axis=axis, n=n, mode=mode):
            return torch.roll(t, -1, axis) if mode == "periodic" else t.narrow(axis, 1, n - 1)

        def lower_of(t, axis=axis, n=n, mode=mode):
            return t if mode == "periodic" else t.narrow(axis, 0, n - 1)
        vf = None if v[a] is None else 0.5 * (lower_of(v[a]) + upper_of(v[a]))
        Df = None
        if D is not None:
            lo, hi = lower_of(D), upper_of(D)
            # The harmonic mean 2 a b / (a + b), as the built-in operator
            # takes it: where a == b (both 0 included) the value a with half
            # the gradient to each cell, so that a blocked face can open.
            equal = lo == hi
            s = torch.where(equal, torch.ones_like(lo), lo + hi)
            Df = torch.where(equal, 0.5 * (lo + hi), 2 * lo * (hi / s))
        out.append((axis, ha, mode, n, vf, Df, v[a], lower_of, upper_of))
    return out


def _divergence(c, faces):
    """-div F of c: sum over axes of (F_lower - F_upper) / h per cell."""
    torch = _torch()
    total = None
    for axis, ha, mode, n, vf, Df, vcell, lower_of, upper_of in faces:
        lo, hi = lower_of(c), upper_of(c)
        flux = torch.zeros_like(lo)
        if vf is not None:
            # Upwind as central minus |v| / 2 times the jump: the same values,
            # and at v_f = 0 the derivative in v_f is the mean of the two
            # one-sided ones (so a fit of the flow can start from rest).
            flux = flux + 0.5 * vf * (lo + hi) - 0.5 * vf.abs() * (hi - lo)
        if Df is not None:
            flux = flux - Df * (hi - lo) / ha
        if mode == "periodic":
            upper_flux, lower_flux = flux, torch.roll(flux, 1, axis)
        else:
            edge = torch.zeros_like(c.narrow(axis, 0, 1))
            lo_edge, hi_edge = edge, edge
            if mode == "open" and vcell is not None:
                # Outflow leaves with the edge cell's own velocity; inflow
                # brings none; no diffusive flux.
                v0, vn = vcell.narrow(axis, 0, 1), vcell.narrow(axis, n - 1, 1)
                lo_edge = 0.5 * (v0 - v0.abs()) * c.narrow(axis, 0, 1)
                hi_edge = 0.5 * (vn + vn.abs()) * c.narrow(axis, n - 1, 1)
            upper_flux = torch.cat([flux, hi_edge], axis)
            lower_flux = torch.cat([lo_edge, flux], axis)
        term = (lower_flux - upper_flux) / ha
        total = term if total is None else total + term
    return total


def advection_diffusion_step(c, dt, spacing, velocity=None, diffusivity=None,
                             boundary="closed", source=None):
    """One explicit Euler step of c_t + div(v c) = div(D grad c) + s in finite
    volumes: c_next = c + dt (-div F + s). Each face between two cells carries
    the upwind flux of v_f, the mean of its cells' velocities, and
    -D_f (c_hi - c_lo) / h, D_f the harmonic mean of its cells' (a cell of
    D = 0 blocks the flux). ``velocity``: one entry per grid axis (a number or
    a tensor broadcastable to c), or one tensor whose first axis is the
    components; ``diffusivity`` a number or a tensor; either may be the
    fitted field. ``boundary`` (one, or one per axis): "closed" (no flux:
    without a source, sum(c) is conserved to rounding), "open" (outflow
    leaves with the edge cell's velocity, inflow brings none, no diffusive
    flux) or "periodic". First order and monotone: while dt <=
    stable_dt(spacing, velocity=..., diffusivity=..., boundary=...) every
    cell's new value mixes old ones with non-negative weights, so c stays
    >= 0 from a non-negative start."""
    where = "advection_diffusion_step"
    h = _spacing(where, spacing)
    dt = _positive_dt(where, dt)
    if velocity is None and diffusivity is None:
        raise Error(f"{where}: expected a velocity, a diffusivity or both, got neither")
    faces = _faces(where, c, h, velocity, diffusivity, boundary)
    rate = _divergence(c, faces)
    if source is not None:
        rate = rate + _coefficient(where, "source", source, c)
    return c + dt * rate


def stable_dt(spacing, c=None, velocity=None, diffusivity=None, boundary=None, safety=1.0):
    """The largest stable time step, times ``safety``.

    With ``c`` (wave_step): 1 / (max|c| sqrt(sum 1 / h^2)), leapfrog's bound
    for the largest eigenvalue 4 sum 1 / h^2 of -lap; ``boundary`` unused.

    With ``velocity`` and/or ``diffusivity`` (advection_diffusion_step, same
    arguments, boundary default "closed"): 1 / max over cells of the rate
    at which the step takes a cell's own tracer away (its faces' upwind
    outflow / h plus D_f / h^2 each), the bound under which the step is
    monotone; computed from the coefficients' values, on their own grid
    (an axis they are constant along taken as 3 cells: on a grid of 2 cells
    there, the bound found is smaller than needed, never larger). Refuses a
    diffusivity below 0 or not finite, wherever it lives."""
    torch = _torch()
    where = "stable_dt"
    h = _spacing(where, spacing)
    factor = _number(safety)
    if factor is None or not 0 < factor or not math.isfinite(factor):
        raise Error(f"{where}: expected safety a positive number, got {safety!r}")
    safety = factor
    wave = c is not None
    transport = velocity is not None or diffusivity is not None
    if wave == transport:
        raise Error(f"{where}: expected either c (a wave) or a velocity and/or diffusivity (a "
                    f"tracer), got " + ("both" if wave else "neither"))
    with torch.no_grad():
        if wave:
            try:
                cmax = float(torch.as_tensor(_detached(c), dtype=torch.float64).abs().max())
            except (TypeError, ValueError, RuntimeError):
                raise Error(f"{where}: expected a wave speed c as a number, an array or a "
                            f"tensor, got {c!r}") from None
            if not cmax > 0 or not math.isfinite(cmax):
                raise Error(f"{where}: expected a wave speed c with a finite, positive largest "
                            f"value, got {cmax!r}")
            return safety / (cmax * math.sqrt(sum(1 / (s * s) for s in h)))
        if isinstance(velocity, (str, bytes, dict)):
            raise Error(f"{where}: expected the velocity as one entry per grid axis ({len(h)}): "
                        f"a list, a tuple or a tensor, got {velocity!r}")
        v = _detached(velocity)
        if isinstance(v, torch.Tensor):
            if v.dim() == 0 or v.shape[0] != len(h):
                raise Error(f"{where}: expected the velocity's first axis to be its {len(h)} "
                            f"components, got shape {tuple(v.shape)}")
            v = list(v.unbind(0))
        parts = ([] if diffusivity is None else [_detached(diffusivity)]) + \
            ([] if v is None or _number(v) is not None else list(v))
        try:
            shape = torch.broadcast_shapes(*[torch.as_tensor(x).shape for x in parts])
        except RuntimeError:
            raise Error(f"{where}: expected the velocity's components and the diffusivity to "
                        f"broadcast together, got shapes "
                        f"{[tuple(torch.as_tensor(x).shape) for x in parts]}") from None
        # The coefficients' own grid; an axis they are constant along (or a
        # number's) taken as 3 cells, where a middle cell has both faces.
        shape = (1,) * max(0, len(h) - len(shape)) + tuple(shape)
        shape = shape[:-len(h)] + tuple(3 if s == 1 else s for s in shape[-len(h):])
        probe = torch.zeros(shape, dtype=torch.float64)
        faces = _faces(where, probe, h, v, _detached(diffusivity),
                       "closed" if boundary is None else boundary)
        # The loss rate of each cell: -div F of a unit tracer at that cell
        # alone, read off the faces' coefficients directly.
        loss = torch.zeros_like(probe)
        for axis, ha, mode, n, vf, Df, vcell, lower_of, upper_of in faces:
            up = torch.zeros_like(lower_of(probe))  # through each face, from its lower cell
            down = torch.zeros_like(up)  # through each face, from its upper cell
            if vf is not None:
                up = up + vf.clamp(min=0) / ha
                down = down + (-vf).clamp(min=0) / ha
            if Df is not None:
                up = up + Df / (ha * ha)
                down = down + Df / (ha * ha)
            if mode == "periodic":
                loss = loss + up + torch.roll(down, 1, axis)
            else:
                edge = torch.zeros_like(probe.narrow(axis, 0, 1))
                lo_edge, hi_edge = edge, edge
                if mode == "open" and vcell is not None:
                    lo_edge = (-vcell.narrow(axis, 0, 1)).clamp(min=0) / ha
                    hi_edge = vcell.narrow(axis, n - 1, 1).clamp(min=0) / ha
                loss = loss + torch.cat([up, hi_edge], axis) + torch.cat([lo_edge, down], axis)
        worst = float(loss.max())
        if not math.isfinite(worst):
            raise Error(f"{where}: expected finite velocities and diffusivities, got a rate of "
                        f"{worst!r}")
        return math.inf if worst == 0 else safety / worst


def _detached(x):
    torch = _torch()
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64)
    if _number(x) is not None:
        return _number(x)
    if isinstance(x, np.ndarray):
        return torch.as_tensor(x, dtype=torch.float64)
    return [v.detach().to(torch.float64) if isinstance(v, torch.Tensor) else v for v in x]
