"""Prior terms of your own for from_forward (nefi/byop/custom_prior.h): a
penalty in numpy with its gradient, or in torch with autograd's, registered
by name so that the prior text takes it like tv or smooth."""
import atexit

import numpy as np

from ._forward_model import _torch
from ._core import Error
from ._core import nefi as _nefi
from ._host import host_array

_registered = set()


def register_prior(name, penalty, grad=None):
    """Adds a prior term of your own under ``name``: the prior text then
    takes it like a built-in penalty, ``"nonnegative + name(0.5)"``, weighed
    as tv and smooth are (strength x the data term at the noise floor / its
    value on a 25-step probe), so ``penalty`` should be >= 0 and grow with
    what it penalizes.

    penalty: x -> float on the field (a numpy float64 array of its shape),
      with ``grad`` (x -> dP/dx, the field's shape); or written with torch
      operations, when autograd gives the gradient.
    Registering a name again replaces it; ``unregister_prior(name)`` removes
    it. It is called on the host every step (a device solve copies the
    field over)."""
    name = str(name)
    if not callable(penalty) or not (grad is None or callable(grad)):
        raise Error(f"register_prior: expected a callable penalty (and grad, when given) for "
                    f"{name!r}, got {type(penalty).__name__}"
                    + ("" if grad is None else f" and {type(grad).__name__}"))

    def checked(v, g):
        """A non-finite value or gradient named here, not as the solve's
        'non-finite loss' with no word of which term."""
        if not np.isfinite(v):
            raise Error(f"prior {name!r}: expected a finite penalty, got {v}")
        if g is not None and not np.isfinite(g).all():
            raise Error(f"prior {name!r}: expected a finite gradient, got "
                        f"{int((~np.isfinite(g)).sum())} non-finite value(s)")
        return v, g

    def call(x, want_grad):
        return checked(*evaluate(x, want_grad))

    def evaluate(x, want_grad):
        if grad is not None:
            return float(penalty(x)), (np.asarray(grad(x), dtype=np.float64) if want_grad
                                       else None)
        torch = _torch()
        if torch is None:
            raise Error(f"register_prior: expected grad= for {name!r} (torch, for autograd, "
                        "is not installed)")
        t = torch.from_numpy(np.array(x, dtype=np.float64)).requires_grad_(want_grad)
        try:
            v = penalty(t)
        except Exception as e:
            raise Error(f"register_prior: prior {name!r} failed on a torch tensor "
                        f"({type(e).__name__}: {e}); without grad= it is called with torch "
                        "tensors: write it with torch operations, or pass grad=") from e
        if not isinstance(v, torch.Tensor):
            if want_grad:
                raise Error(f"register_prior: expected prior {name!r} to return a torch scalar "
                            f"(its gradient comes from autograd) or grad= to be given, got "
                            f"{type(v).__name__}")
            return float(v), None
        if not want_grad:
            return float(v.detach()), None
        if not v.requires_grad:
            raise Error(f"register_prior: expected prior {name!r} to depend on the field "
                        "through torch operations, got a value without a gradient")
        (g,) = torch.autograd.grad(v, t)
        return float(v.detach()), host_array(g)

    _nefi.register_prior(name, call)
    _registered.add(name)


def unregister_prior(name):
    """Removes a term register_prior added; returns whether it was there."""
    _registered.discard(str(name))
    return _nefi.unregister_prior(str(name))


@atexit.register
def _unregister_all():
    # The terms hold Python functions: let them go while Python still runs.
    for name in list(_registered) + list(_nefi.registered_priors()):
        unregister_prior(name)
