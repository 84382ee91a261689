"""``ME.utils``: the input-building helpers under the reference's module path."""
from .collation import SparseCollation, batch_sparse_collate, batched_coordinates, sparse_collate
from .coordinates import unique_coordinate_map
from .determinism import is_deterministic, set_deterministic, sorted_coordinates
from .diagnostics import gradcheck, summary
from .hashing import fnv_hash_vec, ravel_hash_vec
from .quantization import sparse_quantize
from .weight_init import kaiming_normal_

__all__ = ["SparseCollation", "batch_sparse_collate", "batched_coordinates", "fnv_hash_vec",
           "gradcheck", "is_deterministic", "kaiming_normal_", "ravel_hash_vec",
           "set_deterministic", "sorted_coordinates", "sparse_collate", "sparse_quantize",
           "summary", "unique_coordinate_map"]
