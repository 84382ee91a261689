"""fieldkit: the fk runtime's engines from Python.

``fieldkit.minkowski`` is a MinkowskiEngine-compatible sparse-convolution API on
PyTorch (``import fieldkit.minkowski as ME``); ``fieldkit.nefi`` runs nefi's
inverse solvers. Tensors cross into C++ through DLPack without copies, so the
package is tied to no torch version; torch is needed only by
``fieldkit.minkowski``.
"""
import os as _os

# In a build tree the native module sits in the build directory, not next to
# this file: the build's test runner names that directory.
if _os.environ.get("FIELDKIT_CORE_DIR"):
    __path__.append(_os.environ["FIELDKIT_CORE_DIR"])  # noqa: F821 (package __path__)

from . import _core  # noqa: E402
from ._core import Error  # noqa: E402

__version__ = "0.1.0"
__all__ = ["Error", "__version__", "cuda_available", "set_allow_tf32", "allow_tf32",
           "empty_cache", "memory_stats"]


def cuda_available():
    """Whether fieldkit can run on a CUDA device: built with its CUDA backend
    and at least one device visible to that backend's runtime."""
    return _core.built_with_cuda() and _core.cuda_device_count() > 0


def set_allow_tf32(allow):
    """fp32 GEMMs of fieldkit's CUDA backend on tensor cores as TF32 (10-bit
    mantissa products, f32 accumulation), or not. fk's switch, as the
    FK_ALLOW_TF32 knob: ``torch.backends.cuda.matmul.allow_tf32`` sets
    torch's own GEMMs only. No effect on the CPU."""
    if not isinstance(allow, bool):
        raise TypeError(f"set_allow_tf32: expected a bool, got {type(allow).__name__}")
    _core.set_allow_tf32(allow)


def allow_tf32():
    """Whether fieldkit's fp32 GEMMs may run as TF32 on CUDA (set_allow_tf32,
    else the FK_ALLOW_TF32 knob)."""
    return _core.allow_tf32()


def _device_name(where, device):
    name = str(device)  # a torch.device too
    if not isinstance(device, str) and type(device).__name__ != "device":
        raise TypeError(f"{where}: expected a device name ('cpu', 'cuda', 'cuda:N'), got "
                        f"{type(device).__name__}")
    return name


def empty_cache(device="cpu"):
    """Return fieldkit's cached free blocks on ``device`` to the system (live
    tensors are untouched): fk's allocator, which ``torch.cuda.empty_cache``
    does not reach. Worth it between inputs of very different sizes."""
    _core.empty_cache(_device_name("empty_cache", device))


def memory_stats(device="cpu"):
    """fieldkit's allocator on ``device``: bytes ``allocated`` (live),
    ``peak`` and ``reserved`` (live plus cached), ``num_allocs`` and
    ``cache_hits``."""
    return _core.memory_stats(_device_name("memory_stats", device))
