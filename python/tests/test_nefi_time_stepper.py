"""nefi.TimeStepper: a time loop written with torch as a forward model. Its
block-replayed gradient equals autograd through the whole loop (a reaction-
diffusion state, a wave's two-level state, a coefficient read by every
step, observations before the end), whatever the block length; the loop
runs twice; from_forward fits through it; bad arguments are refused."""
import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi

torch = pytest.importorskip("torch")

N = 48


def lap(u):
    return torch.cat([u[1:2] - u[:1], u[2:] - 2 * u[1:-1] + u[:-2], u[-2:-1] - u[-1:]]) * N * N


def fisher_kpp(u, field, k, dt=6e-5, rate=20.0):
    """u_t = lap u + rate u (1 - u): closed ends."""
    return u + dt * (lap(u) + rate * u * (1 - u))


def wave(state, c2, k, dt=4e-3):
    """Leapfrog u_tt = (c2 u_x)_x; the state (u, u_prev), c2 the field."""
    u, prev = state
    flux = c2[1:] * (u[1:] - u[:-1]) * N  # at the inner faces, c2 of the upper cell
    div = torch.cat([flux[:1], flux[1:] - flux[:-1], -flux[-1:]]) * N
    return 2 * u - prev + dt * dt * div, u


def start(n=N):
    x = (np.arange(n) + 0.5) / n
    return 0.3 * np.exp(-((x - 0.35) / 0.08) ** 2) + 0.2 * np.exp(-((x - 0.7) / 0.05) ** 2)


def full_autograd(stepper, x, g):
    f = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    state = stepper._start(f)
    out = []
    for k in range(stepper.n_steps):
        state = stepper._step(state, f, k)
        if k + 1 in stepper.observe_at:
            out.append(stepper._measure(state))
    (torch.stack(out) * torch.tensor(g)).sum().backward()
    return f.grad.numpy()


def test_the_block_gradient_is_autograds_through_the_whole_loop():
    rng = np.random.default_rng(0)
    x = start()
    cases = [
        # the field is the initial state; three observations, the last before the end
        nefi.TimeStepper(fisher_kpp, 60, observe_at=[10, 33, 50]),
        # the field is a wave's squared speed, read by every step; the state a pair
        nefi.TimeStepper(wave, 45, init=lambda c2: (torch.tensor(start()), torch.tensor(start())),
                         observe_at=[20, 45]),
    ]
    for stepper, field in zip(cases, [x, 0.5 + 0.5 * x]):
        y = stepper(field)
        assert y.shape == (len(stepper.observe_at), N) and y.dtype == np.float64
        g = rng.standard_normal(y.shape)
        want = full_autograd(stepper, field, g)
        for every in (1, 7, stepper.n_steps, stepper.n_steps + 5):
            stepper.checkpoint_every = every
            np.testing.assert_allclose(stepper.vjp(field, g), want, rtol=1e-12, atol=1e-14)


def test_the_loop_runs_twice_one_block_at_a_time_last_first():
    steps = {"plain": [], "graph": []}

    def counted(u, field, k):
        steps["graph" if torch.is_grad_enabled() else "plain"].append(k)
        return fisher_kpp(u, field, k)

    stepper = nefi.TimeStepper(counted, 64, observe_at=[40, 60])  # blocks of 8
    assert stepper.checkpoint_every == 8
    x = start()
    y = stepper(x)  # as a fit calls it: the gradient then reuses this run
    stepper.vjp(x, np.ones(y.shape))
    # Up to the last observation, once without a graph, then block by block
    # backward under autograd: blocks 7 (steps 56-59), 6, ..., 0.
    assert steps["plain"] == list(range(60))
    assert steps["graph"] == [k for b in range(7, -1, -1) for k in range(8 * b, min(60, 8 * b + 8))]
    # At another field it runs its own forward first.
    steps["plain"].clear()
    stepper.vjp(2 * x, np.ones(y.shape))
    assert steps["plain"] == list(range(60))


def test_from_forward_recovers_an_initial_state_through_the_loop():
    # Two bumps spread by 20 Fisher-KPP steps, seen after 7 and 20 with 1 %
    # noise: 200 steps of a grid field with smooth beat reading the start off
    # the last frame (measured 24.4 dB against 20.3; the default budget, 376
    # steps, reaches 38.4 dB at chi 0.93). A step replays the Python loop
    # twice: ~16 ms here.
    x = start()
    stepper = nefi.TimeStepper(fisher_kpp, 20, observe_at=[7, 20])
    y0 = stepper(x)
    sigma = 0.01 * np.abs(y0).max()
    y = y0 + sigma * np.random.default_rng(1).standard_normal(y0.shape)
    r = nefi.from_forward(stepper, y, shape=(N,), prior="nonnegative + smooth", noise=sigma,
                          representation="grid", budget="200").solve()

    def psnr(v):
        return 10 * np.log10(np.ptp(x) ** 2 / np.mean((v - x) ** 2))

    assert psnr(r["reconstruction"]) > psnr(y[-1]) + 3, r["report"]


def test_one_observation_fits_data_without_its_leading_axis():
    # observe_at's default, one frame: the data may drop the leading axis of
    # length 1, and the gradient reads g in either shape alike.
    stepper = nefi.TimeStepper(fisher_kpp, 12)
    x = start()
    g = np.random.default_rng(3).standard_normal(N)
    np.testing.assert_array_equal(stepper.vjp(x, g), stepper.vjp(x, g[None]))
    np.testing.assert_allclose(stepper.vjp(x, g), full_autograd(stepper, x, g[None]),
                               rtol=1e-12, atol=1e-14)
    y = stepper(x)[0]
    r = nefi.from_forward(stepper, y, shape=(N,), noise=1e-3, budget="20").solve()
    assert np.isfinite(r["reconstruction"]).all()
    with pytest.raises(fieldkit.Error, match=r"init= to make the state from several fields"):
        stepper({"a": x, "b": x})


def test_a_rate_the_steps_read_is_fitted_with_the_field():
    # Fisher-KPP's rate through a parameter (its log: a parameter steps about
    # the fit's learning rate at a time, so give it in units of order one):
    # its gradient is autograd's through the loop, and from_forward fits it
    # with the start. Data at rate 200, the fit from 50: measured 142 after
    # 300 steps (the start 31.0 dB, chi 1.99), 188 after the default 750
    # (37.9 dB, chi 1.13). At rate 20 the loop's growth (2 %) is under the
    # noise, and the rate trades off with the start's amplitude.
    log_rate = torch.tensor(np.log(200.0), dtype=torch.float64, requires_grad=True)

    def kpp(u, field, k):
        return fisher_kpp(u, field, k, rate=torch.exp(log_rate))

    stepper = nefi.TimeStepper(kpp, 20, observe_at=[7, 20], params=[log_rate])
    x = start()
    g = np.random.default_rng(4).standard_normal((2, N))
    stepper.vjp(x, g)
    f = torch.tensor(x, requires_grad=True)
    u, out = f, []
    for k in range(20):
        u = kpp(u, f, k)
        if k + 1 in (7, 20):
            out.append(u)
    want = torch.autograd.grad((torch.stack(out) * torch.tensor(g)).sum(), log_rate)[0]
    np.testing.assert_allclose(stepper.param_grads[0], want.item(), rtol=1e-12)
    y0 = stepper(x)
    sigma = 0.01 * np.abs(y0).max()
    y = y0 + sigma * np.random.default_rng(1).standard_normal(y0.shape)
    with torch.no_grad():
        log_rate.fill_(np.log(50.0))
    r = nefi.from_forward(stepper, y, shape=(N,), prior="nonnegative + smooth", noise=sigma,
                          representation="grid", budget="300").solve()
    fitted = float(np.asarray(r["operator_parameters"][0]))
    assert 110 < np.exp(fitted) < 230, np.exp(fitted)
    assert log_rate.item() == pytest.approx(fitted)  # left in the tensor


def test_several_fields_get_autograds_gradient_each_and_fit_together():
    """A release and the diffusivity map that spreads it, both unknown: the
    steps read the dict of fields, init makes the state from it, and vjp
    gives each field autograd's gradient through the whole loop, whatever
    the block length. from_forward fits both (a dict prior): 100 steps
    bring the data loss down about 20x (measured 0.027 -> 0.0012; the
    release's relative error is 0.53 there, 0.23 after the default budget
    in 7 s, the pair being hard to tell apart)."""
    n = 32
    h = 1 / n
    x = (np.arange(n) + 0.5) * h
    truth = {"release": np.exp(-((x - 0.3) / 0.06) ** 2) + 0.6 * np.exp(-((x - 0.6) / 0.05) ** 2),
             "D": 2e-3 * (1 + (x > 0.5))}
    dt = nefi.stable_dt(h, velocity=[0.4], diffusivity=4e-3, safety=0.9)

    def step(c, fields, k):
        return nefi.advection_diffusion_step(c, dt, h, [0.4], fields["D"], "closed")

    g = np.random.default_rng(5).standard_normal((3, n))
    for every in (1, 4, None):
        stepper = nefi.TimeStepper(step, 24, observe_at=[8, 16, 24],
                                   init=lambda f: f["release"], checkpoint_every=every)
        got = stepper.vjp(truth, g)
        assert sorted(got) == ["D", "release"]
        f = {k: torch.tensor(v, requires_grad=True) for k, v in truth.items()}
        c, out = f["release"], []
        for k in range(24):
            c = step(c, f, k)
            if k + 1 in (8, 16, 24):
                out.append(c)
        want = torch.autograd.grad((torch.stack(out) * torch.tensor(g)).sum(),
                                   [f["release"], f["D"]])
        np.testing.assert_allclose(got["release"], want[0].numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got["D"], want[1].numpy(), rtol=1e-12, atol=1e-12)
        # After a call at the same fields, the gradient reuses its block
        # starts (as a fit does) and is the same.
        stepper(truth)
        assert stepper._same(stepper._last[0], truth)
        cached = stepper.vjp(truth, g)
        for k in got:
            np.testing.assert_array_equal(cached[k], got[k])
        assert not stepper._same(stepper._last[0], {**truth, "D": truth["D"] * 1.01})
    data = stepper(truth)
    r = nefi.from_forward(stepper, data, shape=(n,), representation="grid", noise=1e-3,
                          prior={"release": "nonnegative + smooth",
                                 "D": "bounded(0.0005, 0.01)"}, budget="100").solve()
    assert r["reconstruction"]["release"].shape == (n,) and r["reconstruction"]["D"].shape == (n,)
    loss = r["history"]["data_loss"]
    assert loss[-1] < 0.1 * loss[0], (loss[0], loss[-1])


def test_the_steps_run_on_the_device_they_are_given():
    """device="cpu" is the default's path; on a CUDA device (scripts/gpu-check
    runs this where torch sees one) the observations, the field's gradient
    and a param's follow the CPU's (f64 throughout; the device's sums may
    round in another order)."""
    def run(device, params_on=None):
        """The stepper on `device`, its rate param made on `params_on`."""
        log_rate = torch.tensor(np.log(20.0), dtype=torch.float64,
                                device=params_on or device or "cpu", requires_grad=True)
        stepper = nefi.TimeStepper(
            lambda u, field, k: fisher_kpp(u, field, k, rate=torch.exp(log_rate)), 30,
            observe_at=[10, 30], params=[log_rate], device=device)
        g = np.random.default_rng(6).standard_normal((2, N))
        return stepper(start()), stepper.vjp(start(), g), stepper.param_grads[0]

    cpu = run(None)
    for got, want in zip(run("cpu"), cpu):
        np.testing.assert_array_equal(got, want)
    if not torch.cuda.is_available():
        with pytest.raises(fieldkit.Error, match="device a torch device this torch can use"):
            nefi.TimeStepper(fisher_kpp, 10, device="cuda")
        pytest.skip("torch sees no CUDA device")
    # "cuda" resolves to the current device, as tensors made there report it;
    # params on a device make it the default.
    for got_run in (run("cuda"), run(None, params_on="cuda"), run("cuda:0", params_on="cuda")):
        for got, want in zip(got_run, cpu):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(fieldkit.Error, match="n_steps an integer >= 1"):
        nefi.TimeStepper(fisher_kpp, 0)
    with pytest.raises(fieldkit.Error, match=r"observe_at increasing step counts in \[1, 10\]"):
        nefi.TimeStepper(fisher_kpp, 10, observe_at=[5, 3])
    with pytest.raises(fieldkit.Error, match=r"observe_at increasing step counts in \[1, 10\]"):
        nefi.TimeStepper(fisher_kpp, 10, observe_at=[11])
    for bad in ([1.5], [2, "x"], [True], 3):
        with pytest.raises(fieldkit.Error, match=r"observe_at increasing step counts"):
            nefi.TimeStepper(fisher_kpp, 10, observe_at=bad)
    with pytest.raises(fieldkit.Error, match="checkpoint_every an integer >= 1"):
        nefi.TimeStepper(fisher_kpp, 10, checkpoint_every=0)
    with pytest.raises(fieldkit.Error, match="device a torch device"):
        nefi.TimeStepper(fisher_kpp, 10, device="gpu7")
    with pytest.raises(fieldkit.Error, match="device a torch device .* got 'meta'"):
        nefi.TimeStepper(fisher_kpp, 10, device="meta")  # holds no values
    rate = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    if torch.cuda.is_available():
        with pytest.raises(fieldkit.Error, match="every param on the steps' device cuda:0, got "
                                                 "one on cpu"):
            nefi.TimeStepper(fisher_kpp, 10, params=[rate], device="cuda:0")
    with pytest.raises(fieldkit.Error, match=r"params as a list of tensors, got one tensor"):
        nefi.TimeStepper(fisher_kpp, 10, params=rate)
    assert nefi.TimeStepper(fisher_kpp, torch.tensor(4), checkpoint_every=np.array(2)).n_steps == 4
    for bad in (None, float("nan"), float("inf"), 2.5, True, torch.tensor(2.5)):
        with pytest.raises(fieldkit.Error, match="n_steps an integer >= 1"):
            nefi.TimeStepper(fisher_kpp, bad)
    with pytest.raises(fieldkit.Error, match="checkpoint_every an integer >= 1"):
        nefi.TimeStepper(fisher_kpp, 10, checkpoint_every=float("nan"))
    # vjp's g must have the observations' size; tensors that require grad
    # are taken by value.
    stepper = nefi.TimeStepper(fisher_kpp, 4)
    x = torch.full((8,), 0.5, dtype=torch.float64, requires_grad=True)
    y = stepper(x)
    with pytest.raises(fieldkit.Error, match="g with the observations' 8 values, got shape"):
        stepper.vjp(x, np.ones(5))
    np.testing.assert_array_equal(stepper.vjp(x, torch.ones(8, requires_grad=True)),
                                  stepper.vjp(x.detach().numpy(), np.ones_like(y)))
    with pytest.raises(fieldkit.Error, match="a callable step"):
        nefi.TimeStepper(3, 10)
    with pytest.raises(fieldkit.Error, match="params to be floating-point torch tensors"):
        nefi.TimeStepper(fisher_kpp, 10, params=[torch.tensor(1.0)])
