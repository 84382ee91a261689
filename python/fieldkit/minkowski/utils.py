"""``ME.utils``: the input-building helpers under the reference's module path."""
from .coordinates import batched_coordinates, sparse_collate, sparse_quantize
from .determinism import is_deterministic, set_deterministic, sorted_coordinates

__all__ = ["batched_coordinates", "sparse_collate", "sparse_quantize", "is_deterministic",
           "set_deterministic", "sorted_coordinates"]
