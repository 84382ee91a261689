"""fieldkit.nefi.operators: the built-in forward models against numpy's own
transforms and loops, their adjoints, their noise estimates, an MRI solve
through from_forward with no Python model, and the errors."""
import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi

ops = nefi.operators


@pytest.fixture(autouse=True)
def one_thread():
    nefi.set_num_threads(1)


def smooth_phantom(n):
    """Two smooth blobs: a spectrum gone by the grid's outer frequencies."""
    t = (np.arange(n) + 0.5) / n
    y, x = np.meshgrid(t, t, indexing="ij")
    return (np.exp(-((x - 0.35) ** 2 + (y - 0.4) ** 2) / (2 * 0.08 ** 2))
            + 0.6 * np.exp(-((x - 0.7) ** 2 + (y - 0.65) ** 2) / (2 * 0.12 ** 2)))


def psnr(x, gt):
    return 10 * np.log10(np.ptp(gt) ** 2 / np.mean((x - gt) ** 2))


def test_fourier_sampling_is_numpys_orthonormal_fft_at_the_mask():
    rng = np.random.default_rng(0)
    mask = rng.random((6, 5)) < 0.5
    op = ops.fourier_sampling(mask)
    x = rng.standard_normal((6, 5))
    y = op(x)
    assert np.iscomplexobj(y) and y.shape == (mask.sum(),) == op.output_shape((6, 5))
    np.testing.assert_allclose(y, np.fft.fft2(x, norm="ortho")[mask], atol=1e-12)
    # The zero-filled inverse is the adjoint.
    filled = np.zeros((6, 5), complex)
    filled[mask] = y
    np.testing.assert_allclose(op.adjoint(y), np.fft.ifft2(filled, norm="ortho").real, atol=1e-12)
    # A centred mask is the same pattern in fftshift's order; a batch is per row.
    same = ops.fourier_sampling(np.fft.fftshift(mask), centered=True)
    np.testing.assert_allclose(same(x), y, atol=1e-12)
    xb = rng.standard_normal((3, 6, 5))
    np.testing.assert_allclose(op(xb)[1], op(xb[1]), atol=1e-12)


def test_sampling_downsample_phase_retrieval_and_beer_lambert_match_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4))
    keep = rng.random((6, 4)) < 0.4
    s = ops.sampling(keep)
    np.testing.assert_array_equal(s(x), x[keep])
    back = np.zeros((6, 4))
    back[keep] = s(x)
    np.testing.assert_array_equal(s.adjoint(s(x)), back)
    d = ops.downsample((2, 2))
    np.testing.assert_allclose(d(x), x.reshape(3, 2, 2, 2).mean(axis=(1, 3)), atol=1e-14)
    np.testing.assert_allclose(d.adjoint(np.ones((3, 2)), shape=(6, 4)), np.full((6, 4), 0.25))
    p = ops.phase_retrieval(2, oversample=2)
    np.testing.assert_allclose(p(x), np.abs(np.fft.fft2(x, s=(12, 8), norm="ortho")) ** 2,
                               atol=1e-12)
    assert p.homogeneity == 2 and not p.linear
    mu = np.abs(x)
    b = ops.beer_lambert(i0=3.0, shape=(6, 4), axis=1)
    np.testing.assert_allclose(b(mu), 3.0 * np.exp(-mu.sum(axis=1) / 6), atol=1e-14)
    # vjp against central differences.
    g, dx, eps = rng.standard_normal(6), rng.standard_normal((6, 4)), 1e-6
    fd = (b(mu + eps * dx) - b(mu - eps * dx)) / (2 * eps)
    assert np.vdot(fd, g) == pytest.approx(np.vdot(b.vjp(mu, g), dx), rel=1e-6)


def test_noise_estimates_read_kspace_and_neighbouring_samples():
    rng = np.random.default_rng(2)
    gt = smooth_phantom(48)
    mask = rng.random((48, 48)) < 0.4
    op = ops.fourier_sampling(mask)
    m = int(mask.sum())
    y = op(gt) + 0.02 * (rng.standard_normal(m) + 1j * rng.standard_normal(m))
    assert op.estimate_noise(y) == pytest.approx(0.02, rel=0.15)
    s = ops.sampling(mask)
    assert s.estimate_noise(s(gt) + 0.02 * rng.standard_normal(m)) == pytest.approx(0.02, rel=0.2)
    with pytest.raises(fieldkit.Error, match="sampling or fourier_sampling"):
        ops.downsample(2).estimate_noise(y.real)


def test_mri_from_kspace_beats_the_zero_filled_inverse():
    rng = np.random.default_rng(3)
    n = 32
    gt = smooth_phantom(n)
    f = np.fft.fftfreq(n) * 2
    radius = np.hypot(f[:, None], f[None, :])
    mask = (radius < 0.2) | (rng.random((n, n)) < 0.25)  # variable density, ~30 %
    op = ops.fourier_sampling(mask)
    m = int(mask.sum())
    y = op(gt) + 0.01 * (rng.standard_normal(m) + 1j * rng.standard_normal(m))
    problem = nefi.from_forward(op, y, prior="nonnegative + tv", budget="quick")
    assert problem.noise_estimated
    assert problem.noise_std == pytest.approx(0.01, rel=0.3)
    assert "conjugate pairs" in problem.decisions["noise_std"]["why"]
    out = problem.solve()
    assert out["reconstruction"].shape == (n, n)
    assert psnr(out["reconstruction"], gt) > psnr(op.adjoint(y), gt) + 3


def test_two_transmission_views_stacked_place_a_feature():
    """One view integrates along its rays; rows and columns together
    locate a square that neither view alone can."""
    n = 16
    gt = np.zeros((n, n))
    gt[4:8, 9:13] = 2.0
    views = ops.stack([ops.beer_lambert(shape=(n, n), axis=0),
                       ops.beer_lambert(shape=(n, n), axis=1)])
    assert views.output_shape((n, n)) == (2 * n,)
    y = views(gt)
    np.testing.assert_allclose(y[:n], np.exp(-gt.sum(0) / n), atol=1e-14)
    np.testing.assert_allclose(y[n:], np.exp(-gt.sum(1) / n), atol=1e-14)
    y = y + 0.002 * np.random.default_rng(4).standard_normal(2 * n)
    out = nefi.from_forward(views, y, prior="nonnegative + tv", budget="quick").solve()
    x = out["reconstruction"]
    assert x[4:8, 9:13].mean() > 3 * x[np.ix_(range(10, 16), range(0, 6))].mean()
    assert out["data_fit"]["discrepancy_ratio"] < 2


def test_a_built_in_operator_trains_multiscale_on_its_own_grid():
    # k-space samples cannot be resampled to a coarse grid: the operator stays
    # on its grid and the coarse stage sees it through the prolongation.
    n = 32
    gt = np.zeros((n, n))
    gt[8:20, 10:24] = 1.0
    mask = (np.random.default_rng(2).random((n, n)) < 0.4).astype(float)
    mask[0, 0] = 1
    op = ops.fourier_sampling(mask)
    y = op(gt)
    p = nefi.from_forward(op, y, prior="nonnegative + tv", noise=0.0, representation="grid",
                          multiscale=True, budget="300")
    assert "then" in p.decisions["stages"]["value"]
    r = p.solve()
    assert [s["shape"] for s in r["stages"]] == [[16, 16], [32, 32]]
    assert r["reconstruction"].shape == (n, n)
    assert psnr(r["reconstruction"], gt) > 20


def test_refusals_name_what_was_expected():
    mask = np.ones((8, 8))
    op = ops.fourier_sampling(mask)
    with pytest.raises(fieldkit.Error, match="linear"):
        ops.phase_retrieval(2).adjoint(np.ones((16, 16)), shape=(8, 8))
    with pytest.raises(fieldkit.Error, match="linear path"):
        ops.beer_lambert(ops.phase_retrieval(2))
    with pytest.raises(fieldkit.Error, match="path operator or the field's shape"):
        ops.beer_lambert()
    with pytest.raises(fieldkit.Error, match="expected complex measurements"):
        nefi.from_forward(op, np.ones(64))
    with pytest.raises(fieldkit.Error, match="at least one cell > 0"):
        ops.sampling(np.zeros((4, 4)))
    with pytest.raises(fieldkit.Error, match="no homogeneity"):
        nefi.from_forward(ops.phase_retrieval(2), np.ones((16, 16)), (8, 8), homogeneity=1)
    with pytest.raises(fieldkit.Error, match=r"\(\.\.\., \[8, 8\]\)"):
        op(np.ones((4, 4)))
    with pytest.raises(fieldkit.Error, match="real-valued"):
        ops.stack([op, ops.sampling(mask)])
    with pytest.raises(fieldkit.Error, match="expected shape="):
        nefi.from_forward(ops.phase_retrieval(2), np.ones((16, 16)))
    with pytest.raises(fieldkit.Error, match=r"the grid \(8, 8\)"):
        nefi.from_forward(ops.sampling(mask), np.ones(64), shape=(16, 4))
    with pytest.raises(fieldkit.Error, match="field's shape"):
        ops.stack([ops.downsample(2)])
    p = nefi.from_forward(ops.sampling(mask), np.ones(64), prior="nonnegative", budget="5")
    with pytest.raises(fieldkit.Error, match="'cpu', 'cuda' or 'cuda:N'"):
        p.solve(device="gpu")
    if not fieldkit.cuda_available():  # a device this process cannot use, before any work
        with pytest.raises(fieldkit.Error,
                           match=r"ForwardProblem.solve device: expected cpu.*got cuda:0"):
            p.solve(device="cuda")
    r = p.solve(device="cpu")
    assert r["reconstruction"].shape == (8, 8)
    assert r["device"] == "cpu" and r["stages"][0]["graph_steps"] == 0


def test_blur_and_radon_match_their_definitions_and_solve():
    n = 33
    delta = np.zeros(n)
    delta[16] = 1
    i = np.arange(n) - 16
    kernel = np.where(np.abs(i) <= 8, np.exp(-0.5 * (i / 2.0) ** 2), 0)  # 4 sigma, 2 cells
    np.testing.assert_allclose(ops.gaussian_blur((n,), 2.0)(delta), kernel / kernel.sum(),
                               atol=1e-12)
    wrapped = ops.gaussian_blur((n,), 2.0, periodic=True)(np.roll(delta, -16))  # at cell 0
    np.testing.assert_allclose(wrapped, np.roll(kernel / kernel.sum(), -16), atol=1e-12)
    rng = np.random.default_rng(6)
    x = rng.random((8, 8))
    ct = ops.radon((8, 8), n_views=4)
    assert ct.output_shape((8, 8)) == (4, 8) and ct.linear
    np.testing.assert_allclose(ct(x)[0], x.sum(axis=1) / 8, atol=1e-12)  # view 0: rows, dt 1/8
    # Sparse-view CT of a disc, and its transmission form (Beer-Lambert over the same rays).
    t = (np.arange(32) + 0.5) / 32
    gt = ((t[:, None] - 0.45) ** 2 + (t[None, :] - 0.55) ** 2 < 0.06).astype(float)
    ct = ops.radon((32, 32), n_views=12)
    y = ct(gt) + 0.002 * rng.standard_normal(ct.output_shape((32, 32)))
    out = nefi.from_forward(ct, y, prior="nonnegative + tv", budget="quick").solve()
    assert psnr(out["reconstruction"], gt) > 28  # 34 dB here; the backprojection 8.7
    transmission = ops.beer_lambert(ct, i0=1.0)
    assert np.allclose(transmission(gt), np.exp(-ct(gt)))


def test_advection_diffusion_carries_the_mass_and_its_gradient_is_the_transpose():
    n = 24
    t = (np.arange(n) + 0.5) / n
    x0, x1 = np.meshgrid(t, t, indexing="ij")
    puff = np.exp(-((x0 - 0.35) ** 2 + (x1 - 0.5) ** 2) / (2 * 0.05 ** 2))
    # A uniform wind in a closed box: the mass stays and its centroid moves by
    # v t (to 1e-6: the walls hold back the puff's far tail).
    op = ops.advection_diffusion((n, n), [0.2, 0.4], velocity=(0.5, -0.25), diffusivity=1e-3,
                                 scheme="upwind")
    assert op.linear and op.kind == "advection_diffusion"
    y = op(puff)
    assert y.shape == op.output_shape((n, n)) == (2, n, n) and y.min() >= 0
    for k, time in enumerate([0.2, 0.4]):
        np.testing.assert_allclose(y[k].sum(), puff.sum(), rtol=1e-12)
        np.testing.assert_allclose((y[k] * x0).sum() / y[k].sum(), 0.35 + 0.5 * time, rtol=0,
                                   atol=1e-6)
        np.testing.assert_allclose((y[k] * x1).sum() / y[k].sum(), 0.5 - 0.25 * time, rtol=0,
                                   atol=1e-6)
    # Lax-Wendroff (the default) spreads it by D alone: the variance along
    # each axis grows by 2 D t (upwind's by about |v| h / 2 more).
    lw = ops.advection_diffusion((n, n), [0.2, 0.4], velocity=(0.5, -0.25), diffusivity=1e-3)

    def variance(c, x):
        m = (c * x).sum() / c.sum()
        return (c * (x - m) ** 2).sum() / c.sum()

    spread = lw(puff)
    for k, time in enumerate([0.2, 0.4]):
        for x in (x0, x1):  # to 1e-6: the walls hold back the far tail
            np.testing.assert_allclose(variance(spread[k], x), variance(puff, x) + 2e-3 * time,
                                       rtol=0, atol=1e-6)
        assert variance(y[k], x0) > variance(puff, x0) + 2e-3 * time + 0.2 * 0.5 / n * time
    # A swirling flow per cell, open and periodic sides, sensors, a source:
    # <A s, g> = <s, A^T g>, and a batch row is its own release.
    rng = np.random.default_rng(3)
    sensors = rng.random((n, n)) < 0.1
    src = ops.advection_diffusion((n, n), [0.1, 0.3], velocity=(np.sin(np.pi * x1), x0 - 0.5),
                                  diffusivity=2e-3, unknown="source",
                                  boundary=("open", "periodic"), sensors=sensors)
    assert src.output_shape((n, n)) == (2, sensors.sum())
    s, g = rng.standard_normal((n, n)), rng.standard_normal((2, sensors.sum()))
    np.testing.assert_allclose(np.vdot(src(s), g), np.vdot(s, src.adjoint(g)), rtol=1e-12)
    batch = rng.standard_normal((2, n, n))
    np.testing.assert_array_equal(src(batch)[1], src(batch[1]))


def test_a_pollutant_release_is_located_from_sensor_time_series():
    """Two puffs released into a wind that bends, seen by 36 sensors at six
    times with 1 % noise: two blobs find both (relative error 0.10 over four
    noise draws, the data simulated with the model fitted; 0.12 from data
    simulated 8 x finer: examples/from_forward_release_study.py)."""
    n = 32
    t = (np.arange(n) + 0.5) / n
    x0, x1 = np.meshgrid(t, t, indexing="ij")
    gt = (np.exp(-((x0 - 0.3) ** 2 + (x1 - 0.35) ** 2) / (2 * 0.04 ** 2))
          + 0.7 * np.exp(-((x0 - 0.6) ** 2 + (x1 - 0.25) ** 2) / (2 * 0.04 ** 2)))
    sensors = np.zeros((n, n))
    sensors[2::5, 2::5] = 1
    op = ops.advection_diffusion((n, n), [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                                 velocity=(0.6, 0.4 * np.sin(np.pi * x0)), diffusivity=2e-3,
                                 boundary="open", sensors=sensors)
    y0 = op(gt)
    sigma = 0.01 * np.abs(y0).max()
    y = y0 + sigma * np.random.default_rng(0).standard_normal(y0.shape)
    out = nefi.from_forward(op, y, shape=(n, n), prior="nonnegative", noise=sigma,
                            representation="blobs", shapes=2).solve()
    r = out["reconstruction"]
    assert np.linalg.norm(r - gt) / np.linalg.norm(gt) < 0.2
    for side in (x0 < 0.45, x0 > 0.45):  # each puff's peak within a cell of the truth
        found = np.unravel_index(np.argmax(r * side), r.shape)
        true = np.unravel_index(np.argmax(gt * side), gt.shape)
        assert max(abs(a - b) for a, b in zip(found, true)) <= 1, (found, true)


def test_a_flow_is_found_from_puffs_it_carries():
    """The velocity as the unknown: four puffs carried by a flow of mean
    (0.4, -0.3) across a periodic box and seen at three times. The field is
    (2, n, n); its gradient matches central differences, and a bounded grid
    fit finds the flow's direction where the puffs pass (measured: the mean
    fit (0.32, -0.15) after 1500 steps; the flow between the puffs leaves
    no trace to fit)."""
    n = 16
    c = (np.arange(n) + 0.5) / n
    x, y = np.meshgrid(c, c, indexing="ij")
    release = sum(np.exp(-((x - a) ** 2 + (y - b) ** 2) / (2 * 0.06 ** 2))
                  for a in (0.3, 0.7) for b in (0.3, 0.7))
    op = ops.advection_diffusion((n, n), [0.1, 0.2, 0.3], unknown="velocity", release=release,
                                 diffusivity=1e-3, boundary="periodic")
    assert op.shape == (2, n, n) and op.output_shape(op.shape) == (3, n, n)
    assert op.homogeneity is None and not op.linear
    v = np.stack([0.4 + 0.2 * np.sin(2 * np.pi * y), np.full((n, n), -0.3)])
    data = op(v)
    g = np.random.default_rng(1).standard_normal(data.shape)
    d = np.random.default_rng(2).standard_normal(v.shape) * 1e-3
    eps = 1e-3
    fd = (np.vdot(op(v + eps * d), g) - np.vdot(op(v - eps * d), g)) / (2 * eps)
    assert abs(fd - np.vdot(op.vjp(v, g), d)) < 1e-6 * abs(fd)
    r = nefi.from_forward(op, data, prior="bounded(-1, 1) + smooth", representation="grid",
                          noise=1e-4, budget="1500").solve()
    got = r["reconstruction"]
    assert got.shape == (2, n, n)
    assert got[0].mean() > 0.25 and got[1].mean() < -0.1, (got[0].mean(), got[1].mean())
    assert r["data_fit"]["data_psnr"] > 55
    # The component axis is no space: plain symmetric mirrors the space axes
    # only (it averaged vx with vy), a listed component axis is refused.
    p = nefi.from_forward(op, data, prior="bounded(-1, 1) + symmetric", representation="grid",
                          noise=1e-4, budget=2)
    assert "symmetric(1, 2)" in p.prior, p.prior
    for prior, what in (("bounded(-1, 1) + symmetric(0)", "symmetric axes of space"),
                        ("bounded(-1, 1) + increasing(0, 1)", "a monotone axis of space")):
        with pytest.raises(fieldkit.Error, match=what):
            nefi.from_forward(op, data, prior=prior, representation="grid", noise=1e-4)
    with pytest.raises(fieldkit.Error, match="no velocity option with the unknown velocity"):
        ops.advection_diffusion((n, n), [0.1], unknown="velocity", release=release,
                                velocity=(0.1, 0.1))
    with pytest.raises(fieldkit.Error, match=r"the velocity of shape \[2, 16, 16\]"):
        op(np.zeros((n, n)))


def test_a_diffusivity_map_is_recovered_from_a_spreading_release():
    """A known release (16 puffs over the box) spreading for 0.4 time units
    in a closed box through a diffusivity of 2e-3 with a disc of 8e-3, seen
    over the whole grid at three times with 1 % noise: a grid field with
    bounded(0, 0.02) + tv finds the disc (measured 22.7 dB, the disc's mean
    0.0074, the rest 0.0020, chi 0.96). A bounded prior keeps the start's
    search of constants among diffusivities the explicit steps can take
    cheaply (with "positive" it tries up to 1e4: 16 x the time here)."""
    n = 32
    c = (np.arange(n) + 0.5) / n
    x, y = np.meshgrid(c, c, indexing="ij")
    disc = ((x - 0.6) ** 2 + (y - 0.4) ** 2) < 0.2 ** 2
    D = 2e-3 + 6e-3 * disc
    release = sum(np.exp(-((x - a) ** 2 + (y - b) ** 2) / (2 * 0.03 ** 2))
                  for a in np.linspace(0.15, 0.85, 4) for b in np.linspace(0.15, 0.85, 4))
    op = ops.advection_diffusion((n, n), [0.1, 0.2, 0.4], unknown="diffusivity",
                                 release=release)
    assert op.homogeneity is None and not op.linear
    y0 = op(D)
    sigma = 0.01 * np.abs(y0).max()
    data = y0 + sigma * np.random.default_rng(0).standard_normal(y0.shape)
    r = nefi.from_forward(op, data, prior="bounded(0, 0.02) + tv", representation="grid",
                          noise=sigma).solve()
    got = r["reconstruction"]
    assert 10 * np.log10(np.ptp(D) ** 2 / np.mean((got - D) ** 2)) > 20, r["report"]
    assert abs(got[disc].mean() - 8e-3) < 1.5e-3 and abs(got[~disc].mean() - 2e-3) < 3e-4
    assert r["data_fit"]["discrepancy_ratio"] < 1.1
    # The gradient of a smooth functional against central differences.
    g = np.random.default_rng(1).standard_normal(y0.shape)
    d = np.random.default_rng(2).standard_normal((n, n)) * 1e-3
    eps = 1e-3
    fd = (np.vdot(op(D + eps * d), g) - np.vdot(op(D - eps * d), g)) / (2 * eps)
    assert abs(fd - np.vdot(op.vjp(D, g), d)) < 1e-6 * abs(fd)
    with pytest.raises(fieldkit.Error, match="a real release of the grid's shape"):
        ops.advection_diffusion((n, n), [0.1], unknown="diffusivity")
    with pytest.raises(fieldkit.Error, match="no diffusivity option with the unknown"):
        ops.advection_diffusion((n, n), [0.1], unknown="diffusivity", release=release,
                                diffusivity=1e-3)
    with pytest.raises(fieldkit.Error, match="release_is 'initial' or 'source'"):
        ops.advection_diffusion((n, n), [0.1], unknown="diffusivity", release=release,
                                release_is="sink")
    with pytest.raises(fieldkit.Error, match="a diffusivity >= 0 in every cell"):
        op(-D)


def test_advection_diffusion_refusals_name_what_was_expected():
    with pytest.raises(fieldkit.Error, match="one boundary for every axis or one per axis"):
        ops.advection_diffusion((8, 8), [1.0], boundary=("open", "open", "open"))
    with pytest.raises(fieldkit.Error, match="velocity component 1 of the grid's shape"):
        ops.advection_diffusion((8, 8), [1.0], velocity=(1.0, np.ones((4, 4))))
    with pytest.raises(fieldkit.Error, match="increasing observation times"):
        ops.advection_diffusion((8, 8), [0.5, 0.2])
    with pytest.raises(fieldkit.Error, match="'wall'"):
        ops.advection_diffusion((8, 8), [1.0], boundary="wall")
    with pytest.raises(fieldkit.Error, match="a scheme upwind or lax_wendroff"):
        ops.advection_diffusion((8, 8), [1.0], scheme="quick")
    with pytest.raises(fieldkit.Error, match="an unknown initial, source, diffusivity or velocity"):
        ops.advection_diffusion((8, 8), [1.0], unknown="flow")
    with pytest.raises(fieldkit.Error, match="at least one cell > 0"):
        ops.advection_diffusion((8, 8), [1.0], sensors=np.zeros((8, 8)))
    with pytest.raises(fieldkit.Error, match="one entry per axis"):
        ops.advection_diffusion((8, 8), [1.0], velocity=0.5)
    with pytest.raises(fieldkit.Error, match="real velocity"):
        ops.advection_diffusion((8, 8), [1.0], velocity=(1.0, np.ones((8, 8)) * 1j))


def test_counts_and_sizes_must_be_whole_numbers():
    """A fractional count, size or axis is refused by name, not truncated
    (downsample((2, 1.9)) binned nothing along axis 1); a whole float is
    taken as its integer."""
    cases = [(lambda: ops.downsample((2, 1.9)), "downsample: expected factors"),
             (lambda: ops.axis_integral((4, 6), axis=0.9), "axis_integral: expected axis"),
             (lambda: ops.radon((8, 8), n_views=2.5), "radon: expected n_views"),
             (lambda: ops.radon((8, 8), det_per_pixel=True), "radon: expected det_per_pixel"),
             (lambda: ops.phase_retrieval(2.7), "phase_retrieval: expected ndim"),
             (lambda: ops.gaussian_blur((4.7,), 1.0), "gaussian_blur: expected shape's sizes"),
             (lambda: ops.sampling(np.ones(4)).output_shape((4.5,)), "output_shape")]
    for call, message in cases:
        with pytest.raises(fieldkit.Error, match=message + ".* a whole number"):
            call()
    x = np.arange(16.0).reshape(4, 4)
    np.testing.assert_array_equal(ops.downsample((2, 2.0))(x), ops.downsample((2, 2))(x))
    A = np.eye(8)[:5]
    y = A @ np.linspace(0, 1, 8)
    for call, message in [(lambda: nefi.from_forward(A, y, hidden=2.5), "hidden a whole"),
                          (lambda: nefi.from_forward(A, y, depth="3"), "depth a whole"),
                          (lambda: nefi.from_forward(A, y, seed=-1), r"seed a whole number in"),
                          (lambda: nefi.from_forward(A, y).solve(seed=2 ** 70), "seed a whole"),
                          (lambda: nefi.from_forward(A, y).solve(steps=2.7), "steps a whole"),
                          (lambda: nefi.lr_range_test(nefi.from_forward(A, y), lrs=()),
                           "at least one learning rate")]:
        with pytest.raises(fieldkit.Error, match=message):
            call()
    r = nefi.from_forward(A, y, hidden=16.0, depth=2, representation="neural").solve(steps=2.0)
    assert r["reconstruction"].shape == (8,)
    # 0 octaves is the engine's "no Fourier bands"; 0-d arrays are numbers.
    nefi.from_forward(A, y, n_octaves=0, hidden=np.array(8), representation="neural")
    assert ops.radon((8, 8), n_views=np.array(4)).output_shape((8, 8))[0] == 4
    for call, message in [(lambda: nefi.from_forward(A, y, shape=(7.5,)), "shape's sizes"),
                          (lambda: nefi.from_forward(A, y).solve(steps=2 ** 40), r"steps a whole"),
                          (lambda: nefi.from_forward(A, y, homogeneity=True),
                           "homogeneity a finite number")]:
        with pytest.raises(fieldkit.Error, match=message):
            call()


def test_what_the_operator_hunt_found_is_refused_by_name():
    """A complex path for beer_lambert (it split Re and Im into two real
    transmissions), mask weights outside [0, 1], a NaN homogeneity; the
    model's first call gets a read-only array as every later one does."""
    with pytest.raises(fieldkit.Error, match="beer_lambert: expected a real path"):
        ops.beer_lambert(ops.fourier_sampling(np.ones((4, 4))), 2.0)
    A = np.eye(6)
    y = A @ np.linspace(0, 1, 6)
    for mask, bad in [(2 * np.ones(6), "2.0"), (np.full(6, np.nan), "nan"), (-np.ones(6), "-1.0")]:
        with pytest.raises(fieldkit.Error, match=f"mask weights in \\[0, 1\\], got {bad}"):
            nefi.from_forward(A, y, mask=mask)
    with pytest.raises(fieldkit.Error, match="homogeneity a finite number"):
        nefi.from_forward(lambda x: x ** 2, y, vjp=lambda x, g: 2 * x * g,
                          homogeneity=float("nan"))
    writable = []

    def forward(x):
        writable.append(x.flags.writeable)
        return x

    nefi.from_forward(forward, y, vjp=lambda x, g: g, check=False)
    assert writable and not any(writable)


def test_complex_values_and_misfit_parts_are_refused_by_name():
    """A float64 cast kept a complex field's or gradient's real part alone
    (numpy's warning the only sign); a stack part for another grid failed
    only when called, after output_shape had answered."""
    z = np.ones((4, 4)) + 1j
    with pytest.raises(fieldkit.Error, match="fourier_sampling: expected a real field, got "
                                             "complex"):
        ops.fourier_sampling(np.ones((4, 4)))(z)
    with pytest.raises(fieldkit.Error, match="sampling.vjp: expected a real output gradient"):
        ops.sampling(np.ones((4, 4))).vjp(np.ones((4, 4)), np.ones(16) + 1j)
    with pytest.raises(fieldkit.Error, match="sampling: expected a real mask"):
        ops.sampling(z)
    # A complex output's gradient is complex: taken.
    assert ops.fourier_sampling(np.ones((4, 4))).vjp(np.ones((4, 4)), np.ones(16) + 1j).shape \
        == (4, 4)
    with pytest.raises(fieldkit.Error, match=r"stack: expected parts for the field's shape "
                                             r"\(8, 8\), got fft_convolution for \(4, 4\)"):
        ops.stack([ops.sampling(np.ones((8, 8))), ops.gaussian_blur((4, 4), 1.0)])
    with pytest.raises(fieldkit.Error, match="stack: expected parts that take a field of shape "
                                             r"\(8, 8\), got downsample"):
        ops.stack([ops.sampling(np.ones((8, 8))), ops.downsample(2)])
    assert ops.stack([ops.sampling(np.ones((8, 8))), ops.downsample((2, 2))]).output_shape(
        (8, 8)) == (80,)
    # A built-in's output is right by construction: the measurement is named
    # (it said forward returned the wrong shape); a 1-D "matrix" was an
    # IndexError.
    with pytest.raises(fieldkit.Error, match=r"expected a measurement of the built-in sampling's "
                                             r"output shape \(30,\).*got \(31,\)"):
        nefi.from_forward(ops.sampling(np.ones(30)), np.ones(31), (30,))
    with pytest.raises(fieldkit.Error, match=r"a matrix \(2-D\) or a callable as forward, got "
                                             r"an array of shape \(4,\)"):
        nefi.from_forward(np.ones(4), np.ones(3))


def test_a_lazily_negated_tensor_is_read_as_its_values():
    """z.conj().imag only marks itself negated: .numpy() refused it, and a
    conjugated complex tensor got torch's error instead of the refusal of
    complex values."""
    torch = pytest.importorskip("torch")
    z = torch.randn(16, dtype=torch.cdouble, generator=torch.Generator().manual_seed(2))
    x = z.conj().imag
    assert x.is_neg()
    plain = x.resolve_neg().numpy()
    assert nefi.metrics.mse(x, plain) == 0.0
    op = ops.sampling(np.ones(16))
    assert np.array_equal(op(x), plain)
    assert np.array_equal(op.vjp(x, x), op.vjp(plain, plain))
    with pytest.raises(fieldkit.Error, match="mse: expected real values, got complex"):
        nefi.metrics.mse(z.conj(), plain)


def test_a_built_in_takes_a_measurement_up_to_axes_of_length_one():
    """As a Python model's output is taken: a (1, m) measurement (and its
    mask) of a built-in whose output is (m,) solves as the (m,) one does."""
    rng = np.random.default_rng(0)
    op = ops.sampling(rng.random(64) < 0.5)
    s = op(rng.random(64))
    r1 = nefi.from_forward(op, s[None], noise=0.01, budget="30", mask=np.ones((1, len(s))))
    r2 = nefi.from_forward(op, s, noise=0.01, budget="30", mask=np.ones(len(s)))
    np.testing.assert_array_equal(r1.solve()["reconstruction"], r2.solve()["reconstruction"])
    with pytest.raises(fieldkit.Error, match="measurement"):
        nefi.from_forward(op, np.concatenate([s, s])[None], noise=0.01)
