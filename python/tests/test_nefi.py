"""fieldkit.nefi: smoke solves from Python reach the CLI's PSNR for the same
seed, configs as YAML paths or dicts, results as numpy arrays and dicts."""
import json
import os
import subprocess

import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi
from conftest import config_path

ROOT = os.environ.get("FIELDKIT_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("NEFI_CLI", os.path.join(ROOT, "build", "bin", "nefi"))


config = config_path


def cli_metrics(cfg, seed, out):
    subprocess.run([CLI, "run", cfg, "--seed", str(seed), "--threads", "1", "--out", str(out)],
                   check=True, capture_output=True)
    with open(os.path.join(out, "metrics.json")) as f:
        return {m: v["metrics"] for m, v in json.load(f)["methods"].items()}


@pytest.mark.parametrize("cfg,seed", [("toy1d_smoke.yaml", 3), ("deconvolution_smoke.yaml", 1)])
def test_smoke_solve_matches_the_cli(cfg, seed, tmp_path):
    nefi.set_num_threads(1)
    ours = nefi.invert(config(cfg), seed=seed)
    theirs = cli_metrics(config(cfg), seed, tmp_path / "run")
    assert set(ours) == set(theirs)
    for method, result in ours.items():
        assert result["metrics"]["psnr"] == pytest.approx(theirs[method]["psnr"], rel=1e-9)
        gt, rec = result["ground_truth"], result["reconstruction"]
        assert isinstance(rec, np.ndarray) and rec.shape == gt.shape
        mse = np.mean((rec - gt) ** 2)
        assert result["metrics"]["mse"] == pytest.approx(mse, rel=1e-6)
    neural = ours["neural"]
    total = neural["history"]["total"]
    assert len(total) == neural["total_steps"] and total[-1] < total[0]


def test_dict_overrides_reach_the_solver():
    nefi.set_num_threads(1)
    out = nefi.invert("toy1d", {"n": 32, "steps": [5, 5], "run": {"methods": ["grid"]}}, seed=0)
    assert list(out) == ["grid"]
    assert out["grid"]["reconstruction"].shape == (32,)
    assert out["grid"]["total_steps"] == 10
    text = nefi.config_yaml("toy1d", {"n": 32, "solver": {"nan_guard": False}})
    assert "n: 32" in text and "nan_guard: false" in text


def test_curriculum_run_keys_and_reference_method_names_reach_the_solver():
    nefi.set_num_threads(1)
    cfg = {"n": 32, "steps": [20, 20], "anneal_fraction": 0.25,
           "curriculum": {"discrepancy_tau": 1e6}}
    out = nefi.invert("toy1d", cfg, seed=0, methods="netmy")
    assert list(out) == ["neural"]  # the reference's name for toy1d's own solver
    # progress reaches 1 at step 5 of each stage, where the discrepancy stop fires
    assert [(s["stop"], s["steps"]) for s in out["neural"]["stages"]] == [("discrepancy", 6)] * 2
    fit, noise = out["neural"]["data_fit"], out["neural"]["measurement"]["noise_std"]
    assert fit["discrepancy_ratio"] == pytest.approx(fit["rmse"] / noise, rel=1e-12)
    capped = nefi.invert("toy1d", {"n": 32, "steps": [20, 20], "run": {"max_total_steps": 10}},
                         seed=0, methods="neural")
    assert capped["neural"]["total_steps"] == 10  # run keys other than seed and methods apply
    with pytest.raises(fieldkit.Error, match="restarts"):
        nefi.invert("toy1d", {"curriculum": {"restarts": 0}})
    with pytest.raises(fieldkit.Error, match="'tpu'"):
        nefi.invert("toy1d", {"n": 32}, device="tpu")


def test_a_measured_dataset_in_place_of_the_synthetic_one(tmp_path):
    nefi.set_num_threads(1)
    cfg = {"n": 32, "steps": [4, 4]}
    synthetic = nefi.invert("toy1d", cfg, seed=0, methods="neural")["neural"]
    path = tmp_path / "data.npy"
    np.save(path, synthetic["measurement"]["data"])
    measured = nefi.invert("toy1d", dict(cfg, run={"data": str(path), "noise_std": 0.01}),
                           seed=0, methods="neural")["neural"]
    assert np.array_equal(measured["reconstruction"], synthetic["reconstruction"])
    assert measured["ground_truth"] is None and measured["metrics"] == {}
    assert measured["measurement"]["noise_std"] == 0.01
    assert measured["data_fit"]["discrepancy_ratio"] == pytest.approx(
        measured["data_fit"]["rmse"] / 0.01, rel=1e-12)
    np.save(path, np.zeros(31))
    with pytest.raises(fieldkit.Error, match=r"run.data.*\[32\]"):
        nefi.invert("toy1d", dict(cfg, run={"data": str(path)}), methods="neural")


def test_config_yaml_and_measurement_say_what_invert_runs(tmp_path):
    assert "methods: [grid]" in nefi.config_yaml("toy1d", {"run": {"methods": ["grid"]}})
    assert "methods: [neural, grid]" in nefi.config_yaml("toy1d", methods=["nefi", "grid"])
    assert "methods: [grid]" in nefi.Solver("toy1d", {}, methods="grid").config_yaml
    data = np.linspace(0, 1, len(nefi.measurement("toy1d")["data"]))
    np.save(tmp_path / "data.npy", data)
    m = nefi.measurement("toy1d", {"run": {"data": str(tmp_path / "data.npy"),
                                           "noise_std": 0.02}})
    assert np.array_equal(m["data"], data.astype(m["data"].dtype)) and m["ground_truth"] is None
    assert m["noise_std"] == 0.02
    # A YAML path beside an instance name of another instance is refused.
    with pytest.raises(fieldkit.Error, match="instance deconvolution"):
        nefi.invert("deconvolution", config("toy1d_smoke.yaml"))
    assert "instance: toy1d" in nefi.config_yaml("toy1d", config("toy1d_smoke.yaml"))
    with pytest.raises(fieldkit.Error, match="each method once"):
        nefi.invert("toy1d", {"n": 32, "steps": [2, 2]}, methods=["neural", "nefi"])


def test_ensemble_spreads_over_initialisations_of_one_measurement():
    nefi.set_num_threads(1)
    cfg = {"n": 32, "steps": [4, 4]}
    e = nefi.ensemble("toy1d", cfg, seeds=(0, 1, 2), seed=5)
    assert e.seeds == [0, 1, 2] and len(e.results) == 3
    data = [r["measurement"]["data"] for r in e.results]
    assert all(np.array_equal(d, data[0]) for d in data)  # one measurement
    recs = np.stack([r["reconstruction"] for r in e.results])
    assert not np.array_equal(recs[0], recs[1])  # three initialisations
    assert np.allclose(e.mean, recs.mean(0)) and np.allclose(e.std, recs.std(0))
    assert e.coefficient_of_variation() > 0
    one = nefi.ensemble("toy1d", cfg, seeds=1, seed=5)  # a member is its seed's solve
    assert np.array_equal(one.results[0]["reconstruction"], e.results[1]["reconstruction"])
    with pytest.raises(ValueError, match="seed"):
        nefi.ensemble("toy1d", cfg, seeds=())
    # A repeated seed is one member twice (its spread 0): refused by name.
    with pytest.raises(fieldkit.Error, match=r"distinct initialisation seeds, got \[1, 1\]"):
        nefi.ensemble("toy1d", cfg, seeds=(1, 1), seed=5)
    with pytest.raises(fieldkit.Error, match="seeds a whole number"):
        nefi.ensemble("toy1d", cfg, seeds=[None])


def test_ensemble_members_under_restarts_share_no_runs():
    # Member k runs seeds k .. k + restarts - 1 and keeps the best: seeds 0, 1, 2
    # under restarts 3 kept 2, 2, 4 (two members alike).
    nefi.set_num_threads(1)
    cfg = {"n": 32, "steps": [4, 4], "curriculum.restarts": 2}
    with pytest.raises(fieldkit.Error, match="at least restarts = 2 apart"):
        nefi.ensemble("toy1d", cfg, seeds=(0, 1), seed=5)
    e = nefi.ensemble("toy1d", cfg, seeds=(0, 2), seed=5)
    assert len({r["seed"] for r in e.results}) == 2
    # Under a step cap every member makes one attempt: any distinct seeds.
    capped = dict(cfg, **{"run.max_total_steps": 8})
    assert len(nefi.ensemble("toy1d", capped, seeds=(0, 1), seed=5).results) == 2
    # A method whose start ignores the seed has no spread to show.
    with pytest.raises(fieldkit.Error, match="method 'grid' starts the same for every seed"):
        nefi.ensemble("toy1d", {"n": 32, "steps": [4, 4]}, seeds=(0, 1), seed=5,
                      method="grid")


def test_solver_keeps_its_results():
    s = nefi.Solver(config("toy1d_smoke.yaml"), {"steps": [3, 3]}, methods="neural")
    r = s.solve(seed=0)
    assert s.results is r and r["neural"]["total_steps"] == 6


def test_bench_returns_one_row_per_unit_and_method():
    rows = nefi.bench("toy1d", {"n": 32, "steps": [3, 3]}, methods=["grid", "neural"], n=1,
                      seeds=[0], classes=None)
    assert {r["method"] for r in rows} == {"grid", "neural"}
    assert all(r["error"] == "" and "psnr" in r["metrics"] for r in rows)
    kept = nefi.bench("toy1d", {"n": 32, "steps": [3, 3]}, methods="grid", n=1, seeds=[0],
                      metrics="psnr")
    assert all(set(r["metrics"]) == {"psnr"} for r in kept)
    with pytest.raises(fieldkit.Error, match=r"--metrics: expected metrics toy1d reports"):
        nefi.bench("toy1d", {"n": 32, "steps": [3, 3]}, methods="grid", n=1, seeds=[0],
                   metrics=["psnr", "nope"])


def test_bench_refuses_an_inverse_crime_unless_allowed():
    cfg = {"data_operator": "F2", "steps": [2, 2]}
    with pytest.raises(fieldkit.Error, match="inverse crime"):
        nefi.bench(config("nv_relaxometry_smoke.yaml"), cfg, methods=["neural"],
                   classes=["few/close"], n=1, seeds=[0])
    rows = nefi.bench(config("nv_relaxometry_smoke.yaml"), cfg, methods=["neural"],
                      classes=["few/close"], n=1, seeds=[0], allow_inverse_crime=True)
    assert len(rows) == 1 and rows[0]["error"] == ""


def test_bad_config_raises_with_the_cpp_message():
    with pytest.raises(fieldkit.Error, match="no_such_key"):
        nefi.invert("toy1d", {"no_such_key": 1})
    with pytest.raises(fieldkit.Error, match="toy1d"):
        nefi.invert("not_an_instance")


def test_measurement_is_what_the_methods_see():
    m = nefi.measurement(config("toy1d_smoke.yaml"), seed=2)
    r = nefi.invert(config("toy1d_smoke.yaml"), {"steps": [2, 2]}, seed=2, methods="grid")
    assert np.array_equal(m["data"], r["grid"]["measurement"]["data"])
    assert np.array_equal(m["ground_truth"], r["grid"]["ground_truth"])


def test_measurement_follows_the_configs_run_seed(tmp_path):
    path = tmp_path / "seed3.yaml"
    path.write_text("instance: toy1d\nconfig:\n  n: 32\nrun:\n  seed: 3\n  methods: [grid]\n")
    r = nefi.invert(str(path), {"steps": [2, 2]})["grid"]
    assert np.array_equal(nefi.measurement(str(path))["data"], r["measurement"]["data"])
    assert np.array_equal(nefi.measurement("toy1d", {"run": {"seed": 1}})["data"],
                          nefi.measurement("toy1d", seed=1)["data"])
    assert not np.array_equal(nefi.measurement("toy1d", seed=1)["data"],
                              nefi.measurement("toy1d")["data"])


@pytest.mark.parametrize("call,message", [
    (lambda: nefi.invert("toy1d", seed=-1), r"seed a whole number in \[0, 1844"),
    (lambda: nefi.invert("toy1d", seed=1.5), "seed a whole number, got 1.5"),
    (lambda: nefi.invert("toy1d", seed=True), "seed a whole number, got True"),
    (lambda: nefi.measurement("toy1d", seed=2 ** 70), "seed a whole number in"),
    (lambda: nefi.ensemble("toy1d", seeds=[0.5], method="grid"), "seeds a whole number"),
    (lambda: nefi.batch_invert("toy1d", seeds=[-1]), "seeds a whole number in"),
    (lambda: nefi.batch_invert("toy1d", chunk_size=1.5), "chunk_size a whole number"),
    (lambda: nefi.diagnose("toy1d", k=2.7), "k a whole number, got 2.7"),
    (lambda: nefi.diagnose("toy1d", hessian=-1), r"hessian a whole number in \[0"),
    (lambda: nefi.bench("toy1d", methods="grid", n=1.5), "n a whole number, got 1.5"),
    (lambda: nefi.set_num_threads(-3), r"n a whole number in \[1, 4096\]"),
    (lambda: nefi.quick_report({"metrics": {}}), "a dict without 'report'"),
])
def test_seeds_and_counts_are_whole_numbers_named_when_not(call, message):
    with pytest.raises(fieldkit.Error, match=message):
        call()


def test_torch_and_numpy_scalars_are_whole_numbers_too():
    import torch

    a = nefi.measurement("toy1d", seed=torch.tensor(2))["data"]
    assert np.array_equal(a, nefi.measurement("toy1d", seed=np.int64(2))["data"])
    assert np.array_equal(a, nefi.measurement("toy1d", seed=np.array(2))["data"])
    with pytest.raises(fieldkit.Error, match="seed a whole number"):
        nefi.measurement("toy1d", seed=torch.tensor(True))


def test_one_name_is_one_method_or_class_not_its_letters():
    rows = nefi.bench("toy1d", {"n": 32, "steps": [2, 2]}, methods="grid", classes="bumps", n=1,
                      seeds=0)
    assert [(r["method"], r["class"]) for r in rows] == [("grid", "bumps")]


def test_parameter_groups_and_sgd_reach_the_solve():
    nefi.set_num_threads(1)
    cfg = {"steps": [20, 20], "optimizer": "sgd", "lr": 0.002,
           "curriculum": {"freeze": [["field.out"], []],
                          "optim": {"lr_mult": {"field.layer0": 0.5}}}}
    text = nefi.config_yaml("toy1d", cfg)
    assert "lr_mult" in text and "freeze" in text and "optimizer: sgd" in text
    out = nefi.invert("toy1d", cfg, seed=0, methods="neural")["neural"]
    assert out["total_steps"] == 40 and np.isfinite(out["metrics"]["psnr"])
    with pytest.raises(fieldkit.Error, match="field.layr"):
        nefi.invert("toy1d", {"steps": [5, 5], "curriculum": {"optim": {"lr_mult": {"field.layr": 2}}}},
                    methods="neural")
