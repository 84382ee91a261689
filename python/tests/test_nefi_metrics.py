"""nefi.metrics on arrays: against plain numpy definitions, and equal to the
scores a run reports in its metrics."""
import numpy as np
import pytest
import torch

import fieldkit
import fieldkit.nefi as nefi
from conftest import config_path

M = nefi.metrics


def gaussian_ssim(x, y, data_range):
    """SSIM of two 2-D arrays, written plainly: a 7-tap Gaussian window
    (sigma 1.5, unit sum) at the 'valid' positions, K1 0.01, K2 0.03."""
    t = np.arange(7) - 3.0
    w = np.exp(-0.5 * t * t / 1.5 ** 2)
    w /= w.sum()

    def filt(a):
        rows = np.array([[np.dot(w, r[j:j + 7]) for j in range(a.shape[1] - 6)] for r in a])
        return np.array([[np.dot(w, rows[i:i + 7, j]) for j in range(rows.shape[1])]
                         for i in range(a.shape[0] - 6)])

    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    mx, my = filt(x), filt(y)
    vx, vy, cxy = filt(x * x) - mx * mx, filt(y * y) - my * my, filt(x * y) - mx * my
    s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.mean()


def test_the_basic_scores_are_their_definitions():
    rng = np.random.default_rng(0)
    gt = rng.random((20, 24))
    x = gt + 0.05 * rng.standard_normal(gt.shape)
    err = np.mean((x - gt) ** 2)
    assert M.mse(x, gt) == pytest.approx(err, rel=1e-12)
    assert M.rmse(x, gt) == pytest.approx(np.sqrt(err), rel=1e-12)
    assert M.mae(x, gt) == pytest.approx(np.mean(np.abs(x - gt)), rel=1e-12)
    rng_gt = gt.max() - gt.min()
    assert M.psnr(x, gt) == pytest.approx(10 * np.log10(rng_gt ** 2 / err), rel=1e-12)
    assert M.psnr(x, gt, data_range=2.0) == pytest.approx(10 * np.log10(4 / err), rel=1e-12)
    assert M.relative_error(x, gt) == pytest.approx(np.linalg.norm(x - gt) / np.linalg.norm(gt))
    assert M.ssim(x, gt) == pytest.approx(gaussian_ssim(x, gt, rng_gt), rel=1e-10)
    assert M.ssim(x, gt, data_range=3.0) == pytest.approx(gaussian_ssim(x, gt, 3.0), rel=1e-10)
    assert M.ssim(gt, gt) == pytest.approx(1.0)
    nan = np.full_like(gt, np.nan)  # a NaN field scores NaN, with a data range too
    assert np.isnan(M.psnr(nan, gt)) and np.isnan(M.psnr(nan, gt, data_range=1.0))
    assert M.masked_ssim(x, gt, np.ones_like(gt)) == pytest.approx(M.ssim(x, gt))
    w = np.zeros_like(gt)
    w[:10] = 1
    assert M.mse(x, gt, mask=w) == pytest.approx(np.mean((x - gt)[:10] ** 2), rel=1e-12)
    # torch tensors, requiring grad or not
    t = torch.tensor(x, requires_grad=True)
    assert M.psnr(t, torch.tensor(gt)) == M.psnr(x, gt)
    # a data range of a 0-d tensor or array is its number
    g = torch.tensor(gt)
    assert M.psnr(t, g, data_range=g.max() - g.min()) == M.psnr(x, gt)
    assert M.ssim(x, gt, data_range=np.array(2.0)) == M.ssim(x, gt, data_range=2.0)
    with pytest.raises(fieldkit.Error, match="data_range"):
        M.psnr(x, gt, data_range=torch.tensor(True))


def test_masks_overlap_and_edges():
    gt = np.zeros((8, 8))
    gt[2:6, 2:6] = 1.0  # 16 cells
    x = np.zeros((8, 8))
    x[2:6, 3:7] = 1.0   # 16 cells, 12 shared
    assert M.iou(x, gt) == pytest.approx(12 / 20)
    assert M.dice(x, gt) == pytest.approx(24 / 32)
    assert M.iou_above(x, gt, 0.5) == pytest.approx(12 / 20)
    assert M.iou_below(1 - x, 1 - gt, 0.5) == pytest.approx(12 / 20)
    vol = np.zeros((8, 8, 4))
    vol[2:6, 2:6, :] = 1.0
    assert M.edge_f1(vol, vol) == 1.0


def test_localisation_scores():
    m = np.zeros((16, 16))
    m[3, 4], m[10, 12] = 1.0, 0.8
    assert M.peak_positions(m) == [(3, 4), (10, 12)]
    hit = M.hungarian_f1(m, [(4, 4), (0, 15)], radius=2)
    assert hit["true_positives"] == 1 and hit["f1"] == pytest.approx(0.5)
    assert hit["mean_distance"] == pytest.approx(1.0)
    assert M.hungarian_f1(np.zeros((4, 4)), [])["f1"] == 1.0
    assert np.isnan(M.hungarian_f1(m, [(15, 0)], radius=2)["mean_distance"])  # no hit
    assert M.gmsd(m, m) == pytest.approx(0.0, abs=1e-12)
    shifted = np.zeros((16, 16))
    shifted[3, 6] = 1.0
    one = np.zeros((16, 16))
    one[3, 4] = 1.0
    # a point mass moved 2 pixels: each projection moves it 2 |cos| / 16 units
    theta = np.pi * (np.arange(128) + 0.5) / 128
    want = np.sqrt(np.mean((2 / 16 * np.cos(theta)) ** 2))
    assert M.swd(one, shifted) == pytest.approx(want, rel=1e-6)
    assert M.sliced_wasserstein(one, one) == pytest.approx(0.0, abs=1e-12)


def test_a_runs_metrics_are_these_scores():
    out = nefi.invert(config_path("toy1d_smoke.yaml"), seed=0)["neural"]
    rec, gt = out["reconstruction"], out["ground_truth"]
    for name in ("psnr", "mse", "relative_error"):
        assert out["metrics"][name] == pytest.approx(getattr(M, name)(rec, gt), rel=1e-9), name
    out = nefi.invert(config_path("deconvolution_smoke.yaml"), {"run": {"methods": ["wiener"]}},
                      seed=0)["wiener"]
    rec, gt = out["reconstruction"], out["ground_truth"]
    assert out["metrics"]["ssim"] == pytest.approx(M.ssim(rec, gt), rel=1e-9)
    assert out["metrics"]["psnr"] == pytest.approx(M.psnr(rec, gt), rel=1e-9)


@pytest.mark.parametrize("call, message", [
    (lambda: M.psnr(np.ones(3), np.ones(4)), "two non-empty arrays of one shape"),
    (lambda: M.psnr(np.ones(3), np.arange(3.0), data_range=0), "data_range a finite number > 0"),
    (lambda: M.ssim(np.ones((2, 2, 2, 2)), np.ones((2, 2, 2, 2))), "ssim"),
    (lambda: M.mse(np.ones(3), np.ones(3), mask=-np.ones(3)), "finite weights >= 0"),
    (lambda: M.hungarian_f1(np.ones((4, 4)), [(0.5, 1)]), "integer (row, col) pairs"),
    (lambda: M.gmsd(np.ones(4), np.ones(4)), "2-D arrays"),
    (lambda: M.edge_f1(np.ones((4, 4)), np.ones((4, 4))), "(nx, ny, nz)"),
    (lambda: M.swd(np.ones((4, 4)), np.ones((4, 4)), n_proj=0), "n_proj a whole number >= 1"),
    # The imaginary parts were dropped (a conjugate scored as exact); a 0-d
    # pair was scored as one-element arrays.
    (lambda: M.mse(np.ones(3) + 1j, np.ones(3)), "mse: expected real values, got complex"),
    (lambda: M.relative_error(np.ones(3), torch.ones(3, dtype=torch.cfloat)),
     "relative_error: expected real values"),
    (lambda: M.mse(np.ones(3), np.ones(3), mask=np.ones(3) * 1j), "mse: expected real values"),
    (lambda: M.ssim(np.float64(1), np.float64(2)), "arrays of at least one axis, got shapes ()"),
])
def test_bad_inputs_say_what_was_expected(call, message):
    with pytest.raises(fieldkit.Error, match=message.replace("(", r"\(").replace(")", r"\)")):
        call()
