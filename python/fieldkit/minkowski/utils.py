"""``ME.utils``: the input-building helpers under the reference's module path."""
from .coordinates import batched_coordinates, sparse_collate, sparse_quantize

__all__ = ["batched_coordinates", "sparse_collate", "sparse_quantize"]
