"""MinkowskiEngine's API on fieldkit: ``import fieldkit.minkowski as ME``.

SparseTensor, TensorField and the layers keep the reference's names and
arguments; every op is a ``torch.autograd.Function`` calling fieldkit's C++
forward/backward pair, so torch's tape records sparse layers next to dense
ones and torch optimizers see the parameters.
"""
import torch

from .. import _core
from .._core import Error
from .._core.minkowski import KernelRegion, RegionType, is_deterministic, set_deterministic
from .backend_choices import (
    CoordinateMapType,
    GPUMemoryAllocatorType,
    set_coordinate_map_type,
    set_gpu_allocator,
    set_memory_manager_backend,
)
from .coordinates import (
    CoordinateManager,
    CoordinateMapKey,
    CoordsManager,
    MinkowskiAlgorithm,
    SparseTensorOperationMode,
    SparseTensorQuantizationMode,
    clear_global_coordinate_manager,
    convert_to_int_list,
    convert_to_int_tensor,
    global_coordinate_manager,
    set_global_coordinate_manager,
    set_sparse_tensor_operation_mode,
    sparse_tensor_operation_mode,
)
from .collation import batched_coordinates, sparse_collate
from .quantization import sparse_quantize
from .sparse_tensor import SparseTensor, TensorField
from .determinism import sorted_coordinates
from .diagnostics import get_gpu_memory_info, print_diagnostics
from .kernel import KernelGenerator, convert_region_type, get_kernel_volume
from .convolution import (
    ConvolutionMode,
    MinkowskiChannelwiseConvolution,
    MinkowskiConvolution,
    MinkowskiConvolutionTranspose,
    MinkowskiGenerativeConvolutionTranspose,
)
from .convolution_on_coords import MinkowskiConvolutionOnCoords
from .pooling import (
    MinkowskiAvgPooling,
    MinkowskiGlobalAvgPooling,
    MinkowskiGlobalMaxPooling,
    MinkowskiGlobalPooling,
    MinkowskiGlobalSumPooling,
    MinkowskiMaxPooling,
    MinkowskiPoolingTranspose,
    MinkowskiSumPooling,
    PoolingMode,
)
from .broadcast import (
    MinkowskiBroadcast,
    MinkowskiBroadcastAddition,
    MinkowskiBroadcastConcatenation,
    MinkowskiBroadcastMultiplication,
)
from .normalization import GlobalPoolingMode, MinkowskiBatchNorm, MinkowskiInstanceNorm
from .sync_batch_norm import MinkowskiSyncBatchNorm
from .ops import (
    MinkowskiInterpolation,
    MinkowskiPruning,
    MinkowskiStackCat,
    MinkowskiStackMean,
    MinkowskiStackSum,
    MinkowskiStackVar,
    MinkowskiToDenseTensor,
    MinkowskiToFeature,
    MinkowskiToSparseTensor,
    MinkowskiUnion,
    cat,
    dense_coordinates,
    interpolate,
    mean,
    sum,
    to_sparse,
    to_sparse_all,
    var,
)
from .functional import (MinkowskiDirectMaxPoolingFunction, MinkowskiSPMMAverageFunction,
                         MinkowskiSPMMFunction, spmm, spmm_average)
from .reference_functions import (
    BroadcastMode,
    MinkowskiBroadcastFunction,
    MinkowskiConvolutionFunction,
    MinkowskiConvolutionTransposeFunction,
    MinkowskiGlobalPoolingFunction,
    MinkowskiInstanceNormFunction,
    MinkowskiInterpolationFunction,
    MinkowskiLocalPoolingFunction,
    MinkowskiLocalPoolingTransposeFunction,
    MinkowskiPruningFunction,
    MinkowskiUnionFunction,
)
from .nonlinearity import *  # noqa: F401,F403  (MinkowskiReLU, ...)
from .nonlinearity import MinkowskiDropout, MinkowskiLinear, MinkowskiSinusoidal
from . import feature_functional as MinkowskiFunctional, modules, utils
from . import quantization as _quantization
from .reference_modules import register_reference_modules as _register_reference_modules
import sys as _sys

# `import fieldkit.minkowski.MinkowskiFunctional as MEF`, the reference's path.
_sys.modules[__name__ + ".MinkowskiFunctional"] = MinkowskiFunctional
# `from ...MinkowskiCoordinateManager import set_coordinate_map_type`, likewise.
_sys.modules[__name__ + ".MinkowskiCoordinateManager"] = coordinates


class MinkowskiModuleBase(torch.nn.Module):
    """The reference's (empty) base of its layers."""


def is_cuda_available():
    """Whether this build of fieldkit has its CUDA backend (the reference's
    question about its own build)."""
    return bool(_core.built_with_cuda())


def cuda_version():
    """The CUDA toolkit version this build was compiled with (1000 * major + 10
    * minor, e.g. 13000), -1 for a CPU-only build, as the reference reports."""
    return int(_core.cuda_versions()["built"])


def cudart_version():
    """The CUDA runtime version loaded (same encoding; 0 when it cannot say), -1
    for a CPU-only build."""
    return int(_core.cuda_versions()["runtime"])


class MinkowskiNetwork(torch.nn.Module):
    """The reference's base class: an nn.Module that knows its dimension."""

    def __init__(self, D):
        super().__init__()
        self.D = D


# `from ...MinkowskiOps import to_sparse` and the reference's other module paths.
_register_reference_modules(_sys.modules[__name__], [_sys.modules[__name__], utils, _quantization])

__all__ = [n for n in dir() if not n.startswith("_")]
