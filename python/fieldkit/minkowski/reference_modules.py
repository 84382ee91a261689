"""The reference's module paths, so ported imports resolve:
``from MinkowskiEngine.MinkowskiOps import to_sparse`` becomes
``from fieldkit.minkowski.MinkowskiOps import to_sparse``. Each path is a
module in sys.modules holding the names the reference's module of that
name exports (its __init__ lists them per module), taken from this
package; a name fieldkit lacks is left out, so importing it fails by name.
MinkowskiFunctional, MinkowskiCoordinateManager and modules.* are real
modules of the package and need no entry here."""
import sys
import types

_REFERENCE_MODULES = {
    "MinkowskiBroadcast": (
        "MinkowskiBroadcast", "MinkowskiBroadcastAddition", "MinkowskiBroadcastConcatenation",
        "MinkowskiBroadcastFunction", "MinkowskiBroadcastMultiplication"),
    "MinkowskiChannelwiseConvolution": ("MinkowskiChannelwiseConvolution",),
    "MinkowskiCommon": ("MinkowskiModuleBase", "convert_to_int_list", "convert_to_int_tensor"),
    "MinkowskiConvolution": (
        "MinkowskiConvolution", "MinkowskiConvolutionFunction", "MinkowskiConvolutionTranspose",
        "MinkowskiConvolutionTransposeFunction", "MinkowskiGenerativeConvolutionTranspose"),
    "MinkowskiInterpolation": ("MinkowskiInterpolation", "MinkowskiInterpolationFunction"),
    "MinkowskiKernelGenerator": (
        "KernelGenerator", "KernelRegion", "convert_region_type", "get_kernel_volume"),
    "MinkowskiNetwork": ("MinkowskiNetwork",),
    "MinkowskiNonlinearity": (
        "MinkowskiAdaptiveLogSoftmaxWithLoss", "MinkowskiAlphaDropout", "MinkowskiCELU",
        "MinkowskiDropout", "MinkowskiELU", "MinkowskiGELU", "MinkowskiHardshrink",
        "MinkowskiHardsigmoid", "MinkowskiHardswish", "MinkowskiHardtanh",
        "MinkowskiLeakyReLU", "MinkowskiLogSigmoid", "MinkowskiLogSoftmax", "MinkowskiPReLU",
        "MinkowskiReLU", "MinkowskiReLU6", "MinkowskiRReLU", "MinkowskiSELU",
        "MinkowskiSigmoid", "MinkowskiSiLU", "MinkowskiSinusoidal", "MinkowskiSoftmax",
        "MinkowskiSoftmin", "MinkowskiSoftplus", "MinkowskiSoftshrink", "MinkowskiSoftsign",
        "MinkowskiTanh", "MinkowskiTanhshrink", "MinkowskiThreshold"),
    "MinkowskiNormalization": (
        "MinkowskiBatchNorm", "MinkowskiInstanceNorm", "MinkowskiInstanceNormFunction",
        "MinkowskiStableInstanceNorm", "MinkowskiSyncBatchNorm"),
    "MinkowskiOps": (
        "MinkowskiLinear", "MinkowskiStackCat", "MinkowskiStackMean", "MinkowskiStackSum",
        "MinkowskiStackVar", "MinkowskiToDenseTensor", "MinkowskiToFeature",
        "MinkowskiToSparseTensor", "cat", "dense_coordinates", "mean", "to_sparse",
        "to_sparse_all", "var", ("_sum", "sum")),
    "MinkowskiPooling": (
        "MinkowskiAvgPooling", "MinkowskiDirectMaxPoolingFunction", "MinkowskiGlobalAvgPooling",
        "MinkowskiGlobalMaxPooling", "MinkowskiGlobalPooling", "MinkowskiGlobalPoolingFunction",
        "MinkowskiGlobalSumPooling", "MinkowskiLocalPoolingFunction",
        "MinkowskiLocalPoolingTransposeFunction", "MinkowskiMaxPooling",
        "MinkowskiPoolingTranspose", "MinkowskiSumPooling", "PoolingMode"),
    "MinkowskiPruning": ("MinkowskiPruning", "MinkowskiPruningFunction"),
    "MinkowskiSparseTensor": ("SparseTensor",),
    "MinkowskiTensor": (
        "SparseTensorOperationMode", "SparseTensorQuantizationMode",
        "clear_global_coordinate_manager", "global_coordinate_manager",
        "set_global_coordinate_manager", "set_sparse_tensor_operation_mode",
        "sparse_tensor_operation_mode"),
    "MinkowskiTensorField": ("TensorField",),
    "MinkowskiUnion": ("MinkowskiUnion", "MinkowskiUnionFunction"),
    "sparse_matrix_functions": (
        "MinkowskiSPMMAverageFunction", "MinkowskiSPMMFunction", "spmm", "spmm_average"),
    "utils.collation": (
        "SparseCollation", "batch_sparse_collate", "batched_coordinates", "sparse_collate"),
    "utils.quantization": (
        "fnv_hash_vec", "quantize", "quantize_label", "ravel_hash_vec", "sparse_quantize",
        "unique_coordinate_map"),
}


def register_reference_modules(package, sources):
    """Registers each path under `package` (a module) as a module of the
    names found first in `sources` (modules, searched in order); each
    entry is a name or (the reference's name, ours)."""
    for path, names in _REFERENCE_MODULES.items():
        module = types.ModuleType(f"{package.__name__}.{path}",
                                  f"The reference's MinkowskiEngine.{path}, on fieldkit.")
        for entry in names:
            theirs, ours = entry if isinstance(entry, tuple) else (entry, entry)
            for source in sources:
                if hasattr(source, ours):
                    setattr(module, theirs, getattr(source, ours))
                    break
        sys.modules[module.__name__] = module
        # Most paths share their name with a class (ME.MinkowskiConvolution):
        # the attribute stays the class, as in the reference's namespace, and
        # the path resolves through sys.modules.
        parent, _, leaf = path.rpartition(".")
        owner = getattr(package, parent) if parent else package
        if not hasattr(owner, leaf):
            setattr(owner, leaf, module)
