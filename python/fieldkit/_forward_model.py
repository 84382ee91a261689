"""The caller's forward model as a from_forward solve calls it: on lists of
numpy f64 arrays, one per field, whatever the caller wrote it with (a
matrix, numpy with an adjoint or a vjp, torch autograd, a built-in
operator), and the dry run that checks it before anything is solved."""
import numpy as np

from ._core import Error
from ._host import host_array
from . import _operators
from ._time_stepper import TimeStepper


def _stack_complex(y):
    """Complex values as (2, *shape) real and imaginary parts."""
    y = np.asarray(y)
    if np.iscomplexobj(y):
        return np.stack([y.real, y.imag]).astype(np.float64)
    return y.astype(np.float64)


def check_output_shape(got, data_shape, builtin=None):
    """A model's output must have the measurement's shape (complex values as
    (2, *shape)), up to axes of length 1: the same count in another layout
    would be fitted scrambled. A built-in's output is right by construction:
    there the measurement is named as what does not fit."""
    if [n for n in got if n != 1] != [n for n in data_shape if n != 1]:
        if builtin is not None:
            raise Error(f"from_forward: expected a measurement of the built-in {builtin}'s output "
                        f"shape {tuple(got)} (complex values as real and imaginary parts, "
                        f"stacked first), got {tuple(data_shape)}")
        raise Error(f"from_forward: expected forward to return the measurement's shape "
                    f"{tuple(data_shape)} (complex values as real and imaginary parts, stacked "
                    f"first), got {tuple(got)}")


def _unstack(g, complex_out):
    return g[0] + 1j * g[1] if complex_out else g


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


class _Model:
    """forward(xs) -> stacked real output and vjp(xs, g) -> one gradient per
    field, on lists of numpy f64 arrays (one per field, in `names` order),
    from what the caller gave. The caller's functions see one array for a
    single field and a dict {name: array} for several."""

    def __init__(self, forward, shape, names, adjoint, vjp, homogeneity, values=None,
                 trainable=False):
        """values: per field, the (head, lo, hi) its prior gives it
        (prior_values); the model is only ever called inside them.
        trainable: a torch module's parameters are fitted (else frozen)."""
        self.shape, self.names, self.homogeneity = tuple(shape), list(names), homogeneity
        self.values = list(values) if values else [("unconstrained", 0.0, 1.0)] * len(names)
        self.kind, self.complex_out, self.single_precision = None, False, False
        self.several = len(self.names) > 1
        # A torch module's trainable parameters, their values as given, and
        # their last gradients; the dtype its inputs take (a float32 nn.Linear
        # takes float32, frozen or not).
        self.params, self.start, self._param_grads = [], [], []
        self._input_dtype = None
        torch = _torch()
        if trainable and not (torch is not None and isinstance(forward, torch.nn.Module)):
            raise Error("from_forward: expected trainable=True only with a torch.nn.Module "
                        "forward (a TimeStepper's params= are fitted as given), got "
                        f"{type(forward).__name__}")
        if isinstance(forward, _operators.Operator):
            # Built in: the solve runs it natively; the dry run checks shapes.
            if self.several:
                raise Error("from_forward: expected a callable forward for several fields, "
                            f"got the built-in operator {forward.kind}")
            if homogeneity is not None and homogeneity != forward.homogeneity:
                raise Error(f"from_forward: expected no homogeneity for the built-in operator "
                            f"{forward.kind} (it declares {forward.homogeneity}), got "
                            f"{homogeneity}")
            self.kind, self.native = "native", forward
            self.homogeneity, self.complex_out = forward.homogeneity, forward.complex_out
            self._f, self._vjp = forward, forward.vjp
            return
        if hasattr(forward, "shape") and not callable(forward):
            # A copy, as the data are: a view kept the caller's array, and
            # editing it afterwards changed every later solve silently (the
            # noise and start decisions made with the old one).
            a = np.array(forward, copy=True)
            if a.ndim != 2:
                raise Error(f"from_forward: expected a matrix (2-D) or a callable as forward, "
                            f"got an array of shape {a.shape}")
            if self.several:
                raise Error("from_forward: expected a callable forward for several fields, "
                            "got a matrix")
            if int(np.prod(self.shape)) != a.shape[1]:
                raise Error(f"from_forward: expected a field of {a.shape[1]} cells (the matrix's "
                            f"columns), got shape {self.shape}")
            self.kind, self.homogeneity = "matrix", 1.0
            self.complex_out = np.iscomplexobj(a)
            self._matrix = a
            self._f = lambda x: a @ x.ravel()
            self._vjp = lambda x, g: np.real(a.conj().T @ g).reshape(self.shape)
            return
        if not callable(forward):
            raise Error(f"from_forward: expected a callable or a matrix as forward, "
                        f"got {type(forward).__name__}")
        if isinstance(forward, TimeStepper) and adjoint is None and vjp is None:
            vjp = forward.vjp  # its gradient by blocks, checked by the dry run
            if forward.params:  # fitted with the field, as a torch module's
                self.params = forward.params
                self.start = [p.detach().cpu().numpy().astype(np.float64)
                              for p in self.params]
                stepper = forward

                def vjp(x, g):
                    dx = stepper.vjp(x, g)
                    self._param_grads = list(stepper.param_grads)
                    return dx
        if adjoint is not None and vjp is not None:
            raise Error("from_forward: expected adjoint (a linear model) or vjp (a nonlinear "
                        "one), got both")
        if adjoint is not None and self.several:
            raise Error("from_forward: expected vjp= (or torch) for several fields, got "
                        "adjoint= (an adjoint maps to one field)")
        if adjoint is not None:
            self.kind, self.homogeneity = "adjoint", 1.0 if homogeneity is None else homogeneity
            self._f = lambda x: np.asarray(forward(x))
            self._vjp = lambda x, g: np.real(np.asarray(adjoint(g)))
        elif vjp is not None:
            self.kind = "vjp"
            self._f = lambda x: np.asarray(forward(x))
            self._vjp = lambda x, g: vjp(x, g)
        else:
            self.kind = "torch"
            self._forward = forward
            self._f = self._torch_forward
            self._vjp = self._torch_vjp
            if torch is not None and isinstance(forward, torch.nn.Module):
                first = next(forward.parameters(), None)
                self._input_dtype = None if first is None else first.dtype
                if trainable:
                    self.params = [p for p in forward.parameters() if p.requires_grad]
                    self.start = [p.detach().cpu().numpy().astype(np.float64)
                                  for p in self.params]
        # A probe for the output's type, at a constant inside each prior; the
        # model's own failure named as a solve names it.
        try:
            y = self._f(self._packed(self._inputs(
                [np.full(self.shape, _inside(v)) for v in self.values])))
        except (Error, KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:
            raise Error(f"from_forward (the model at a constant field inside its prior): "
                        f"expected a model call that succeeds, got {type(e).__name__}: "
                        f"{e}") from e
        self.complex_out = self.complex_out or np.iscomplexobj(y)

    def _packed(self, xs):
        """The fields as the caller's functions take them."""
        return dict(zip(self.names, xs)) if self.several else xs[0]

    def _unpacked(self, grads, who):
        """A caller's gradient(s) as a list of f64 arrays in names order."""
        if not self.several:
            return [np.real(np.asarray(grads))]
        if not isinstance(grads, dict) or set(grads) != set(self.names):
            raise Error(f"from_forward: expected {who} to return a dict with the fields "
                        f"{self.names}, got {type(grads).__name__}"
                        + (f" with {sorted(grads)}" if isinstance(grads, dict) else ""))
        return [np.real(np.asarray(grads[n])) for n in self.names]

    def _torch_call(self, xs, grad):
        torch = _torch()
        if torch is None:
            raise Error("from_forward: expected adjoint= (a linear model) or vjp= (a nonlinear "
                        "one), got neither, and torch (for autograd) is not installed")
        if not isinstance(xs, dict):
            xs = {self.names[0]: xs}
        dtype = self._input_dtype or torch.float64
        ts = {n: torch.from_numpy(np.array(x, dtype=np.float64)).to(dtype).requires_grad_(grad)
              for n, x in xs.items()}
        y = self._forward(ts if self.several else ts[self.names[0]])
        if not isinstance(y, torch.Tensor):
            raise Error("from_forward: expected forward to return a torch tensor when neither "
                        "adjoint= nor vjp= is given (its gradient comes from torch autograd), "
                        f"got {type(y).__name__}: pass adjoint= or vjp=, or write forward "
                        "with torch operations")
        if torch.is_complex(y):
            self.complex_out = True
            y = torch.stack([y.real, y.imag])
        return [ts[n] for n in self.names], y.to(torch.float64)

    def _torch_forward(self, xs):
        torch = _torch()
        with torch.no_grad():
            _, y = self._torch_call(xs, False)
        return host_array(y)

    def _torch_vjp(self, xs, g):
        torch = _torch()
        ts, y = self._torch_call(xs, True)
        if not y.requires_grad:
            raise Error("from_forward: expected forward to be differentiable in torch (its "
                        "output to depend on the field through torch operations), got an "
                        "output without a gradient")
        grads = torch.autograd.grad(y, ts + self.params,
                                    torch.from_numpy(np.asarray(g)).to(y.dtype), allow_unused=True)
        out = [np.zeros(self.shape) if gx is None else host_array(gx)
               for gx in grads[:len(ts)]]
        self._param_grads = [np.zeros(tuple(p.shape)) if gp is None else
                             host_array(gp).astype(np.float64)
                             for p, gp in zip(self.params, grads[len(ts):])]
        return self._packed(out)

    def load_parameters(self, values):
        """Writes values (numpy arrays, one per trainable parameter) into
        the torch module's parameters."""
        torch = _torch()
        with torch.no_grad():
            for p, v in zip(self.params, values):
                p.copy_(torch.from_numpy(np.asarray(v, dtype=np.float64)).reshape(p.shape))

    def _split(self, xs):
        """The fields, after loading the parameter values that follow them."""
        n = len(self.names)
        if len(xs) > n:
            self.load_parameters(xs[n:])
        return xs[:n]

    def _inputs(self, xs):
        """The fields as read-only arrays of the grid's shape (a model that
        edits its input in place would change what the vjp is taken at)."""
        out = []
        for x in xs:
            a = np.asarray(x, dtype=np.float64).reshape(self.shape)  # a view: no copy
            a.setflags(write=False)
            out.append(a)
        return out

    def forward(self, xs):
        y = self._f(self._packed(self._inputs(self._split(xs))))
        if self.kind != "torch":
            self.single_precision = np.asarray(y).dtype in (np.float32, np.complex64)
        return y if self.kind == "torch" else _stack_complex(y)

    def vjp(self, xs, g):
        g = np.asarray(g)
        if self.kind != "torch":
            g = _unstack(g, self.complex_out)
        out = self._vjp(self._packed(self._inputs(self._split(xs))), g)
        return [np.asarray(v, dtype=np.float64) for v in self._unpacked(out, "vjp")] + \
            list(self._param_grads)

    def _dry_field(self, rng, values):
        """A random field inside the values its prior's head gives, (head, lo,
        hi): a tenth of the range inside a bounded one's bounds, >= 0.1 for
        nonnegative, in [e^-2, e^2] for positive, a normal draw otherwise."""
        head, lo, hi = values
        if head in ("bounded", "level_set", "phases"):
            margin = 0.1 * (hi - lo)
            return rng.uniform(lo + margin, hi - margin, self.shape)
        if head == "nonnegative":
            return 0.1 + np.abs(rng.standard_normal(self.shape))
        if head == "positive":
            return np.exp(np.clip(rng.standard_normal(self.shape), -2, 2))
        return rng.standard_normal(self.shape)

    @staticmethod
    def _room(x, values):
        """How far x may move in any cell and stay inside its prior's values."""
        head, lo, hi = values
        if head in ("bounded", "level_set", "phases"):
            return float(min((x - lo).min(), (hi - x).min()))
        if head in ("nonnegative", "positive"):
            return float(x.min())
        return np.inf

    def take_data_shape(self, data_shape):
        """A matrix's rows are the measurement's cells in C order (as for
        nefi fit --matrix): its output takes the data's shape."""
        if self.kind != "matrix" or self._matrix.shape[0] != int(np.prod(data_shape)):
            return
        a, out = self._matrix, tuple(data_shape)
        self._f = lambda x: (a @ x.ravel()).reshape(out)
        self._vjp = lambda x, g: np.real(a.conj().T @ np.ravel(g)).reshape(self.shape)

    def _builtin_kind(self):
        """The built-in operator's kind, None for the caller's own model."""
        return self.native.kind if self.kind == "native" else None

    def check(self, data_shape, rng):
        """The dry run: shapes, finiteness, and the gradient against the model,
        at random fields inside each field's prior values (self.values)."""
        # A built-in operator's gradient is tested in C++; its dry run checks
        # shapes at a zero field, which every built-in takes (a random one is
        # outside some's domain: a diffusivity map must be >= 0).
        xs = [np.zeros(self.shape) if self.kind == "native" else self._dry_field(rng, v)
              for v in self.values]
        y = np.asarray(self.forward(xs))
        check_output_shape(y.shape, data_shape, self._builtin_kind())
        if not np.all(np.isfinite(y)):
            where = "zero field" if self.kind == "native" else "random field within the prior"
            raise Error(f"from_forward: expected finite forward outputs on a {where}, got NaN "
                        "or inf")
        g = rng.standard_normal(y.shape)
        gxs = self.vjp(xs, g)
        for n, gx in zip(self.names, gxs):
            if gx.size != int(np.prod(self.shape)):
                raise Error(f"from_forward: expected the gradient (adjoint/vjp) of field {n!r} to "
                            f"have the field's shape {self.shape}, got {gx.shape}")
            if not np.all(np.isfinite(gx)):
                raise Error("from_forward: expected a finite gradient (adjoint/vjp), "
                            "got NaN or inf")
        if self.kind in ("torch", "native"):
            return
        if self.kind in ("matrix", "adjoint"):
            lhs = float(np.vdot(y.ravel(), g.ravel()))
            rhs = float(np.vdot(xs[0].ravel(), gxs[0].ravel()))
            if abs(lhs - rhs) > 1e-6 * max(abs(lhs), abs(rhs), 1e-300):
                raise Error(f"from_forward: expected adjoint to be forward's adjoint "
                            f"(<A x, g> = <x, A^T g>), got {lhs:.6g} against {rhs:.6g}")
            return
        # vjp: against central differences along a random direction of every
        # field, the step and tolerance sized to the model's own precision.
        ds = [rng.standard_normal(self.shape) for _ in self.names]
        step, tol = (1e-3, 2e-2) if self.single_precision else (1e-6, 1e-4)
        eps = step * max(1.0, max(float(np.abs(x).max()) for x in xs))
        # Each field's direction shrunk to half its room, so that both steps
        # stay inside its prior (the check holds for any direction).
        ds = [d * min(1.0, 0.5 * self._room(x, v) / (eps * float(np.abs(d).max())))
              for x, d, v in zip(xs, ds, self.values)]
        plus = self.forward([x + eps * d for x, d in zip(xs, ds)])
        minus = self.forward([x - eps * d for x, d in zip(xs, ds)])
        fd = (np.asarray(plus) - np.asarray(minus)) / (2 * eps)
        if not np.all(np.isfinite(fd)):
            raise Error("from_forward: expected finite forward outputs a small step from the "
                        "dry run's field, got NaN or inf")
        lhs = float(np.vdot(fd.ravel(), g.ravel()))
        rhs = sum(float(np.vdot(gx.ravel(), d.ravel())) for gx, d in zip(gxs, ds))
        if abs(lhs - rhs) > tol * max(abs(lhs), abs(rhs), 1e-12):
            raise Error(f"from_forward: expected vjp(x, g) to be g^T dF/dx (checked against "
                        f"finite differences), got {rhs:.6g} against {lhs:.6g} (check=False "
                        "skips the dry run)")


def _inside(values):
    """A value inside a prior's (head, lo, hi): the middle of a range, 1 for
    nonnegative and positive, 0 otherwise."""
    head, lo, hi = values
    if head in ("bounded", "level_set", "phases"):
        return 0.5 * (lo + hi)
    return 1.0 if head in ("nonnegative", "positive") else 0.0


def _shaped(y, data_shape):
    y = np.asarray(y)
    check_output_shape(y.shape, data_shape)
    return y.reshape(data_shape)
