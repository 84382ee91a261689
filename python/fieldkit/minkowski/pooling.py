"""Pooling layers: local (max / average / sum over the inputs present under
each output's kernel), transposed (unpooling) and global (one row per batch
item)."""
import enum

import torch

from .functional import GlobalPoolingFunction, LocalPoolingFunction, autocast, run
from .._core import minkowski as _mk

_Reduction = _mk.PoolingMode


class PoolingMode(enum.IntEnum):
    """The reference's pooling modes by its names, and MAX, AVG, SUM for the
    reduction alone. The reference's GLOBAL_*_{DEFAULT, KERNEL,
    PYTORCH_INDEX} choose how its GPU computes one reduction; here they all
    give that reduction (the engine computes each one way)."""

    SUM = 0
    AVG = 1
    MAX = 2
    LOCAL_SUM_POOLING = 0
    LOCAL_AVG_POOLING = 1
    LOCAL_MAX_POOLING = 2
    GLOBAL_SUM_POOLING_DEFAULT = 0
    GLOBAL_AVG_POOLING_DEFAULT = 1
    GLOBAL_MAX_POOLING_DEFAULT = 2
    GLOBAL_SUM_POOLING_KERNEL = 0
    GLOBAL_AVG_POOLING_KERNEL = 1
    GLOBAL_MAX_POOLING_KERNEL = 2
    GLOBAL_SUM_POOLING_PYTORCH_INDEX = 0
    GLOBAL_AVG_POOLING_PYTORCH_INDEX = 1
    GLOBAL_MAX_POOLING_PYTORCH_INDEX = 2


_REDUCTION = {PoolingMode.SUM: _Reduction.SUM, PoolingMode.AVG: _Reduction.AVG,
              PoolingMode.MAX: _Reduction.MAX}


def reduction(mode):
    """The engine's reduction for a PoolingMode (or the engine's own enum)."""
    if isinstance(mode, _Reduction):
        return mode
    try:
        return _REDUCTION[PoolingMode(mode)]
    except ValueError:
        raise ValueError(f"expected a PoolingMode (SUM, AVG, MAX or a reference name), got "
                         f"{mode!r}") from None
from .kernel import make_generator, output_key, transposed_output_key
from .sparse_tensor import SparseTensor, TensorField, layer_input
from .tensor_base import batch_ids


def _pooling_region(module, input):
    # The reference's stride map where the kernel size is the stride: each
    # input under its floor-strided parent (k = s = 3 pools o..o+2, not the
    # centred o-1..o+1); the engine's pooling_region says when.
    gen = module.kernel_generator
    return _mk.pooling_region(gen.region, list(gen.kernel_stride), input.D)


class _LocalPooling(torch.nn.Module):
    mode = _Reduction.SUM
    _region = _pooling_region

    def __init__(self, kernel_size=-1, stride=1, dilation=1, kernel_generator=None,
                 dimension=None):
        super().__init__()
        self.dimension = dimension
        self.kernel_generator = make_generator(kernel_generator, kernel_size, stride, dilation,
                                               dimension)

    def forward(self, input, coordinates=None):
        layer_input(input, type(self).__name__, self.dimension)
        mgr, key = input.coordinate_manager, input.coordinate_map_key
        out_key = output_key(input, coordinates)
        if out_key is None:
            out_key = mgr.stride(key, self.kernel_generator.kernel_stride)
        kmap = mgr.region_kernel_map(key, out_key, self._region(input), False)
        (f,) = autocast(input.F)
        out = run(LocalPoolingFunction, f, kmap, self.mode)
        return SparseTensor._on_map(out, out_key, mgr)


class MinkowskiSumPooling(_LocalPooling):
    mode = _Reduction.SUM


class MinkowskiAvgPooling(_LocalPooling):
    """Average over the inputs present under the kernel (not the kernel volume)."""

    mode = _Reduction.AVG


class MinkowskiMaxPooling(_LocalPooling):
    """Per-channel max; ties go to the first offset; the gradient to the arg-max."""

    mode = _Reduction.MAX


class MinkowskiPoolingTranspose(torch.nn.Module):
    """Unpooling onto finer coordinates, summing the coarse features whose kernel
    reaches each output (the reference's behaviour; the exact adjoint of sum
    pooling with the same kernel and stride)."""

    _region = _pooling_region

    def __init__(self, kernel_size, stride, dilation=1, kernel_generator=None,
                 expand_coordinates=False, dimension=None):
        super().__init__()
        self.dimension = dimension
        self.kernel_generator = make_generator(kernel_generator, kernel_size, stride, dilation,
                                               dimension, expand_coordinates)

    def forward(self, input, coordinates=None):
        layer_input(input, type(self).__name__, self.dimension)
        mgr, key = input.coordinate_manager, input.coordinate_map_key
        out_key = output_key(input, coordinates)
        if out_key is None:
            out_key = transposed_output_key(input, self.kernel_generator, self._region(input))
        kmap = mgr.region_kernel_map(key, out_key, self._region(input), True)
        (f,) = autocast(input.F)
        out = run(LocalPoolingFunction, f, kmap, _Reduction.SUM)
        return SparseTensor._on_map(out, out_key, mgr)


class MinkowskiGlobalPooling(torch.nn.Module):
    """One row per batch item b with points, at (b, 0, ..., 0), in ascending b
    (an item without points gets no row, as on the reference's origin map).
    ``mode``: a PoolingMode, AVG by default. A TensorField is
    pooled over its points (the output on the "field@origin" map of its
    manager, tensor stride 1)."""

    def __init__(self, mode=PoolingMode.GLOBAL_AVG_POOLING_PYTORCH_INDEX):
        super().__init__()
        self.mode = mode
        self._reduction = reduction(mode)

    def forward(self, input):
        layer_input(input, type(self).__name__, fields=True)
        mgr = input.coordinate_manager
        if isinstance(input, TensorField):
            batch = batch_ids(input.C, type(self).__name__)
            groups = _mk.field_batch_groups(batch.to(torch.int32).cpu().contiguous())
            out_key = mgr.origin_key(_mk.MapKey([1] * input.D, "field"), groups.items)
        else:
            groups = mgr.batch_groups(input.coordinate_map_key)
            out_key = mgr.origin_key(input.coordinate_map_key, groups.items)
        (f,) = autocast(input.F)
        out = run(GlobalPoolingFunction, f, groups, self._reduction)
        return SparseTensor._on_map(out, out_key, mgr)


class MinkowskiGlobalSumPooling(MinkowskiGlobalPooling):
    def __init__(self, mode=PoolingMode.GLOBAL_SUM_POOLING_PYTORCH_INDEX):
        super().__init__(mode)


class MinkowskiGlobalAvgPooling(MinkowskiGlobalPooling):
    def __init__(self, mode=PoolingMode.GLOBAL_AVG_POOLING_PYTORCH_INDEX):
        super().__init__(mode)


class MinkowskiGlobalMaxPooling(MinkowskiGlobalPooling):
    def __init__(self, mode=PoolingMode.GLOBAL_MAX_POOLING_PYTORCH_INDEX):
        super().__init__(mode)

