"""nefi's built-in forward models (``fieldkit.nefi.operators``).

Their physical scale is from_forward's default domain (cells of
1 / max(shape)); ``extent=`` changes the field's domain, not theirs.
Each is a native operator (``stack`` joins several into one measurement):
``from_forward(op, y, shape)`` solves through it
with no Python call per step, and ``op(x)``, ``op.vjp(x, g)``,
``op.adjoint(y)`` run the very model the solve uses on numpy arrays (a
batch in leading axes). Field shapes have 1-3 axes.

    mask = np.random.default_rng(0).random((64, 64)) < 0.3
    op = nefi.operators.fourier_sampling(mask)        # MRI: k-space samples
    y = op(x_true) + sigma * (rng.standard_normal(m) + 1j * rng.standard_normal(m))
    zero_filled = op.adjoint(y)
    out = nefi.from_forward(op, y, x_true.shape, prior="nonnegative + tv").solve()
"""
import numpy as np

from ._core import Error
from ._core import nefi as _nefi
from ._host import c_contiguous, host_values
from ._time_stepper import _values


def _real(where, name, v):
    """v as a C-contiguous float64 array of its own shape (a 0-d mask or
    field is refused by the engine as (), not taken as (1,)); complex values
    are refused by name."""
    return c_contiguous(_values(v, where, f"a real {name}"))



def _integer(where, name, value):
    """value as an int when it is a whole number (2 or 2.0); anything else
    (2.5, True, "2") is refused by name rather than truncated."""
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # a 0-d array or tensor
        value = value.item()  # a bool one stays a bool, refused below
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and value == int(value):
        return int(value)
    raise Error(f"{where}: expected {name} a whole number, got {value!r}")


def _shape(where, shape):
    """A grid's shape as a tuple of whole numbers."""
    try:
        values = list(np.atleast_1d(shape).tolist()) if not isinstance(shape, (list, tuple)) \
            else list(shape)
    except TypeError:
        values = [shape]
    return tuple(_integer(where, "shape's sizes", s) for s in values)

class Operator:
    """A built-in forward model: ``kind``, ``linear``, ``homogeneity``,
    ``output_shape(shape)``, ``op(x)``, ``vjp(x, g)``, ``adjoint(y)``
    (linear ones) and ``estimate_noise(y)`` (sampling, fourier_sampling)."""

    def __init__(self, core, shape=None, complex_out=False):
        self._core, self.shape, self.complex_out = core, shape, complex_out

    kind = property(lambda self: self._core.kind)
    linear = property(lambda self: self._core.linear)
    homogeneity = property(lambda self: self._core.homogeneity)

    def __repr__(self):
        return f"nefi.operators.{self.kind}(field shape {self.shape})"

    def output_shape(self, shape):
        """The measurement's shape for a field of `shape` (complex outputs:
        the complex array's shape)."""
        out = tuple(self._core.output_shape(list(_shape("output_shape", shape))))
        return out[1:] if self.complex_out else out

    def _stacked(self, where, name, g):
        """g as the core reads it: a complex output's real and imaginary
        parts stacked; a real output's g must be real."""
        if not self.complex_out:
            return _real(where, name, g)
        g = host_values(g)
        if g.ndim == 0:  # no sample axis to stack the parts before
            raise Error(f"{where}: expected complex data of the operator's output shape "
                        f"(..., m), got shape ()")
        return np.ascontiguousarray(np.stack([g.real, g.imag], axis=-2), dtype=np.float64)

    def __call__(self, x):
        y = self._core.forward(_real(f"{self.kind}", "field", x))
        return y[..., 0, :] + 1j * y[..., 1, :] if self.complex_out else y

    def vjp(self, x, g):
        """g^T dF/dx at x (for complex outputs, the real part of F'(x)^H g)."""
        where = f"{self.kind}.vjp"
        return self._core.vjp(_real(where, "field", x),
                              self._stacked(where, "output gradient (the operator's output is "
                                            "real)", g))

    def adjoint(self, y, shape=None):
        """A^T y for a linear model (for fourier_sampling the zero-filled
        inverse); `shape` is the field's, needed where the operator does not
        know it (downsample)."""
        if not self.linear:
            raise Error(f"Operator.adjoint: expected a linear operator, got {self.kind}")
        shape = self.shape if shape is None else tuple(shape)
        if shape is None:
            raise Error(f"Operator.adjoint: expected the field's shape for {self.kind}, got none")
        y = host_values(y)
        lead = y.shape[:y.ndim - len(self.output_shape(shape))]
        return self.vjp(np.zeros(lead + tuple(shape)), y)

    def estimate_noise(self, y):
        """The noise sigma of measured data (per real and imaginary part for
        k-space): from neighbouring samples, or the outer frequencies."""
        return self._core.estimate_noise(
            self._stacked(f"{self.kind}.estimate_noise", "measurement (the operator's output "
                          "is real)", y))


def sampling(mask):
    """The field's values where mask > 0, in C order (inpainting, sensors)."""
    mask = _real("sampling", "mask", mask)
    return Operator(_nefi.sampling_operator(mask), mask.shape)


def fourier_sampling(mask, centered=False):
    """MRI: the orthonormal DFT over the field's axes at the frequencies
    where mask > 0, as complex values. The mask is in numpy.fft order (DC
    first), or with DC in the middle when ``centered`` (fftshift's order).
    The samples come in numpy.fft order either way: with a centred mask
    ``cm``, data are ``np.fft.fftn(x, norm="ortho")[np.fft.ifftshift(cm) > 0]``,
    not ``np.fft.fftshift(...)[cm > 0]`` (another order of the same values)."""
    mask = _real("fourier_sampling", "mask", mask)
    if centered and mask.ndim:  # a 0-d mask has no axes to shift: the engine refuses it
        mask = np.fft.ifftshift(mask)
    return Operator(_nefi.fourier_sampling_operator(c_contiguous(mask)), mask.shape,
                    complex_out=True)


def downsample(factors):
    """The mean over blocks of ``factors`` cells (one per axis): a detector
    that bins pixels."""
    factors = [_integer("downsample", "factors", f) for f in np.atleast_1d(factors).tolist()]
    return Operator(_nefi.downsample_operator(factors))


def phase_retrieval(ndim, oversample=2.0):
    """|DFT|^2 (orthonormal) of the field zero-padded to ceil(oversample n)
    per axis: a far-field diffraction pattern. Fix its ambiguities (shift,
    point reflection) with the prior: nonnegative, a known support."""
    return Operator(_nefi.phase_retrieval_operator(_integer("phase_retrieval", "ndim", ndim),
                                                   float(oversample)))


def axis_integral(shape, axis=0, length=None):
    """The integral along ``axis`` (a parallel projection); ``length`` is a
    cell's path length, by default from_forward's domain (longest axis 1)."""
    shape = _shape("axis_integral", shape)
    length = 1.0 / max(shape) if length is None else float(length)  # isotropic_domain's cell
    axis = _integer("axis_integral", "axis", axis)
    return Operator(_nefi.axis_integral_operator(list(shape), axis, length), shape)


def beer_lambert(path=None, i0=1.0, *, shape=None, axis=0):
    """Transmitted intensity i0 exp(-path(x)) through an attenuation map:
    ``path`` a linear built-in operator, or the integral along ``axis`` of a
    field of ``shape``."""
    if path is None:
        if shape is None:
            raise Error("beer_lambert: expected a path operator or the field's shape, got neither")
        path = axis_integral(shape, axis)
    if not isinstance(path, Operator):
        raise Error(f"beer_lambert: expected a built-in operator as path, got "
                    f"{type(path).__name__}")
    if path.complex_out:
        raise Error(f"beer_lambert: expected a real path (line integrals), got the complex "
                    f"{path.kind}")
    return Operator(_nefi.beer_lambert_operator(path._core, float(i0)), path.shape)


def gaussian_blur(shape, sigma, periodic=False):
    """A Gaussian blur of ``sigma`` cells (std), its kernel cut at 4 sigma and
    normalised to unit sum; zero-padded (no wrap-around), or circular with
    ``periodic``. Its kind is fft_convolution (the deconvolution instances')."""
    shape = _shape("gaussian_blur", shape)
    return Operator(_nefi.blur_operator(list(shape), float(sigma), bool(periodic)), shape)


def radon(shape, n_views=16, angle_range=np.pi, det_per_pixel=1):
    """Parallel-beam CT of a square (n, n) image, or of every z slice of an
    (n, n, nz) volume: ``n_views`` angles over ``angle_range`` radians, line
    integrals on from_forward's default domain (cells of 1 / max(shape), so
    an image's side is 1), output (n_views, n_det[, nz])."""
    shape = _shape("radon", shape)
    return Operator(_nefi.radon_operator(list(shape), _integer("radon", "n_views", n_views),
                                         float(angle_range),
                                         _integer("radon", "det_per_pixel", det_per_pixel)),
                    shape)


def advection_diffusion(shape, times, velocity=None, diffusivity=0.0, unknown="initial",
                        boundary="closed", sensors=None, courant=0.9, scheme="lax_wendroff",
                        release=None, release_is="initial"):
    """A tracer (a pollutant, a dye) carried by a known flow ``velocity`` and
    spreading with ``diffusivity``: c_t + div(v c) = D lap(c) + s on
    from_forward's domain (cells of 1 / max(shape), so the longest side is
    1; velocities in those lengths per unit time), observed at ``times``
    (increasing, > 0) over the whole grid, output (len(times), *shape), or
    where the ``sensors`` mask is > 0, output (len(times), m) in C order.
    The field is the release: the ``unknown`` "initial" concentration, or a
    "source" rate emitting from t = 0. ``velocity``: one entry per axis, a
    number (a uniform flow) or an array of the grid's shape (per cell);
    ``boundary``: "closed" (no flux), "open" (outflow leaves, inflow brings
    none) or "periodic", one for all axes or one per axis. Finite volumes
    with explicit substeps at ``courant`` times the stability bound, linear
    in the field, with its exact transpose as the gradient: ``scheme``
    "lax_wendroff" (the spread is D's alone, second order for pure
    advection; small wiggles, and values below 0, where the tracer's front
    is a cell or two wide; with D near 0 in a per-cell flow that converges
    or reverses, grid-scale waves can grow slowly) or "upwind" (first order,
    never negative for a non-negative release and stable whatever the flow,
    but it spreads the tracer by about |v| h / 2 more than D does).

    ``unknown="diffusivity"``: the field is instead the diffusivity map D(x)
    >= 0, one value per cell (``diffusivity`` left at 0), and the release
    is given: ``release``, an array of the grid's shape, an initial
    concentration (``release_is="initial"``) or a source rate
    (``release_is="source"``). D lap(c) becomes div(D grad c), each face's D
    the harmonic mean of its two cells' (a cell of D = 0 blocks the flux
    through it); nonlinear in D, each call steps as many substeps as D's
    largest value needs, and the gradient runs the same steps' transposes
    backward. Give the fit a bounded prior ("bounded(0, D_max) + tv"): with
    "positive" the start's search of constants tries D up to 1e4, whose
    explicit substeps are many.

    ``unknown="velocity"``: the field is the flow itself, one component per
    axis per cell, shape (len(shape), *shape) (``velocity`` not given), with
    the release given as above and a scalar ``diffusivity``; nonlinear in
    v, each call steps as many substeps as v's largest speed needs. Upwind's
    flux has no derivative where a face's velocity is 0: there the gradient
    is the mean of its two one-sided ones, so a fit can start from rest.
    from_forward's "tv" and "smooth" take no differences across the
    components (axis 0), and axes named in a prior are the field's (axis 0
    the components). from_forward fits 1-D and 2-D flows; a 3-D flow's field
    has four axes, past its three.

    Every unknown trains on a GPU too (``solve(device="cuda")``); there a
    diffusivity's or a velocity's stencils are built for each field on the
    device, which reads back only what its substeps follow, so their steps
    run eagerly rather than as one captured graph."""
    shape = _shape("advection_diffusion", shape)
    if velocity is None:
        velocity = []
    if np.isscalar(velocity) or getattr(velocity, "ndim", None) == 0:  # numpy's or torch's
        raise Error(f"advection_diffusion: expected the velocity as one entry per axis "
                    f"({len(shape)}), got the single value {velocity!r}")
    velocity = [host_values(v) for v in velocity]
    sensors = None if sensors is None else host_values(sensors)
    for name, value in [("velocity", v) for v in velocity] + [("sensors", sensors)]:
        if value is not None and np.iscomplexobj(value):
            raise Error(f"advection_diffusion: expected real {name}, got complex values")
    # A velocity's entry may be one number (a uniform flow); a 0-d sensor
    # mask or release keeps its shape, for the engine to name it.
    velocity = [np.atleast_1d(v.astype(np.float64, copy=False)) for v in velocity]
    boundary = [boundary] if isinstance(boundary, str) else list(boundary)
    if sensors is not None:
        sensors = c_contiguous(sensors.astype(np.float64, copy=False))
    times = [float(t) for t in np.atleast_1d(times)]
    if release_is not in ("initial", "source"):
        raise Error(f"advection_diffusion: expected release_is 'initial' or 'source', got "
                    f"{release_is!r}")
    if release is not None:
        release = host_values(release)
        if np.iscomplexobj(release):
            raise Error("advection_diffusion: expected a real release, got complex values")
        release = c_contiguous(release.astype(np.float64, copy=False))
    field_shape = (len(shape),) + shape if unknown == "velocity" else shape
    return Operator(_nefi.advection_diffusion_operator(
        list(shape), times, [np.ascontiguousarray(v) for v in velocity], float(diffusivity),
        str(unknown), [str(b) for b in boundary], sensors, float(courant), str(scheme),
        release, release_is == "source"), field_shape)


def stack(parts, shape=None):
    """Several built-in operators on the same field, their outputs flattened
    one after another as one measurement (several views, several
    detectors). Real-valued parts only; ``shape`` is the field's (default:
    the first part that knows it)."""
    parts = list(parts)
    if not parts or not all(isinstance(p, Operator) for p in parts):
        raise Error("stack: expected a list of built-in operators, got "
                    f"{[type(p).__name__ for p in parts]}")
    if any(p.complex_out for p in parts):
        raise Error("stack: expected real-valued operators, got "
                    f"{[p.kind for p in parts if p.complex_out]} (complex output)")
    if shape is None:
        shape = next((p.shape for p in parts if p.shape is not None), None)
    if shape is None:
        raise Error("stack: expected the field's shape (no part knows it), got none")
    shape = _shape("stack", shape)
    # Every part must take this field: one built for another grid failed
    # only when the stack was called, after output_shape had answered.
    for p in parts:
        if p.shape is not None and tuple(p.shape) != shape:
            raise Error(f"stack: expected parts for the field's shape {shape}, got {p.kind} for "
                        f"{tuple(p.shape)}")
        try:
            p.output_shape(shape)
        except Error as e:
            raise Error(f"stack: expected parts that take a field of shape {shape}, got {p.kind}: "
                        f"{e}") from None
    return Operator(_nefi.stack_operator([p._core for p in parts], list(shape)), shape)


__all__ = ["Operator", "sampling", "fourier_sampling", "downsample", "phase_retrieval",
           "axis_integral", "beer_lambert", "gaussian_blur", "radon", "advection_diffusion",
           "stack"]
