"""fieldkit.nefi.batch_invert: N problems solved in one loop from Python equal
the sequential C++ solves (`invert`, nefi's Solver) of the same seeds, step by
step, as results of numpy arrays and dicts."""
import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi

SMOKE = {"n": 32, "hidden": 16, "depth": 2, "steps": [10, 20]}


def assert_same_solve(bat, seq):
    """Same stops, steps and loss history (to the batch's round-off) and the
    same final field and metrics."""
    assert [s["steps"] for s in bat["stages"]] == [s["steps"] for s in seq["stages"]]
    assert [s["stop"] for s in bat["stages"]] == [s["stop"] for s in seq["stages"]]
    assert set(bat["history"]) == set(seq["history"])
    for column, values in seq["history"].items():
        np.testing.assert_allclose(bat["history"][column], values, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(bat["reconstruction"], seq["reconstruction"], atol=1e-5)
    np.testing.assert_array_equal(bat["ground_truth"], seq["ground_truth"])
    np.testing.assert_array_equal(bat["measurement"]["data"], seq["measurement"]["data"])
    assert set(bat["metrics"]) == set(seq["metrics"])
    for k, v in seq["metrics"].items():
        assert bat["metrics"][k] == pytest.approx(v, rel=1e-4, abs=1e-6), k


@pytest.mark.parametrize("chunk_size,loss_mode", [(0, "auto"), (2, "loop")])
def test_batch_equals_the_sequential_solves(chunk_size, loss_mode):
    nefi.set_num_threads(1)
    seeds = [0, 1, 2]
    bat = nefi.batch_invert("toy1d", SMOKE, seeds=seeds, chunk_size=chunk_size,
                            loss_mode=loss_mode)
    assert len(bat) == 3
    for seed, result in zip(seeds, bat):
        assert result["batch_size"] == 3 and result["error"] == ""
        assert result["seed"] == seed and result["data_seed"] == seed
        assert isinstance(result["reconstruction"], np.ndarray)
        assert result["reconstruction"].shape == (32,)
        seq = nefi.invert("toy1d", SMOKE, seed=seed, methods="neural")["neural"]
        assert_same_solve(result, seq)


def test_a_configs_init_seed_starts_every_problem_as_invert_does():
    nefi.set_num_threads(1)
    cfg = dict(SMOKE, run={"init_seed": 7})
    bat = nefi.batch_invert("toy1d", cfg, seeds=[2, 3])
    for seed, result in zip([2, 3], bat):
        assert_same_solve(result, nefi.invert("toy1d", cfg, seed=seed, methods="neural")["neural"])


def test_data_seeds_choose_the_measurement():
    nefi.set_num_threads(1)
    bat = nefi.batch_invert("toy1d", dict(SMOKE, steps=[2, 2]), seeds=[5, 5], data_seeds=[1, 2])
    for data_seed, result in zip([1, 2], bat):
        m = nefi.measurement("toy1d", SMOKE, seed=data_seed)
        assert result["data_seed"] == data_seed
        np.testing.assert_array_equal(result["measurement"]["data"], m["data"])


def test_bad_batches_raise_with_the_cpp_message():
    with pytest.raises(fieldkit.Error, match="at least one seed"):
        nefi.batch_invert("toy1d", SMOKE, seeds=[])
    with pytest.raises(fieldkit.Error, match="one per seed"):
        nefi.batch_invert("toy1d", SMOKE, seeds=[0, 1], data_seeds=[0])
    with pytest.raises(fieldkit.Error, match="no_such_method"):
        nefi.batch_invert("toy1d", SMOKE, seeds=[0], method="no_such_method")
    with pytest.raises(fieldkit.Error, match="loss_mode|bogus"):
        nefi.batch_invert("toy1d", SMOKE, seeds=[0], loss_mode="bogus")


def test_a_failed_problem_is_reported_or_raised():
    diverging = dict(SMOKE, lr=1e30, solver={"max_bad_steps": 2})
    out = nefi.batch_invert("toy1d", diverging, seeds=[0, 1], raise_on_error=False)
    for result in out:
        assert "non-finite" in result["error"]
        assert result["reconstruction"] is None and result["metrics"] == {}
    with pytest.raises(fieldkit.Error, match="failed"):
        nefi.batch_invert("toy1d", diverging, seeds=[0, 1])


def test_cpu_only_build_or_no_gpu_refuses_a_cuda_batch_by_name():
    """A CPU-only build (or a machine without a GPU) refuses cuda before any
    work; a malformed name is refused as such."""
    if fieldkit.cuda_available():
        pytest.skip("a usable CUDA device is present")
    with pytest.raises(fieldkit.Error, match=r"batch_invert device: expected cpu.*got cuda:0"):
        nefi.batch_invert("toy1d", SMOKE, seeds=[0], device="cuda")
    with pytest.raises(fieldkit.Error, match="'cpu', 'cuda' or 'cuda:N', got 'tpu'"):
        nefi.batch_invert("toy1d", SMOKE, seeds=[0], device="tpu")


def test_an_explicit_cpu_device_is_the_default_batch():
    nefi.set_num_threads(1)
    small = dict(SMOKE, steps=[3, 3])
    default = nefi.batch_invert("toy1d", small, seeds=[0, 1])
    cpu = nefi.batch_invert("toy1d", small, seeds=[0, 1], device="cpu")
    for a, b in zip(default, cpu):
        np.testing.assert_array_equal(a["reconstruction"], b["reconstruction"])


@pytest.mark.skipif(not fieldkit.cuda_available(), reason="no usable CUDA device")
def test_a_cuda_batch_matches_the_cpu_batch():
    """The device batch (grouped MLP, steps captured as CUDA graphs) against the
    CPU batch: f32 round-off from the first step, amplified by Adam's
    normalised steps, so 1e-3 relative on the losses (as the C++ device tests)."""
    nefi.set_num_threads(1)
    cpu = nefi.batch_invert("toy1d", SMOKE, seeds=[0, 1, 2])
    gpu = nefi.batch_invert("toy1d", SMOKE, seeds=[0, 1, 2], device="cuda")
    for a, b in zip(cpu, gpu):
        assert b["error"] == "" and b["batch_size"] == 3
        assert [s["steps"] for s in a["stages"]] == [s["steps"] for s in b["stages"]]
        np.testing.assert_allclose(b["history"]["total"], a["history"]["total"], rtol=1e-3)
        assert isinstance(b["reconstruction"], np.ndarray)


@pytest.mark.parametrize("method", ["grid", "neural"])
def test_a_budget_spent_in_the_coarse_stage_leaves_results_on_the_final_grid(method):
    # The smoke's first stage is at half the cells; a budget of 10 us ends the
    # run there. The fields, metrics and data fit are still the final grid's.
    config = {"config": {"n": 32, "hidden": 16, "depth": 2, "steps": [50, 50]},
              "curriculum": {"time_budget_s": 1e-5}}
    seq = nefi.invert("toy1d", config, methods=method)[method]
    assert [s["stop"] for s in seq["stages"]] == ["time_budget"]
    assert seq["reconstruction"].shape == seq["ground_truth"].shape == (32,)
    bat = nefi.batch_invert("toy1d", config, seeds=[0, 1], method=method)
    for r in bat:
        assert r["reconstruction"].shape == (32,) and np.isfinite(r["metrics"]["mse"])
