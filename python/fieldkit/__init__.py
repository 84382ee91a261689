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
__all__ = ["Error", "__version__", "cuda_available"]


def cuda_available():
    """Whether fieldkit can run on a CUDA device: built with its CUDA backend
    and at least one device visible to that backend's runtime."""
    return _core.built_with_cuda() and _core.cuda_device_count() > 0
