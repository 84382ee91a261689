"""How nefi's Python entry points read their arguments: a config (an
instance name, a file, a dict of overrides) as --set lines, seeds and method
names, each refused by name when it cannot mean what it says."""
import os
import reprlib
from collections.abc import Mapping

from ._core import Error
from ._core import nefi as _nefi
from ._forward_problem import _SEED_MAX, _whole


def _yaml_scalar(v):
    """An override's value as the YAML text of a --set. numpy (and torch)
    scalars, 0-d and n-d arrays go through Python's own numbers and lists
    first: numpy 2's repr of a float64 is 'np.float64(0.05)' and str of an
    array is '[30 60]', neither of which the engine reads."""
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        v = v.tolist()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_yaml_scalar(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_yaml_scalar(x) for x in v) + "]"
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):  # YAML's names, as config.yaml writes
            return ".nan" if v != v else (".inf" if v > 0 else "-.inf")
        return repr(float(v))  # a float subclass's repr may name its type
    if isinstance(v, int):
        return str(int(v))
    return str(v)


def _sets(overrides, prefix=""):
    """A (nested) dict of overrides as the CLI's KEY=VALUE assignments."""
    out, methods, seed = [], None, None
    for key, value in (overrides or {}).items():
        if isinstance(value, dict) and key != "lr_mult":  # lr_mult's keys are prefixes
            if key == "run":
                seed = value.get("seed", seed)
                methods = value.get("methods", methods)
                out += [f"run.{k}={_yaml_scalar(v)}" for k, v in value.items()
                        if k not in ("seed", "methods")]
                continue
            sub, m, s = _sets(value, prefix + key + ".")
            out += sub
            methods, seed = m or methods, seed if s is None else s
        elif prefix == "" and key == "seed":
            seed = value
        elif prefix == "" and key == "methods":
            methods = value
        else:
            out.append(f"{prefix}{key}={_yaml_scalar(value)}")
    return out, methods, seed


def _target(where, instance, config):
    """(target, overrides): a YAML path given as `config` is the target; an
    instance name beside it must be the one the file names (a second path
    there would be dropped without a word)."""
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if not (isinstance(instance, str) and instance in _nefi.instances()):
            raise Error(f"{where}: expected, beside the config file {path}, the name of the "
                        f"instance it configures (or the file alone as the instance), got "
                        f"{reprlib.repr(instance)}")
        named = _nefi.config_yaml(path, [], None, []).split("\n", 1)[0]
        if named != f"instance: {instance}":
            raise Error(f"{where}: expected a config file of instance {instance}, got {path} "
                        f"({named})")
        return path, {}
    if config is not None and not isinstance(config, Mapping):
        raise Error(f"{where}: expected config as a dict of overrides or a YAML path, got "
                    f"{type(config).__name__} {reprlib.repr(config)}")
    if not isinstance(instance, (str, os.PathLike)):
        raise Error(f"{where}: expected an instance name or a YAML path, got "
                    f"{type(instance).__name__} {reprlib.repr(instance)}")
    return os.fspath(instance), config or {}


def _campaign_sets(where, overrides, gives):
    """The --set assignments of a campaign's config dict and its methods; a
    seed there is refused, as the CLI's campaigns refuse --set run.seed:
    `gives` says which argument gives each run's."""
    sets, methods, seed = _sets(overrides)
    if seed is not None:
        raise Error(f"{where}: expected no seed in the config ({gives}), got run.seed {seed!r}")
    return sets, methods


def _seed(where, value, name="seed"):
    """A seed as an int in [0, 2^64), None kept (the config's); a bool, a
    fraction or a negative number refused by name, never truncated."""
    return None if value is None else _whole(where, name, value, 0, _SEED_MAX)


def _seeds(where, values, name="seeds"):
    """A list of seeds (a single int taken as one)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__") or \
            getattr(values, "ndim", None) == 0:  # one seed, a 0-d array or tensor too
        values = [values]
    return [_whole(where, name, v, 0, _SEED_MAX) for v in values]  # None too: no config's here


def _names(value):
    """A list of names; one string is one name, not its characters."""
    return [value] if isinstance(value, str) else list(value or [])


def _methods(where, given, from_config):
    """The methods to run: those given, else the config's. An empty list
    given is refused (it ran the config's methods without a word)."""
    if given is None:
        return _names(from_config)
    names = _names(given)
    if not names:
        raise Error(f"{where}: expected at least one method in methods=, got none (None runs the "
                    "config's)")
    return names
