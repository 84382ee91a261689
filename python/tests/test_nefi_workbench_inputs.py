"""fieldkit.nefi's workbench inputs: override values of any numpy version
written as plain YAML, a campaign's config refusing the seed its seeds= give,
Solver's config after a solve, and fieldkit.Error (expected vs given) for
inputs of the wrong kind."""
import numpy as np
import pytest

import fieldkit
import fieldkit.nefi as nefi
from conftest import config_path

SMOKE = config_path("toy1d_smoke.yaml")
TINY = {"steps": [3, 3]}


class Numpy2Float(float):
    """A float whose repr names its type, as numpy 2's float64 does
    ('np.float64(0.05)'), so that numpy 1 shows the case too."""

    def __repr__(self):
        return f"np.float64({float(self)!r})"


def yaml_line(text, key):
    return next(line.strip() for line in text.splitlines() if line.strip().startswith(key + ":"))


def test_numpy_values_are_written_as_plain_yaml_numbers_and_lists():
    sets, _, _ = nefi._sets({"lr": Numpy2Float(0.05), "a": np.float64(0.5), "b": np.float32(0.25),
                             "c": np.int64(7), "d": np.bool_(True), "e": np.array(1.5),
                             "steps": np.array([30, 60]), "f": [np.int32(1), np.float64(2.0)],
                             "run": {"g": np.array([[1, 2], [3, 4]])}})
    assert sets == ["lr=0.05", "a=0.5", "b=0.25", "c=7", "d=true", "e=1.5", "steps=[30, 60]",
                    "f=[1, 2.0]", "run.g=[[1, 2], [3, 4]]"]


def test_numpy_overrides_reach_the_engine():
    text = nefi.config_yaml(SMOKE, {"steps": np.array([30, 60]), "lr": Numpy2Float(0.05),
                                    "solver": {"nan_guard": np.bool_(False)}})
    assert yaml_line(text, "steps") == "steps: [30, 60]"
    assert yaml_line(text, "lr") == "lr: 0.05"
    assert yaml_line(text, "nan_guard") == "nan_guard: false"
    out = nefi.invert(SMOKE, {"steps": np.array([3, 3]), "lr": np.float32(0.05)}, methods="grid")
    assert out["grid"]["total_steps"] == 6


@pytest.mark.parametrize("key", ["seed", "run"])
def test_campaigns_refuse_a_seed_in_the_config_as_the_cli_does(key):
    cfg = dict(TINY, **({"seed": 5} if key == "seed" else {"run": {"seed": 5}}))
    with pytest.raises(fieldkit.Error, match=r"bench: expected no seed in the config \(seeds="):
        nefi.bench(SMOKE, cfg, methods="grid", n=1, seeds=[0])
    with pytest.raises(fieldkit.Error, match=r"sweep: expected no seed in the config \(seeds="):
        nefi.sweep(SMOKE, "lr", [0.01], cfg, n=1, seeds=[0])
    with pytest.raises(fieldkit.Error, match=r"ablate: expected no seed in the config \(seeds="):
        nefi.ablate(SMOKE, ["no_pe"], cfg, n=1, seeds=[0])
    with pytest.raises(fieldkit.Error, match=r"batch_invert: expected no seed in the config "
                                             r"\(seeds=.*data_seeds="):
        nefi.batch_invert(SMOKE, cfg, seeds=[0])


def test_batch_invert_refuses_methods_in_the_config():
    with pytest.raises(fieldkit.Error, match=r"batch_invert: expected no methods in the config "
                                             r"\(method= .*got run.methods \['grid'\]"):
        nefi.batch_invert(SMOKE, dict(TINY, methods=["grid"]), seeds=[0])
    with pytest.raises(fieldkit.Error, match="expected no methods"):
        nefi.batch_invert(SMOKE, {"run": {"methods": ["grid"]}}, seeds=[0])


def test_an_ensemble_refuses_methods_in_the_config_and_runs_take_some_method():
    # The config's run.methods ran as the default solver without a word.
    with pytest.raises(fieldkit.Error, match=r"ensemble: expected no methods in the config "
                                             r"\(method= .*got run.methods \['grid'\]"):
        nefi.ensemble(SMOKE, dict(TINY, run={"methods": ["grid"]}), seeds=[0])
    # methods=[] ran the config's methods.
    with pytest.raises(fieldkit.Error, match=r"invert: expected at least one method"):
        nefi.invert(SMOKE, TINY, methods=[])
    with pytest.raises(fieldkit.Error, match=r"config_yaml: expected at least one method"):
        nefi.config_yaml(SMOKE, TINY, methods=())


def test_a_variant_campaign_takes_one_base_method_from_the_config():
    with pytest.raises(fieldkit.Error, match=r"sweep: expected at most one method in the config "
                                             r".*base= .*\['grid', 'neural'\]"):
        nefi.sweep(SMOKE, "lr", [0.01], {"methods": ["grid", "neural"]}, n=1, seeds=[0])


def test_solver_config_yaml_is_the_last_solves_seed_included():
    s = nefi.Solver(SMOKE, TINY, methods=["grid"])
    assert yaml_line(s.config_yaml, "seed") == "seed: 0"  # before a solve: the config's
    s.solve(seed=4)
    assert yaml_line(s.config_yaml, "seed") == "seed: 4"
    assert yaml_line(s.config_yaml, "methods") == "methods: [grid]"
    assert s.config_yaml == nefi.config_yaml(SMOKE, TINY, seed=4, methods=["grid"])


def test_a_config_of_the_wrong_kind_is_an_error_naming_what_is_expected():
    with pytest.raises(fieldkit.Error, match="invert: expected config as a dict of overrides or "
                                             "a YAML path, got int 5"):
        nefi.invert(SMOKE, 5)
    with pytest.raises(fieldkit.Error, match="measurement: expected config as a dict"):
        nefi.measurement(SMOKE, [("n", 32)])
    with pytest.raises(fieldkit.Error, match="invert: expected an instance name or a YAML path, "
                                             "got NoneType"):
        nefi.invert(None)


def test_a_second_config_path_is_refused_not_solved():
    with pytest.raises(fieldkit.Error, match="invert: expected, beside the config file .*, the "
                                             "name of the instance it configures"):
        nefi.invert(config_path("deconvolution_smoke.yaml"), SMOKE)
    with pytest.raises(fieldkit.Error, match="expected, beside the config file"):
        nefi.config_yaml("toy1d_typo", SMOKE)
    assert "instance: toy1d" in nefi.config_yaml("toy1d", SMOKE)


def test_lr_range_test_names_what_it_expects():
    with pytest.raises(fieldkit.Error, match="lr_range_test: expected a from_forward "
                                             "ForwardProblem .*got str 'toy1d'"):
        nefi.lr_range_test("toy1d")
    A = np.eye(4)
    p = nefi.from_forward(A, np.array([0.1, 0.2, 0.3, 0.4]), noise=0.01)
    with pytest.raises(fieldkit.Error, match=r"expected lrs a sequence of positive learning "
                                             r"rates \(one rate: \[lr\]\), got float 0.01"):
        nefi.lr_range_test(p, lrs=1e-2)
    for bad in (-1.0, 0, float("nan"), "0.1", True):
        with pytest.raises(fieldkit.Error, match="expected lrs a sequence of positive"):
            nefi.lr_range_test(p, lrs=[1e-2, bad], steps=2)
    best, rows = nefi.lr_range_test(p, lrs=np.array([1e-3, 1e-2]), steps=2)
    assert [lr for lr, _ in rows] == [1e-3, 1e-2] and best in (1e-3, 1e-2)


def test_device_defaults_name_nefi_device():
    for f in (nefi.invert, nefi.ensemble):
        assert "run.device, else $NEFI_DEVICE" in " ".join(f.__doc__.split())


def test_sweep_values_from_numpy_are_plain_yaml():
    def labels(axis, values):
        out = nefi.sweep(SMOKE, axis, values, TINY, n=1, seeds=[0], classes="bumps")
        return [v["label"] for v in out["variants"]]

    assert labels("lr", np.array([0.01, 0.02])) == ["lr=0.01", "lr=0.02"]
    assert labels("hidden", np.int64(16)) == ["hidden=16"]
    assert labels("steps", [np.array([3, 3]), [2, 4]]) == ["steps=[3, 3]", "steps=[2, 4]"]


def test_batch_invert_refuses_a_config_files_seed(tmp_path):
    # the file's run.seed was dropped without a word (seeds= gives each problem's)
    f = tmp_path / "seeded.yaml"
    f.write_text("instance: toy1d\nrun:\n  seed: 5\n")
    with pytest.raises(fieldkit.Error, match="run.seed"):
        nefi.batch_invert(str(f), seeds=[0])


def test_an_infinite_override_is_written_as_yaml_reads_it():
    # repr(inf) is 'inf', which the engine refused; config.yaml writes .inf
    text = nefi.config_yaml("toy1d", {"curriculum": {"time_budget_s": float("inf")}})
    assert "time_budget_s: .inf" in text
