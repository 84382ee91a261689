"""nefi's step helpers for a TimeStepper's loop, against independent
references: the three-point matrices, the leapfrog's conserved energy and
its stability bound, a pulse's speed, the tracer's exact moment laws, mass
and sign, the built-in advection-diffusion operator step for step,
finite-difference gradients, a fit through a TimeStepper, and refusals."""
import math

import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi

torch = pytest.importorskip("torch")


def three_point(n, h, mode):
    """The 1-D second-difference matrix / h^2, built entry by entry."""
    M = np.zeros((n, n))
    for i in range(n):
        for j in (i - 1, i + 1):
            if 0 <= j < n:
                M[i, j] += 1
            elif mode == "periodic":
                M[i, j % n] += 1
            elif mode == "closed":
                M[i, i] += 1  # the edge cell is its own outer neighbour
        M[i, i] -= 2
    return M / (h * h)


@pytest.mark.parametrize("modes", [("closed", "closed"), ("periodic", "dirichlet"),
                                   ("dirichlet", "closed")])
def test_the_laplacian_is_the_three_point_matrix_per_axis(modes):
    n0, n1, h0, h1 = 7, 5, 0.3, 0.7
    u = np.random.default_rng(0).standard_normal((3, n0, n1))  # a batch of 3
    want = np.einsum("ij,bjk->bik", three_point(n0, h0, modes[0]), u) + \
        np.einsum("kl,bil->bik", three_point(n1, h1, modes[1]), u)
    got = nefi.laplacian(torch.tensor(u), (h0, h1), list(modes)).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    if modes == ("closed", "closed"):  # zero flux: nothing is made or lost
        assert abs(got.sum()) < 1e-11


def test_a_periodic_cosine_is_an_eigenvector_with_the_discrete_eigenvalue():
    n, k, L = 32, 3, 2.0
    h = L / n
    x = (np.arange(n) + 0.5) * h
    u = torch.tensor(np.cos(2 * np.pi * k * x / L))
    got = nefi.laplacian(u, h, "periodic")
    eig = -(4 / h ** 2) * math.sin(math.pi * k / n) ** 2
    np.testing.assert_allclose(got.numpy(), eig * u.numpy(), atol=1e-12)


def wave_run(u0, c, dt, h, boundary, steps):
    state = (u0, u0.clone())
    energies = []
    for _ in range(steps):
        state = nefi.wave_step(state, c, dt, h, boundary)
        energies.append(float(nefi.wave_energy(state, c, dt, h, boundary)))
    return state, np.array(energies)


@pytest.mark.parametrize("boundary", ["dirichlet", "closed", "periodic"])
def test_the_wave_keeps_its_energy_under_the_bound(boundary):
    n, h = 24, (1 / 24, 1 / 20)
    x, y = np.meshgrid((np.arange(n) + 0.5) / n, (np.arange(20) + 0.5) / 20, indexing="ij")
    c = torch.tensor(1 + 0.5 * np.exp(-((x - 0.6) ** 2 + (y - 0.4) ** 2) / 0.02))
    u0 = torch.tensor(np.exp(-((x - 0.4) ** 2 + (y - 0.5) ** 2) / 0.005))
    dt = nefi.stable_dt(h, c=c, safety=0.98)
    assert dt == pytest.approx(0.98 / (float(c.max()) * math.sqrt(24 ** 2 + 20 ** 2)), rel=1e-14)
    state, e = wave_run(u0, c, dt, h, boundary, 600)
    assert np.abs(e - e[0]).max() < 1e-11 * abs(e[0]), (e[0], np.abs(e - e[0]).max())
    assert float(state[0].abs().max()) < 2


def test_past_the_bound_the_wave_blows_up():
    """Periodic and an even count: the checkerboard is -lap's eigenvector of
    4 sum 1 / h^2, the bound's eigenvalue, so 2 % past the bound grows."""
    n, h = 16, (1 / 16, 1 / 16)
    u0 = torch.tensor(np.random.default_rng(1).standard_normal((n, n)) * 1e-3)
    bound = nefi.stable_dt(h, c=1.0)
    calm, _ = wave_run(u0, 1.0, 0.98 * bound, h, "periodic", 400)
    wild, _ = wave_run(u0, 1.0, 1.02 * bound, h, "periodic", 400)
    assert float(calm[0].abs().max()) < 0.1
    assert float(wild[0].abs().max()) > 1e3


def test_a_pulse_splits_and_travels_at_the_speed():
    n, c = 400, 1.0
    h = 1 / n
    x = (np.arange(n) + 0.5) * h
    u0 = torch.tensor(np.exp(-((x - 0.5) / 0.03) ** 2))
    dt = nefi.stable_dt(h, c=c, safety=0.5)
    steps = round(0.25 / dt)
    state = (u0, u0.clone())
    for _ in range(steps):
        state = nefi.wave_step(state, c, dt, h, "dirichlet")
    u = state[0].numpy()
    right = x[n // 2 + np.argmax(u[n // 2:])]
    assert abs(right - (0.5 + c * steps * dt)) < 2 * h, right
    assert 0.45 < u.max() < 0.55  # half the pulse each way


def test_the_ricker_wavelet_peaks_at_one_and_crosses_zero_where_it_should():
    f0 = 12.0
    t0 = 1 / f0
    zero = t0 + 1 / (math.pi * f0 * math.sqrt(2))
    lowest = t0 + math.sqrt(1.5) / (math.pi * f0)
    r = nefi.ricker(torch.tensor([t0, zero, lowest, 0.0], dtype=torch.float64), f0)
    assert r[0] == 1 and abs(r[1]) < 1e-15
    assert r[2] == pytest.approx(-2 * math.exp(-1.5), rel=1e-14)
    assert abs(r[3]) < 1e-3  # starts near 0 at the default t0


def flow_and_diffusivity(n0, n1):
    x, y = np.meshgrid((np.arange(n0) + 0.5) / n0, (np.arange(n1) + 0.5) / n1, indexing="ij")
    # Along axis 0 faster and slower by turns, leaving through its upper
    # edge; along axis 1 converging to the middle.
    v = [torch.tensor(np.sin(2 * np.pi * x) * 0.5 + 0.8), torch.tensor(0.5 - y)]
    D = np.where((x - 0.5) ** 2 + (y - 0.5) ** 2 < 0.04, 0.0, 2e-3 * (1 + x))  # a blocking disc
    return x, y, v, torch.tensor(D)


@pytest.mark.parametrize("boundary", [("closed", "closed"), ("periodic", "closed"),
                                      ("open", "periodic")])
def test_the_tracer_keeps_its_mass_and_its_sign_under_the_bound(boundary):
    x, y, v, D = flow_and_diffusivity(20, 16)
    h = (1 / 20, 1 / 16)
    c = torch.tensor(np.exp(-((x - 0.3) ** 2 + (y - 0.6) ** 2) / 0.01))
    dt = nefi.stable_dt(h, velocity=v, diffusivity=D, boundary=list(boundary))
    masses = [float(c.sum())]
    for _ in range(300):
        c = nefi.advection_diffusion_step(c, dt, h, v, D, list(boundary))
        masses.append(float(c.sum()))
        assert float(c.min()) >= -1e-15
    if "open" in boundary:  # outflow only: the mass never grows
        assert all(b <= a * (1 + 1e-15) for a, b in zip(masses, masses[1:]))
        assert masses[-1] < masses[0] * 0.999
    else:
        assert abs(masses[-1] - masses[0]) < 1e-12 * masses[0]


def test_past_the_bound_a_tracer_goes_negative():
    """A uniform flow and diffusivity in a periodic box: every cell loses
    tracer at the same rate, so one step of 1.5x the bound leaves a
    one-cell release's cell at 1 - 1.5 < 0."""
    n, h = 12, (1 / 12, 1 / 12)
    v, D = (0.4, -0.3), 1e-2
    c = torch.zeros((n, n), dtype=torch.float64)
    c[5, 7] = 1
    dt = nefi.stable_dt(h, velocity=v, diffusivity=D, boundary="periodic")
    assert dt == pytest.approx(1 / (0.4 * 12 + 0.3 * 12 + 4 * 1e-2 * 144), rel=1e-14)
    once = nefi.advection_diffusion_step(c, 1.5 * dt, h, v, D, "periodic")
    assert float(once[5, 7]) == pytest.approx(-0.5, abs=1e-14)
    assert float(nefi.advection_diffusion_step(c, dt, h, v, D, "periodic")[5, 7]) == \
        pytest.approx(0, abs=1e-14)


def test_the_spread_and_the_drift_follow_their_exact_laws():
    """Pure diffusion: the variance grows by 2 D dt a step exactly (the
    discrete identity; the walls are far). Pure upwind advection at a
    uniform v: the mean moves by v dt a step exactly."""
    n = 200
    h = 1 / n
    x = torch.tensor((np.arange(n) + 0.5) * h)
    c0 = torch.exp(-((x - 0.5) / 0.04) ** 2)
    D = 0.01
    dt = nefi.stable_dt(h, diffusivity=D, safety=0.5)
    c = c0
    for _ in range(100):
        c = nefi.advection_diffusion_step(c, dt, h, diffusivity=D)

    def moments(c):
        m = float(c.sum())
        mean = float((x * c).sum()) / m
        return mean, float(((x - mean) ** 2 * c).sum()) / m

    assert moments(c)[1] - moments(c0)[1] == pytest.approx(2 * D * 100 * dt, rel=1e-9)
    v = 0.3
    c0 = torch.exp(-((x - 0.3) / 0.03) ** 2)
    dt = nefi.stable_dt(h, velocity=[v], safety=0.7)
    c = c0
    for _ in range(60):
        c = nefi.advection_diffusion_step(c, dt, h, velocity=[v])
    assert moments(c)[0] - moments(c0)[0] == pytest.approx(v * 60 * dt, rel=1e-9)


@pytest.mark.parametrize("boundary", ["closed", "open", "periodic", ("open", "closed"),
                                      ("periodic", "open"), ("closed", "periodic")])
@pytest.mark.parametrize("unknown", ["initial", "diffusivity"])
def test_the_steps_are_the_built_in_operator_at_its_substeps(boundary, unknown):
    """The built-in operator's upwind scheme steps the same finite volumes by
    unsplit explicit Euler with the fewest equal substeps under courant
    times this bound: the same substeps here give the same values, in 1-D
    and 2-D. The flows leave through both edges of the first axis (and
    enter through the second's), so every open edge's outflow counts."""
    shape = (40,) if isinstance(boundary, str) else (20, 14)
    n = max(shape)  # the built-in operator's cells are 1 / max(shape)
    axes = np.meshgrid(*[(np.arange(k) + 0.5) / n for k in shape], indexing="ij")
    x = axes[0]
    y = axes[1] if len(shape) == 2 else 0.5
    release = np.exp(-((x - 0.4) ** 2 + (y - 0.3) ** 2) / 0.01) + \
        0.5 * np.exp(-((x - 0.75) ** 2 + (y - 0.6) ** 2) / 0.005)
    v = [0.8 * (x - 0.5) + 0.3 * np.sin(2 * np.pi * y), -0.4 + 0.2 * x][:len(shape)]
    D = 2e-3 * (1 + np.cos(3 * x) * y) if unknown == "diffusivity" else 1.5e-3
    h = (1 / n,) * len(shape)
    courant, substeps = 0.9, 23
    bound = nefi.stable_dt(h, velocity=[torch.tensor(a) for a in v],
                           diffusivity=torch.tensor(D) if unknown == "diffusivity" else D,
                           boundary=boundary, safety=courant)
    t = (substeps - 0.5) * bound  # ceil(t / bound) = substeps, far from a tie
    kw = dict(velocity=v, boundary=boundary, courant=courant, scheme="upwind")
    if unknown == "initial":
        want = nefi.operators.advection_diffusion(shape, [t], diffusivity=D, **kw)(release)[0]
    else:
        want = nefi.operators.advection_diffusion(shape, [t], unknown="diffusivity",
                                                  release=release, **kw)(D)[0]
    c = torch.tensor(release)
    Dt = torch.tensor(D) if unknown == "diffusivity" else D
    for _ in range(substeps):
        c = nefi.advection_diffusion_step(c, t / substeps, h, [torch.tensor(a) for a in v], Dt,
                                          boundary)
    np.testing.assert_allclose(c.numpy(), want, rtol=0, atol=1e-13)


def test_the_gradients_match_central_differences():
    rng = np.random.default_rng(3)
    n0, n1 = 6, 5
    h = (0.2, 0.25)

    def leaf(a):
        return torch.tensor(a, requires_grad=True)

    c = leaf(rng.random((2, n0, n1)))  # a batch of two
    v = leaf(np.stack([rng.standard_normal((n0, n1)) * 0.5, np.zeros((n0, n1))]))  # rest too
    # Positive (a step down into a negative D is refused), with equal
    # neighbours along both axes (the harmonic mean's a == b branch).
    d = rng.random((n0, n1)) * 0.1 + 0.01
    d[2, :] = d[1, :]
    d[:, 3] = d[:, 2]
    D = leaf(d)
    for boundary in (["closed", "open"], ["periodic", "closed"], "open"):
        torch.autograd.gradcheck(
            lambda c, v, D: nefi.advection_diffusion_step(c, 0.01, h, v, D, boundary),
            (c, v, D), eps=1e-6, atol=1e-8)
    # From D = 0 everywhere (every face blocked), the gradient in D is the
    # one-sided derivative along a uniform D: a face of equal cells has half
    # of it to each, so a fit can open it.
    zero = torch.zeros((n0, n1), dtype=torch.float64, requires_grad=True)
    g = torch.tensor(rng.standard_normal((2, n0, n1)))

    def spread(D):
        return (nefi.advection_diffusion_step(c.detach(), 0.01, h, None, D, "closed") * g).sum()

    grad = torch.autograd.grad(spread(zero), zero)[0]
    eps = 1e-7
    one_sided = (spread(torch.full((n0, n1), eps, dtype=torch.float64)) - spread(zero)) / eps
    assert float(grad.abs().max()) > 0
    assert float(grad.sum()) == pytest.approx(float(one_sided), rel=1e-6)
    u, prev, speed = leaf(rng.random((n0, n1))), leaf(rng.random((n0, n1))), \
        leaf(1 + rng.random((n0, n1)))
    for boundary in ("dirichlet", "closed", "periodic"):
        torch.autograd.gradcheck(
            lambda u, p, s: torch.stack(nefi.wave_step((u, p), s, 0.01, h, boundary)),
            (u, prev, speed), eps=1e-6, atol=1e-8)


def test_a_time_stepper_of_these_steps_finds_a_release():
    """The release a flow and a diffusivity carried, from the tracer seen
    three times: a TimeStepper of advection_diffusion_step through
    from_forward (measured: relative error 0.087 at the default budget, in
    4 s; the spreading is a blur, so its finest detail is not recoverable)."""
    n = 48
    h = 1 / n
    x = (np.arange(n) + 0.5) * h
    truth = np.exp(-((x - 0.3) / 0.05) ** 2) + 0.6 * np.exp(-((x - 0.6) / 0.04) ** 2)
    v, D = 0.5, 2e-3
    dt = nefi.stable_dt(h, velocity=[v], diffusivity=D, safety=0.9)
    stepper = nefi.TimeStepper(lambda c, field, k: nefi.advection_diffusion_step(
        c, dt, h, [v], D, "closed"), 15, observe_at=[5, 10, 15])
    data = stepper(truth)
    assert data.shape == (3, n)
    r = nefi.from_forward(stepper, data, shape=(n,), prior="nonnegative + smooth",
                          representation="grid", noise=1e-3).solve()
    got = r["reconstruction"]
    err = np.linalg.norm(got - truth) / np.linalg.norm(truth)
    assert err < 0.12, err


def test_coefficients_in_any_form_give_the_same_step_and_bound():
    """Numbers, numpy arrays, tensors, a components-first velocity tensor and
    coefficients constant along an axis (broadcast) are one step and one
    bound; a float32 state steps in float32 and follows float64 to its
    precision."""
    rng = np.random.default_rng(7)
    n0, n1 = 9, 7
    h = (0.1, 0.15)
    c = torch.tensor(rng.random((n0, n1)))
    vx = rng.standard_normal((n0, 1)) * 0.3  # constant along axis 1
    D = rng.random((n0, n1)) * 0.01
    ref = nefi.advection_diffusion_step(c, 0.01, h, [torch.tensor(vx), 0.2], torch.tensor(D),
                                        "open")
    forms = [([vx, 0.2], D),
             (np.stack([np.broadcast_to(vx, (n0, n1)), np.full((n0, n1), 0.2)]), D),
             (torch.tensor(np.stack([np.broadcast_to(vx, (n0, n1)), np.full((n0, n1), 0.2)])),
              torch.tensor(D))]
    bound = nefi.stable_dt(h, velocity=[torch.tensor(vx), 0.2], diffusivity=torch.tensor(D),
                           boundary="open")
    for v, d in forms:
        torch.testing.assert_close(nefi.advection_diffusion_step(c, 0.01, h, v, d, "open"), ref,
                                   rtol=0, atol=0)
        assert nefi.stable_dt(h, velocity=v, diffusivity=d, boundary="open") == bound
    # The broadcast probe's bound is the full grid's.
    full = [torch.tensor(np.broadcast_to(vx, (n0, n1)).copy()),
            torch.full((n0, n1), 0.2, dtype=torch.float64)]
    assert nefi.stable_dt(h, velocity=full, diffusivity=torch.tensor(D), boundary="open") == \
        pytest.approx(bound, rel=1e-15)
    single = nefi.advection_diffusion_step(c.float(), 0.01, h, [torch.tensor(vx), 0.2],
                                           torch.tensor(D), "open")
    assert single.dtype == torch.float32
    torch.testing.assert_close(single.double(), ref, rtol=1e-6, atol=1e-6)
    u = c.float()
    stepped = nefi.wave_step((u, u), 1.0, 0.01, h)
    assert stepped[0].dtype == torch.float32


def test_bad_arguments_are_refused_by_name():
    u = torch.zeros((4, 4), dtype=torch.float64)
    cases = [
        (lambda: nefi.laplacian(u, (0.1, -1)), "spacing as 1 to 3 positive cell sizes"),
        (lambda: nefi.laplacian(u, (0.1,), "mirror"), "boundary one of closed, periodic"),
        (lambda: nefi.laplacian(u, (0.1, 0.1, 0.1)), "at least 3 axes"),
        (lambda: nefi.laplacian(np.zeros((4, 4)), (0.1, 0.1)), "floating-point torch tensor"),
        (lambda: nefi.wave_step(u, 1.0, 0.1, 0.1), r"state as \(u, u_prev\)"),
        (lambda: nefi.wave_step((u, u[:2]), 1.0, 0.1, (0.1, 0.1)),
         r"u_prev a tensor of u's shape \(4, 4\), dtype torch.float64 and device cpu, got "
         r"\(2, 4\)"),
        (lambda: nefi.wave_step((u, u), 1.0, -0.1, (0.1, 0.1)), "dt a positive number"),
        (lambda: nefi.wave_step((u, u), torch.ones(3), 0.1, (0.1, 0.1)),
         "c a number, array or tensor broadcastable"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1)), "got neither"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1), velocity=[1.0]),
         r"one entry per grid axis \(2\)"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1), velocity=torch.ones(3, 4, 4)),
         "first axis to be its 2 components"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1), diffusivity=1.0,
                                               boundary="dirichlet"),
         "boundary one of closed, open, periodic"),
        (lambda: nefi.stable_dt((0.1,), c=1.0, velocity=[1.0]), "got both"),
        (lambda: nefi.stable_dt((0.1,)), "got neither"),
        (lambda: nefi.stable_dt((0.1,), c=0.0), "finite, positive largest value"),
        (lambda: nefi.stable_dt((0.1,), diffusivity=1.0, safety=0), "safety a positive number"),
        (lambda: nefi.ricker(0.0, -1.0), "positive peak frequency"),
        (lambda: nefi.laplacian(u, (0.1, 0.1), None), "boundary one of closed"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1), diffusivity=-1.0),
         "diffusivity >= 0 and finite in every cell, got -1.0"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1), diffusivity=float("nan")),
         "diffusivity >= 0 and finite"),
        (lambda: nefi.stable_dt((0.1,), diffusivity=-1.0), "diffusivity >= 0 and finite"),
        (lambda: nefi.stable_dt((0.1,), velocity=torch.tensor(1.0)),
         "first axis to be its 1 components"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1),
                                               diffusivity=torch.ones(3, 4, 4)),
         r"diffusivity a number, array or tensor broadcastable to the state's shape \(4, 4\), "
         r"got shape \(3, 4, 4\)"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1), diffusivity="x"),
         "diffusivity a number, array or tensor broadcastable .* got str"),
        (lambda: nefi.wave_energy((u, u), 0.0, 0.1, (0.1, 0.1)), "wave speed c > 0"),
        (lambda: nefi.laplacian(u, "12"), "spacing as one positive cell size per grid axis"),
        (lambda: nefi.laplacian(u, (True, 1)), "spacing as one positive cell size"),
        (lambda: nefi.stable_dt((1,), c="a"), "wave speed c as a number, an array or a tensor"),
        (lambda: nefi.stable_dt((1, 1), velocity="ab"), r"one entry per grid axis \(2\)"),
        (lambda: nefi.ricker(0.1, 5, t0="a"), "t0 a finite number"),
        (lambda: nefi.ricker(0.1, 5, t0=float("nan")), "t0 a finite number"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1), velocity={"a": 1, "b": 2}),
         "a list, a tuple or a tensor"),
        (lambda: nefi.advection_diffusion_step(u, 0.1, (0.1, 0.1), velocity=(float("nan"), 0.0)),
         "finite velocity in every cell, got nan"),
    ]
    for call, message in cases:
        with pytest.raises(fieldkit.Error, match=message):
            call()
    # Numbers in any form: numpy scalars, 0-d arrays and tensors.
    h32 = np.float32(0.1)
    stepped = nefi.wave_step((u, u), torch.tensor(1.0), np.float32(0.01), (h32, np.float64(0.1)))
    torch.testing.assert_close(stepped[0], nefi.wave_step((u, u), 1.0, float(np.float32(0.01)),
                                                          (float(h32), 0.1))[0], rtol=0, atol=0)
    assert nefi.ricker(0.1, np.float32(10)) == nefi.ricker(0.1, 10.0)
    assert nefi.stable_dt(np.array(0.1), diffusivity=np.float64(1.0), safety=np.float32(0.5)) == \
        nefi.stable_dt(0.1, diffusivity=1.0, safety=float(np.float32(0.5)))
    with pytest.raises(fieldkit.Error, match="dt a positive number, got True"):
        nefi.wave_step((u, u), 1.0, True, (0.1, 0.1))
    # No motion at all: any step is stable.
    assert nefi.stable_dt((0.1,), velocity=[0.0]) == math.inf


def test_a_time_step_that_requires_grad_gets_its_gradient():
    u = torch.rand((6, 6), dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    dt = torch.tensor(0.05, dtype=torch.float64, requires_grad=True)
    nxt, _ = nefi.wave_step((u, 0.9 * u), 1.0, dt, (0.1, 0.1))
    nxt.sum().backward()
    lap = nefi.laplacian(u, (0.1, 0.1), "dirichlet")
    torch.testing.assert_close(dt.grad, (2 * 0.05 * lap).sum())  # d/d dt of dt^2 lap(u)
