"""fieldkit.nefi.from_forward on a GPU: a built-in model's short solves and
autotune pilots, a batch of problems, a diagnosis and the loss Hessian with
their products on the device, and a diffusivity map's fit, each against the
same work on the CPU.
scripts/gpu-check runs them on a GPU machine; elsewhere they skip."""
import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi


@pytest.mark.skipif(not fieldkit.cuda_available(), reason="no usable CUDA device")
def test_lr_range_test_and_autotune_pilots_train_on_a_device():
    """A built-in blur's grid fit: the device's short solves and pilots
    follow the CPU's (round-off apart, so the same best lr and choices)."""
    rng = np.random.default_rng(3)
    truth = np.zeros((24, 24))
    truth[8:16, 6:14] = 1.0
    blur = nefi.operators.gaussian_blur((24, 24), 1.5)
    y = blur(truth) + 0.01 * rng.standard_normal((24, 24))
    p = nefi.from_forward(blur, y, representation="grid", prior="nonnegative + tv", noise=0.01,
                          budget="40", discrepancy=False)  # the same steps on both
    lrs = (1e-2, 3e-2, 1e-1)
    best_cpu, rows_cpu = nefi.lr_range_test(p, lrs=lrs, steps=10)
    best_gpu, rows_gpu = nefi.lr_range_test(p, lrs=lrs, steps=10, device="cuda")
    assert best_gpu == best_cpu
    np.testing.assert_allclose([r[1] for r in rows_gpu], [r[1] for r in rows_cpu], rtol=1e-3)
    cpu = nefi.autotune(p, level="quick")
    gpu = nefi.autotune(p, level="quick", device="cuda")
    assert [d["chosen"] for d in gpu["decisions"]] == [d["chosen"] for d in cpu["decisions"]]


@pytest.mark.skipif(not fieldkit.cuda_available(), reason="no usable CUDA device")
def test_a_batch_of_forward_problems_on_a_device_follows_the_cpu_batch():
    """Three blur fits of one model (their own noise, so their own data and
    penalty weights) solved together on the device and on the CPU: f32
    round-off from the first step, so 1e-3 relative on the losses. A smoothness
    penalty, not TV: TV from a flat start is round-off (the C++ test's
    comment)."""
    rng = np.random.default_rng(5)
    truth = np.zeros((24, 24))
    truth[8:16, 6:14] = 1.0
    blur = nefi.operators.gaussian_blur((24, 24), 1.5)
    ps = []
    for k, sigma in enumerate((0.01, 0.02, 0.03)):
        y = (1 + 0.4 * k) * blur(truth) + sigma * rng.standard_normal((24, 24))
        ps.append(nefi.from_forward(blur, y, representation="grid", prior="nonnegative + smooth",
                                    noise=sigma, budget="40",
                                    discrepancy=False))  # the same steps on both
    cpu = nefi.batch_invert(ps)
    gpu = nefi.batch_invert(ps, device="cuda")
    for a, b in zip(cpu, gpu):
        assert b["error"] == "" and b["batch_size"] == 3
        assert a["device"] == "cpu" and b["device"] == "cuda:0"
        assert b["stages"][-1]["graph_steps"] > 0  # the steps replayed a captured graph
        assert [s["steps"] for s in a["stages"]] == [s["steps"] for s in b["stages"]]
        np.testing.assert_allclose(b["history"]["total"], a["history"]["total"], rtol=1e-3)


@pytest.mark.skipif(not fieldkit.cuda_available(), reason="no usable CUDA device")
def test_a_diagnosis_with_its_products_on_a_device_matches_the_cpu():
    """The built-in blur's spectrum, sensitivity and data fit with the
    products through cuFFT in f64: the CPU's to 1e-8."""
    rng = np.random.default_rng(7)
    truth = np.zeros((24, 24))
    truth[8:16, 6:14] = 1.0
    blur = nefi.operators.gaussian_blur((24, 24), 1.5)
    p = nefi.from_forward(blur, blur(truth) + 0.01 * rng.standard_normal((24, 24)),
                          representation="grid", prior="nonnegative", noise=0.01)
    cpu = p.diagnose(k=4, n_iter=12, probes=6)
    gpu = p.diagnose(k=4, n_iter=12, probes=6, device="cuda")
    np.testing.assert_allclose(gpu["singular_values"], cpu["singular_values"], rtol=1e-8)
    np.testing.assert_allclose(gpu["sensitivity"]["map"], cpu["sensitivity"]["map"], rtol=1e-8,
                               atol=1e-12)
    assert gpu["data_fit"]["residual_rms"] == pytest.approx(cpu["data_fit"]["residual_rms"],
                                                            rel=1e-8)


@pytest.mark.skipif(not fieldkit.cuda_available(), reason="no usable CUDA device")
def test_a_hessian_with_its_gradients_on_a_device_matches_the_cpu():
    """A built-in blur's grid fit: the loss Hessian's ends from gradients on
    the device are the CPU's to 1e-3 (finite differences of f32 gradients),
    through hessian_spectrum and diagnose(hessian=)."""
    rng = np.random.default_rng(8)
    truth = np.zeros((20, 20))
    truth[6:14, 5:12] = 1.0
    blur = nefi.operators.gaussian_blur((20, 20), 1.5)
    p = nefi.from_forward(blur, blur(truth) + 0.01 * rng.standard_normal((20, 20)),
                          representation="grid", prior="nonnegative + smooth", noise=0.01)
    cpu = p.hessian_spectrum(k=3, n_iter=12)
    gpu = p.hessian_spectrum(k=3, n_iter=12, device="cuda")
    np.testing.assert_allclose(gpu["largest"], cpu["largest"], rtol=1e-3)
    d = p.diagnose(k=3, n_iter=8, probes=4, hessian=3, hessian_iter=12, device="cuda")
    np.testing.assert_allclose(d["hessian"]["largest"], cpu["largest"], rtol=1e-3)


@pytest.mark.skipif(not fieldkit.cuda_available(), reason="no usable CUDA device")
def test_a_diffusivity_fit_on_a_device_follows_the_cpu():
    """The advection-diffusion operator with the diffusivity map as the
    unknown (a known release spreading through a disc of higher D): the
    device fit follows the CPU's (f32 round-off in the field's steps, so
    1e-3 relative on the losses), each step eagerly, since every apply reads
    its substeps' bounds back to the host."""
    n = 16
    c = (np.arange(n) + 0.5) / n
    x, y = np.meshgrid(c, c, indexing="ij")
    D = 2e-3 + 6e-3 * (((x - 0.6) ** 2 + (y - 0.4) ** 2) < 0.2 ** 2)
    release = sum(np.exp(-((x - a) ** 2 + (y - b) ** 2) / (2 * 0.05 ** 2))
                  for a in (0.25, 0.75) for b in (0.25, 0.75))
    op = nefi.operators.advection_diffusion((n, n), [0.1, 0.2], velocity=(0.2, -0.1),
                                            unknown="diffusivity", release=release)
    p = nefi.from_forward(op, op(D), prior="bounded(0, 0.02) + tv", representation="grid",
                          noise=1e-4, budget="30", discrepancy=False)  # the same steps on both
    cpu = p.solve()
    gpu = p.solve(device="cuda")
    assert cpu["device"] == "cpu" and gpu["device"] == "cuda:0"
    assert all(s["graph_steps"] == 0 for s in gpu["stages"])
    assert "back to the host" in gpu["stages"][-1]["device_note"]
    assert [s["steps"] for s in cpu["stages"]] == [s["steps"] for s in gpu["stages"]]
    np.testing.assert_allclose(gpu["history"]["total"], cpu["history"]["total"], rtol=1e-3)
    np.testing.assert_allclose(gpu["reconstruction"], cpu["reconstruction"], rtol=1e-3,
                               atol=1e-6)
