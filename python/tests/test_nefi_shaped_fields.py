"""fieldkit.nefi.from_forward with the shaped representations and priors:
gaussian blobs, stars (ellipses with an outlined boundary), polygons
(ellipses that take corners), layers (strata meeting at bent interfaces)
and the phases prior (a field of K known values), each against the
representations that do not know the shape."""
import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi


def psnr(x, gt):
    return 10 * np.log10(gt.max() ** 2 / np.mean((x - gt) ** 2))


@pytest.fixture(autouse=True)
def one_thread():
    nefi.set_num_threads(1)


def test_blobs_locate_two_sources_under_a_wide_blur():
    # Two gaussian sources on a zero background behind a blur wider than
    # they are: four blobs (started where the data pull hardest) find both
    # centres to a cell and each source's total (what a blur keeps; its
    # peak and width trade off within the noise), the spare two fading out.
    n = 32
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 3.0) ** 2)
    b /= b.sum(1, keepdims=True)
    centres = [(9.3, 20.6), (21.8, 11.2)]
    gt = sum(a * np.exp(-0.5 * ((i[:, None] - r) ** 2 + (i[None, :] - c) ** 2) / s ** 2)
             for a, (r, c), s in zip([1.0, 0.6], centres, [2.0, 1.5]))
    y = b @ gt @ b.T + 0.001 * np.random.default_rng(1).standard_normal((n, n))
    p = nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                          representation="blobs", shapes=4, noise=0.001, budget="3000")
    assert "4 gaussian blobs" in p.decisions["representation"]["why"]
    r = p.solve(ground_truth=gt)
    assert r["n_parameters"] == 4 * 7 + 1
    x = r["reconstruction"]
    for row, col in centres:
        win = (slice(int(row) - 5, int(row) + 6), slice(int(col) - 5, int(col) + 6))
        rr, cc = np.unravel_index(np.argmax(x[win]), x[win].shape)
        assert abs(int(row) - 5 + rr - row) <= 1 and abs(int(col) - 5 + cc - col) <= 1, r["report"]
        assert abs(x[win].sum() - gt[win].sum()) < 0.03 * gt[win].sum(), r["report"]
    assert psnr(x, gt) > 35, r["report"]
    # A grid field, same budget: a blur this wide leaves it far behind
    # (from_forward_parametric_study.py: blobs 38.8 dB, grid 22.7, neural 26.9).
    q = nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                          noise=0.001, budget="3000", representation="grid")
    assert psnr(q.solve()["reconstruction"], gt) < psnr(x, gt) - 10
    with pytest.raises(fieldkit.Error, match="shape count"):
        nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                          representation="ellipses", shapes=0)
    with pytest.raises(fieldkit.Error, match="hidden/depth"):
        nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                          representation="blobs", hidden=32)
    with pytest.raises(fieldkit.Error, match="shapes only with representation 'blobs' or"):
        nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b, shapes=3)
    with pytest.raises(fieldkit.Error, match="rank only with representation 'lowrank'"):
        nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                          representation="blobs", rank=3)
    with pytest.raises(fieldkit.Error, match="an integer shapes"):
        nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                          representation="blobs", shapes=2.5)


def test_a_star_outlines_a_lobed_inclusion():
    # A three-lobed inclusion behind a 2-cell blur: one star (an ellipse
    # with an outline of angular degrees 3..6) finds its outline and fits to
    # the noise; one ellipse cannot bend to it.
    n = 40
    c = (2 * np.arange(n) + 1) / n - 1
    dx, dy = np.meshgrid(c - 0.1, c + 0.05, indexing="ij")
    edge = 0.5 * (1 + 0.3 * np.cos(3 * (np.arctan2(dy, dx) - 0.4)))
    gt = np.where(np.hypot(dx, dy) < edge, 1.2, 0.2)
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 2.0) ** 2)
    b /= b.sum(1, keepdims=True)
    y = b @ gt @ b.T + 0.01 * np.random.default_rng(7).standard_normal((n, n))

    def iou(x):
        a, t = x > 0.7, gt > 0.7
        return (a & t).sum() / (a | t).sum()

    def fit(representation):
        p = nefi.from_forward(lambda x: b @ x @ b.T, y, adjoint=lambda g: b.T @ g @ b,
                              noise=0.01, representation=representation, shapes=1)
        return p, p.solve()

    p, r = fit("stars")
    assert "1 stars (outlines of degree 6)" in p.decisions["representation"]["why"]
    assert r["n_parameters"] == (1 + 2 + 4 + 8) + 1
    assert iou(r["reconstruction"]) > 0.97, r["report"]
    assert r["data_fit"]["discrepancy_ratio"] < 1.2, r["report"]
    assert iou(fit("ellipses")[1]["reconstruction"]) < 0.8
    model = dict(forward=lambda x: b @ x @ b.T, measurement=y, adjoint=lambda g: b.T @ g @ b)
    with pytest.raises(fieldkit.Error, match="harmonics only with representation 'stars'"):
        nefi.from_forward(**model, representation="ellipses", harmonics=4)
    with pytest.raises(fieldkit.Error, match=r"an outline degree in \[3, 8\]"):
        nefi.from_forward(**model, representation="stars", harmonics=9)
    with pytest.raises(fieldkit.Error, match="stars on a 2- or 3-D field"):
        nefi.from_forward(lambda x: x, np.ones(16), adjoint=lambda g: g, representation="stars")


def test_a_polygon_keeps_a_squares_corners():
    # A square turned by 0.35 rad behind a 2-cell blur: one polygon (an
    # ellipse that takes 6 corners over the first half of the fit) finds its
    # corners and fits to the noise; a star's harmonics round them off.
    # Measured: polygon IoU 0.997, 26.9 dB, chi 1.02 (4 vertices: 26.9 dB);
    # star 0.945, 22.5 dB, chi 1.28; ellipse 0.849, 17.4 dB.
    n = 40
    c = (2 * np.arange(n) + 1) / n - 1
    x, y = np.meshgrid(c - 0.1, c + 0.05, indexing="ij")
    u, v = np.cos(0.35) * x + np.sin(0.35) * y, -np.sin(0.35) * x + np.cos(0.35) * y
    gt = np.where((np.abs(u) < 0.45) & (np.abs(v) < 0.45), 1.2, 0.2)
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 2.0) ** 2)
    b /= b.sum(1, keepdims=True)
    data = b @ gt @ b.T + 0.01 * np.random.default_rng(7).standard_normal((n, n))
    model = dict(forward=lambda x: b @ x @ b.T, measurement=data, adjoint=lambda g: b.T @ g @ b)

    def iou(x):
        a, t = x > 0.7, gt > 0.7
        return (a & t).sum() / (a | t).sum()

    p = nefi.from_forward(**model, noise=0.01, representation="polygons", shapes=1)
    assert "1 polygons (6 vertices)" in p.decisions["representation"]["why"]
    r = p.solve()
    assert r["n_parameters"] == (1 + 2 + 4 + 6) + 1
    assert iou(r["reconstruction"]) > 0.99, r["report"]
    assert r["data_fit"]["discrepancy_ratio"] < 1.1, r["report"]
    star = nefi.from_forward(**model, noise=0.01, representation="stars", shapes=1).solve()
    assert iou(star["reconstruction"]) < 0.97
    assert psnr(r["reconstruction"], gt) > psnr(star["reconstruction"], gt) + 3
    with pytest.raises(fieldkit.Error, match="vertices only with representation 'polygons'"):
        nefi.from_forward(**model, representation="stars", vertices=4)
    with pytest.raises(fieldkit.Error, match=r"a vertex count in \[3, 16\]"):
        nefi.from_forward(**model, representation="polygons", vertices=2)
    with pytest.raises(fieldkit.Error, match="polygons on a 2-D field"):
        nefi.from_forward(lambda x: x, np.ones((4, 4, 4)), adjoint=lambda g: g,
                          representation="polygons")


def sparse_strata(inclusion=False, n=48):
    """Three layers (0.3, 1.0, 0.6 down axis 0) meeting at two bent
    interfaces, away from the layered field's even start (with an elliptic
    inclusion of 1.6 in the lowest layer), seen at a sixth of the pixels with
    1 % noise: (truth, mask, data)."""
    c = (2 * np.arange(n) + 1) / n - 1
    z, x = np.meshgrid(c, c, indexing="ij")
    z1 = -0.6 + 0.12 * np.cos(np.pi * 0.8 * x + 0.3)
    z2 = 0.05 + 0.1 * np.sin(2 * np.pi * x / 1.5)
    gt = np.where(z < z1, 0.3, np.where(z < z2, 1.0, 0.6))
    if inclusion:
        gt = np.where(((z - 0.55) / 0.2) ** 2 + ((x + 0.25) / 0.3) ** 2 < 1, 1.6, gt)
    mask = (np.random.default_rng(5).random((n, n)) < 1 / 6).astype(float)
    return gt, mask, (gt + 0.01 * np.random.default_rng(2).standard_normal((n, n))) * mask


def test_layers_find_bent_strata_at_a_sixth_of_the_pixels():
    # The layers fill the unobserved cells with their strata where a grid
    # cannot, and the same scene transposed, layered along axis 1, gives the
    # transposed field.
    gt, mask, y = sparse_strata()

    def fit(data, m, **options):
        p = nefi.from_forward(lambda v: v * m, data, adjoint=lambda g: g * m, mask=m, noise=0.01,
                              **options)
        return p, p.solve()

    p, r = fit(y, mask, representation="layers")
    assert "3 layers along axis 0" in p.decisions["representation"]["why"]
    assert r["n_parameters"] == 1 + 2 * (2 + 6)
    x_layers = r["reconstruction"]
    assert np.mean(np.abs(x_layers - gt) < 0.1) > 0.95, r["report"]
    assert psnr(x_layers, gt) > psnr(fit(y, mask, representation="grid")[1]["reconstruction"],
                                     gt) + 8
    _, t = fit(y.T.copy(), mask.T.copy(), representation="layers", layer_axis=1)
    assert np.abs(t["reconstruction"] - x_layers.T).max() < 1e-3
    model = dict(forward=lambda v: v * mask, measurement=y, adjoint=lambda g: g * mask)
    with pytest.raises(fieldkit.Error, match="layers only with representation 'layers'"):
        nefi.from_forward(**model, representation="ellipses", layers=4)
    with pytest.raises(fieldkit.Error, match="an axis of the 2-D field"):
        nefi.from_forward(**model, representation="layers", layer_axis=2)
    with pytest.raises(fieldkit.Error, match=r"an interface degree in \[0, 8\]"):
        nefi.from_forward(**model, representation="layers", harmonics=9)


def test_an_inclusion_in_strata_is_one_ellipse_over_the_layers():
    # With the inclusion: one ellipse over the layers gets
    # nearly every cell right (0.961 measured at one thread), the layers
    # alone half (0.500: the inclusion pulls their interfaces off).
    gt, mask, y = sparse_strata(inclusion=True)

    def fit(**options):
        p = nefi.from_forward(lambda v: v * mask, y, adjoint=lambda g: g * mask, mask=mask,
                              noise=0.01, **options)
        return p, p.solve()

    p, r = fit(representation="layers+ellipses", shapes=1)
    assert "over 3 layers along axis 0" in p.decisions["representation"]["why"]
    assert r["n_parameters"] == 1 + (1 + 2 + 4) + 2 * (2 + 6)
    right = np.mean(np.abs(r["reconstruction"] - gt) < 0.1)
    assert right > 0.94, r["report"]
    layers_only = fit(representation="layers")[1]["reconstruction"]
    assert right > np.mean(np.abs(layers_only - gt) < 0.1) + 0.3
    with pytest.raises(fieldkit.Error, match="rank only with representation 'lowrank'"):
        fit(representation="layers+blobs", rank=3)


def test_a_phases_prior_gives_a_field_of_its_values():
    # Three known values (0, 0.5, 1) behind a 2-cell blur: with the phases
    # prior (a softmax over three channels that sharpens as the fit anneals)
    # almost every cell takes one of them and more cells are right than
    # under bounded(0, 1), which blurs the steps.
    n = 32
    c = (2 * np.arange(n) + 1) / n - 1
    x, y = np.meshgrid(c, c, indexing="ij")
    gt = np.zeros((n, n))
    gt[np.hypot(x - 0.2, y + 0.1) < 0.55] = 0.5
    gt[((x + 0.1) / 0.3) ** 2 + ((y - 0.05) / 0.2) ** 2 < 1] = 1.0
    i = np.arange(n)
    b = np.exp(-0.5 * ((i[:, None] - i[None, :]) / 2.0) ** 2)
    b /= b.sum(1, keepdims=True)
    data = b @ gt @ b.T + 0.02 * np.random.default_rng(3).standard_normal((n, n))

    def fit(prior):
        p = nefi.from_forward(lambda v: b @ v @ b.T, data, adjoint=lambda g: b.T @ g @ b,
                              noise=0.02, prior=prior, representation="grid")
        return p, p.solve()

    p, r = fit("phases(1, 0, 0.5)")
    assert p.decisions["head"]["value"] == "phases(0, 0.5, 1)"
    assert r["n_parameters"] == 3 * n * n  # one channel per phase
    rec = r["reconstruction"]
    on_a_phase = np.min(np.abs(rec[..., None] - np.array([0, 0.5, 1])), axis=-1) < 0.05
    assert on_a_phase.mean() > 0.95, r["report"]
    assert r["data_fit"]["discrepancy_ratio"] < 1.2, r["report"]
    right = np.mean(np.abs(rec - gt) < 0.1)
    assert right > np.mean(np.abs(fit("bounded(0, 1)")[1]["reconstruction"] - gt) < 0.1) + 0.03
    with pytest.raises(fieldkit.Error, match="2 to 8 distinct finite values"):
        fit("phases(0, 0)")


@pytest.mark.skipif(not fieldkit.cuda_available(), reason="no usable CUDA device")
@pytest.mark.parametrize("representation", ["stars", "polygons", "layers", "layers+ellipses"])
def test_a_shaped_fit_on_a_device_follows_the_cpu(representation):
    """A built-in blur of a square fitted with stars, polygons, layers or
    ellipses over layers on the device: the CPU op's arithmetic in one
    kernel each way (or fk's ops for the layers), so the first steps follow
    the CPU's to 1e-3 and the fit ends near the CPU's (round-off that Adam's
    first steps amplify: the C++ test's comment); the steps replay a
    captured graph."""
    rng = np.random.default_rng(9)
    truth = np.zeros((24, 24))
    truth[8:16, 6:14] = 1.0
    blur = nefi.operators.gaussian_blur((24, 24), 1.5)
    p = nefi.from_forward(blur, blur(truth) + 0.01 * rng.standard_normal((24, 24)),
                          representation=representation, prior="nonnegative", noise=0.01,
                          budget="40", discrepancy=False)  # the same steps on both
    cpu = p.solve()
    gpu = p.solve(device="cuda")
    assert cpu["device"] == "cpu" and gpu["device"] == "cuda:0"
    assert gpu["stages"][-1]["graph_steps"] > 0
    np.testing.assert_allclose(gpu["history"]["total"][:10], cpu["history"]["total"][:10],
                               rtol=1e-3)
    assert gpu["data_fit"]["rmse"] == pytest.approx(cpu["data_fit"]["rmse"], rel=0.25)
