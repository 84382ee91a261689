"""TimeStepper: a forward model that is a time loop the caller writes with
torch operations (the reference's TimeStepper with user dynamics), whose
gradient replays the loop in blocks so that its memory grows as the square
root of the step count."""
import math

import numpy as np

from ._core import Error
from ._host import host_array


def _torch():
    try:
        import torch
    except ImportError:
        raise Error("TimeStepper: expected torch (the steps are torch code), but it is not "
                    "installed") from None
    return torch


def _as_tuple(state):
    return tuple(state) if isinstance(state, (tuple, list)) else (state,)


def _like(parts, state):
    """parts in the caller's form of `state` (one tensor or a tuple)."""
    return parts if isinstance(state, (tuple, list)) else parts[0]


def _whole_number(v):
    """v is a whole number (2 or 2.0, a 0-d array or tensor of one; not a
    bool, NaN, inf or None)."""
    if getattr(v, "ndim", None) == 0 and hasattr(v, "item"):
        v = v.item()
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return False
    return math.isfinite(v) and v == int(v)


def _values(x, where="TimeStepper", what="real values"):
    """x's values as a float64 numpy array: a tensor (one that requires grad,
    or on a device, too) or anything numpy reads. Complex values are refused
    by `where`, naming `what` was expected (the cast kept the real part
    alone, with only numpy's warning)."""
    if hasattr(x, "detach"):
        x = host_array(x)
    a = np.asarray(x)
    if np.iscomplexobj(a):
        raise Error(f"{where}: expected {what}, got complex values")
    return np.asarray(a, dtype=np.float64)


class TimeStepper:
    """A forward model that is a loop of ``n_steps`` steps written with torch:
    ``step(state, field, k)`` returns the state after step k + 1 (``state``
    one tensor or a tuple of them, as ``init`` gives it); ``init(field)``
    gives the state before the first step (default: the field itself);
    ``observe(state)`` is what is measured (default: the state, or its first
    tensor), after each step count in ``observe_at`` (default: n_steps
    alone). Called on a numpy field it returns the observations stacked,
    (len(observe_at), *observed shape), in the steps' dtype (the field is
    given to them in float64). Steps must be deterministic and must not
    change the state they are given in place: the gradient replays them.

    ``vjp(field, g)`` is the gradient of <observations, g> in the field. The
    loop is replayed in blocks of ``checkpoint_every`` steps (default
    ceil(sqrt(n_steps))): the forward keeps the state at each block's start,
    and the backward re-runs one block at a time with autograd, last block
    first, so it holds about n_steps / checkpoint_every states and one
    block's graph, where autograd through the whole loop holds every step's
    graph. Called first at the same field (as a fit does), the gradient
    reuses that run's block starts, so a fit step runs the loop twice up to
    the last observation. Pass it to from_forward as the forward (``vjp`` is
    taken from it).

    Several fields (from_forward's prior a dict: an initial state and a
    coefficient, say): the steps, ``init`` (then required) and the call take
    a dict {name: field}, and ``vjp`` returns a dict of gradients.

    ``params``: torch tensors (leaves with requires_grad) that the steps read,
    such as a reaction rate: ``vjp`` also leaves their gradients in
    ``param_grads``, and from_forward fits them with the field (giving them
    is the request: no ``trainable=True`` needed, unlike a torch module's;
    the values found in result["operator_parameters"], and left in the
    tensors).

    ``device``: the torch device the steps run on ("cuda", "cuda:1"; default
    the params' device, else the CPU). The fields go there in float64 each
    call, and the observations and gradients come back as numpy arrays;
    params must already live there."""

    def __init__(self, step, n_steps, observe=None, observe_at=None, init=None,
                 checkpoint_every=None, params=(), device=None):
        if not callable(step):
            raise Error(f"TimeStepper: expected a callable step(state, field, k), got "
                        f"{type(step).__name__}")
        if not _whole_number(n_steps) or n_steps < 1:
            raise Error(f"TimeStepper: expected n_steps an integer >= 1, got {n_steps!r}")
        self.n_steps = int(n_steps)
        try:
            at = [self.n_steps] if observe_at is None else [
                int(k) if not isinstance(k, (bool, np.bool_)) and int(k) == k else None
                for k in observe_at]
        except (TypeError, ValueError, OverflowError):
            at = [None]
        if not at or None in at or any(b <= a for a, b in zip(at, at[1:])) or at[0] < 1 or \
                at[-1] > self.n_steps:
            raise Error(f"TimeStepper: expected observe_at increasing step counts in [1, "
                        f"{self.n_steps}], got {observe_at!r}")
        self.observe_at = at
        every = math.ceil(math.sqrt(self.n_steps)) if checkpoint_every is None else \
            checkpoint_every
        if not _whole_number(every) or every < 1:
            raise Error(f"TimeStepper: expected checkpoint_every an integer >= 1, got "
                        f"{checkpoint_every!r}")
        self.checkpoint_every = int(every)
        self._step, self._init, self._observe = step, init, observe
        torch = _torch()
        if isinstance(params, torch.Tensor):  # iterating it would give its rows
            raise Error("TimeStepper: expected params as a list of tensors, got one tensor "
                        "(pass [tensor])")
        self.params = list(params)
        for p in self.params:
            if not (isinstance(p, torch.Tensor) and p.is_leaf and p.requires_grad and
                    p.is_floating_point()):
                raise Error("TimeStepper: expected params to be floating-point torch tensors "
                            "with requires_grad=True (leaves the steps read), got "
                            f"{type(p).__name__}")
        try:
            # Resolved by a tensor made there: "cuda" becomes "cuda:N" (the
            # current device), which is what its tensors report; a device
            # torch cannot use is refused here, not at the first step.
            self.device = torch.empty(0, device=device).device if device is not None else \
                self.params[0].device if self.params else torch.device("cpu")
            if self.device.type == "meta":  # holds no values to step
                raise TypeError
        except (RuntimeError, TypeError, AssertionError):
            raise Error(f"TimeStepper: expected device a torch device this torch can use "
                        f"(\"cpu\", \"cuda\", \"cuda:1\"), got {device!r}") from None
        for p in self.params:
            if p.device != self.device:
                raise Error(f"TimeStepper: expected every param on the steps' device "
                            f"{self.device}, got one on {p.device}")
        self.param_grads = [np.zeros(tuple(p.shape)) for p in self.params]
        # (field, block length and params; block starts; observations' size) of
        # the last call
        self._last = None

    def _start(self, field):
        if self._init is not None:
            return self._init(field)
        if isinstance(field, dict):
            raise Error(f"TimeStepper: expected init= to make the state from several fields "
                        f"({sorted(field)}), got none")
        return field

    def _measure(self, state):
        if self._observe is not None:
            return self._observe(state)
        return _as_tuple(state)[0]

    def _field(self, x, grad):
        """x (an array or tensor, or a dict of them for several fields) as f64
        tensors (a tensor that requires grad taken by value)."""
        torch = _torch()
        if isinstance(x, dict):
            return {k: self._field(v, grad) for k, v in x.items()}
        return torch.tensor(_values(x), dtype=torch.float64, device=self.device,
                            requires_grad=grad)

    def _run(self, x):
        """The observations and the state at each block's start (no graph),
        up to the last observation."""
        torch = _torch()
        B, out, starts = self.checkpoint_every, [], []
        with torch.no_grad():
            f = self._field(x, False)
            state = self._start(f)
            for k in range(self.observe_at[-1]):
                if k % B == 0:
                    starts.append(state)
                state = self._step(state, f, k)
                if k + 1 in self.observe_at:
                    out.append(self._measure(state))
        return torch.stack(out), starts

    @staticmethod
    def _arrays(x):
        """The field's arrays by name ("" for a single field), f64 copies."""
        items = x.items() if isinstance(x, dict) else [("", x)]
        return {k: np.array(_values(v), dtype=np.float64, copy=True) for k, v in items}

    def _key(self, x):
        """What a run's block starts depend on."""
        return (self._arrays(x), self.checkpoint_every,
                [p.detach().cpu().numpy().copy() for p in self.params])

    def _same(self, key, x):
        x0, every, values = key
        x1 = self._arrays(x)
        return every == self.checkpoint_every and x0.keys() == x1.keys() and \
            all(x0[k].shape == x1[k].shape and np.array_equal(x0[k], x1[k]) for k in x0) and \
            all(np.array_equal(v, p.detach().cpu().numpy())
                for v, p in zip(values, self.params))

    def __call__(self, x):
        """The observations of field x (numpy; a dict of arrays for several
        fields), stacked, in the steps' dtype."""
        y, starts = self._run(x)
        # A fit asks for the gradient at the field it just ran: keep the
        # starts (and the observations' size, which vjp's g must have).
        self._last = (self._key(x), starts, y.numel())
        return y.cpu().numpy()

    def vjp(self, x, g):
        """The gradient of <observations of x, g> in x, by blocks (g in the
        observations' shape, or the data's: the same values), a dict by
        field for several fields; the params' gradients go to
        param_grads."""
        torch = _torch()
        g = torch.tensor(_values(g), dtype=torch.float64, device=self.device)
        if self._last is not None and self._same(self._last[0], x):
            starts, size = self._last[1], self._last[2]
        else:
            y, starts = self._run(x)
            size = y.numel()
        if g.numel() != size:
            raise Error(f"TimeStepper.vjp: expected g with the observations' {size} values, got "
                        f"shape {tuple(g.shape)}")
        g = g.reshape(len(self.observe_at), -1)
        B = self.checkpoint_every
        field = self._field(x, True)
        fields = list(field.values()) if isinstance(field, dict) else [field]
        grad = [torch.zeros_like(f) for f in fields]
        pgrad = [torch.zeros_like(p) for p in self.params]
        lam = None  # the adjoint of the state at the end of the block being run
        for b in range(len(starts) - 1, -1, -1):
            lo, hi = b * B, min(self.observe_at[-1], (b + 1) * B)
            with torch.enable_grad():
                # Block 0 replays the field's own path into the start; the
                # others start from leaves (integer parts of a state take none).
                parts = () if b == 0 else tuple(
                    t.detach().requires_grad_(t.is_floating_point())
                    for t in _as_tuple(starts[b]))
                state = self._start(field) if b == 0 else _like(parts, starts[b])
                total = fields[0].new_zeros(())
                for k in range(lo, hi):
                    state = self._step(state, field, k)
                    if k + 1 in self.observe_at:
                        row = g[self.observe_at.index(k + 1)]
                        total = total + (self._measure(state).reshape(-1) * row).sum()
                if lam is not None:
                    total = total + sum((s * l).sum() for s, l in zip(_as_tuple(state), lam)
                                        if l is not None)
                leaves = [t for t in parts if t.requires_grad]
                if not total.requires_grad:  # nothing observed depends on this block
                    lam = tuple(torch.zeros_like(t) if t.requires_grad else None for t in parts)
                    continue
                d = torch.autograd.grad(total, leaves + fields + self.params,
                                        allow_unused=True)
            nl, nf = len(leaves), len(fields)
            for i, v in enumerate(d[nl + nf:]):
                if v is not None:
                    pgrad[i] = pgrad[i] + v
            for i, v in enumerate(d[nl:nl + nf]):
                if v is not None:
                    grad[i] = grad[i] + v
            found, lam = iter(d[:nl]), []
            for t in parts:
                v = next(found) if t.requires_grad else None
                lam.append(torch.zeros_like(t) if t.requires_grad and v is None else v)
        self.param_grads = [host_array(v).astype(np.float64) for v in pgrad]
        if isinstance(field, dict):
            return {k: host_array(v) for k, v in zip(field, grad)}
        return host_array(grad[0])
