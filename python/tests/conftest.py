"""Shared fixtures: small random sparse inputs (two batch items, D = 2 or 3),
and the repository's config files wherever pytest runs from."""
import os

import pytest
import torch

import fieldkit.minkowski as ME

ROOT = os.environ.get("FIELDKIT_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))


def config_path(name):
    """configs/<name> of the repository (ctest runs pytest from the build tree)."""
    return os.path.join(ROOT, "configs", name)


def random_coordinates(n, dim, extent, batches=2, seed=0):
    """Unique N x (1+D) int32 coordinates in [0, extent)^D, every batch item present."""
    g = torch.Generator().manual_seed(seed)
    c = torch.randint(0, extent, (n, dim + 1), generator=g, dtype=torch.int32)
    c[:, 0] = torch.arange(n, dtype=torch.int32) % batches
    return torch.unique(c, dim=0)


def random_sparse(n=40, dim=2, extent=6, channels=3, dtype=torch.float64, seed=0):
    c = random_coordinates(n, dim, extent, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    f = torch.randn(len(c), channels, generator=g, dtype=dtype)
    return ME.SparseTensor(f, c)


def on_map(x, features):
    """`features` on x's coordinates (a new SparseTensor of x's manager)."""
    return ME.SparseTensor(features, coordinate_map_key=x.coordinate_map_key,
                           coordinate_manager=x.coordinate_manager)


@pytest.fixture
def sparse2d():
    return random_sparse()
