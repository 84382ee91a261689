"""Every instance the nefi CLI registers is reachable from Python: the same
names, methods and scenes as ``nefi list instances --json``, and each one's
smoke preset builds its measurement from Python (finite data and ground
truth)."""
import glob
import json
import os
import subprocess

import numpy as np
import pytest

import fieldkit.nefi as nefi

ROOT = os.environ.get("FIELDKIT_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("NEFI_CLI", os.path.join(ROOT, "build", "bin", "nefi"))


def cli_instances():
    out = subprocess.run([CLI, "list", "instances", "--json"], check=True, capture_output=True,
                         text=True).stdout
    return {i["name"]: i for i in json.loads(out)["instances"]}


def smoke_presets():
    """{instance: its first smoke preset (configs/*_smoke.yaml)}."""
    presets = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "configs", "*_smoke.yaml"))):
        with open(path) as f:
            name = next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("instance:"))
        presets.setdefault(name, path)
    return presets


def test_python_lists_the_clis_instances():
    ours, theirs = nefi.instances(), cli_instances()
    assert set(ours) == set(theirs)
    for name, entry in theirs.items():
        assert ours[name]["methods"] == entry["methods"]
        assert ours[name]["scenes"] == entry["scenes"]
        assert ours[name]["summary"] == entry["summary"]


@pytest.mark.parametrize("name", sorted(nefi.instances()))
def test_each_instance_builds_its_measurement_from_python(name):
    preset = smoke_presets().get(name)
    assert preset is not None, f"no configs/*_smoke.yaml for the instance {name}"
    assert f"instance: {name}" in nefi.config_yaml(preset)
    m = nefi.measurement(preset, seed=1)
    assert isinstance(m["data"], np.ndarray) and m["data"].size > 0
    assert np.isfinite(m["data"]).all() and np.isfinite(m["ground_truth"]).all()
