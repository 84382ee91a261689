"""The reference's per-op autograd Functions under its names and ``apply``
signatures (coordinate map keys and a manager rather than kernel maps).
Each is a torch.autograd.Function: its forward resolves the maps and runs
the forward of the op's Function of functional.py on its own ctx, its
backward is that Function's backward, so gradients (and the convolution's
higher derivatives) are those of the layers. An output key may be None or,
as the reference's modules pass it, an unset ``CoordinateMapKey(D + 1)``:
the output map is then the one the layer would make, and an unset key
object is filled in with its key in place (as the reference's backend
does); a set key must name the map the op writes."""
import enum
import functools
import inspect

import torch

from .._core import minkowski as _mk
from .convolution import convolution_output_key
from .functional import (BroadcastFunction, ConvolutionFunction, GlobalPoolingFunction,
                         InstanceNormFunction, LocalPoolingFunction, _NoGraph, autocast,
                         widened)
from .kernel import transposed_output_key
from .ops import interpolate
from .pooling import reduction
from .sparse_tensor import SparseTensor


def _input(features, in_key, manager, where):
    """The input as a SparseTensor of the manager (no copy), checked."""
    if manager is None or not isinstance(manager, _mk.CoordinateManager):
        raise ValueError(f"{where}: expected a CoordinateManager, got {type(manager).__name__}")
    if not isinstance(in_key, _mk.MapKey) or not manager.has(in_key):
        raise ValueError(f"{where}: expected an input key of the manager, got {in_key}")
    if features.dim() != 2 or features.shape[0] != manager.size(in_key):
        raise ValueError(f"{where}: expected {manager.size(in_key)} x C features (the map "
                         f"{in_key}), got {tuple(features.shape)}")
    return SparseTensor._on_map(features, in_key, manager)


def _checked_out_key(manager, out_key, where):
    if not isinstance(out_key, _mk.MapKey) or not manager.has(out_key):
        raise ValueError(f"{where}: expected an output key of the manager, got {out_key}")
    return out_key


def _is_unset(out_key):
    return isinstance(out_key, _mk.MapKey) and not out_key.is_key_set()


def _out_key(manager, out_key, made, where):
    """The key of the map the op writes: out_key when set (checked), else
    made() (the layer's own output map), copied into an unset key object so
    the caller holds it afterwards, as the reference's backend sets it."""
    if out_key is not None and not _is_unset(out_key):
        return _checked_out_key(manager, out_key, where)
    _check_unset_size(manager, out_key, where)
    key = made()
    if out_key is not None:
        out_key.tensor_stride, out_key.tag = key.tensor_stride, key.tag
    return key


def _check_unset_size(manager, out_key, where):
    """An unset key of another coordinate size is refused before any map is made."""
    if _is_unset(out_key) and out_key.get_coordinate_size() != manager.dimension + 1:
        raise ValueError(f"{where}: expected an unset out_key of coordinate size "
                         f"{manager.dimension + 1} (D + 1), got {out_key.get_coordinate_size()}")


class _ReferenceFunction(torch.autograd.Function):
    """A torch.autograd.Function whose ``apply`` takes the reference's
    arguments with their defaults and keywords (torch's takes positional ones
    only), casts the float tensors named by ``autocast_args`` under
    torch.autocast (on the tape, as the reference's maybe_autocast), and
    runs the forward alone when no input needs a gradient (as the layers do:
    torch's Function machinery costs about as much as a small op)."""

    autocast_args = ()

    @classmethod
    def apply(cls, *args, **kwargs):
        bound = _signature(cls).bind(None, *args, **kwargs)
        bound.apply_defaults()
        args = list(bound.args[1:])
        for i in cls.autocast_args:
            if isinstance(args[i], torch.Tensor):
                (args[i],) = autocast(args[i])
        args = cls.prepare(*args)
        if torch.is_grad_enabled() and any(
                isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return super().apply(*args)
        return cls.forward(_NoGraph(), *args)

    @staticmethod
    def prepare(*args):
        """The arguments the Function records (a view or a copy made here is
        on the tape)."""
        return args


@functools.lru_cache(maxsize=None)
def _signature(cls):
    return inspect.signature(cls.forward)


class MinkowskiConvolutionFunction(_ReferenceFunction):
    """``apply(F, W, kernel_generator, convolution_mode, in_key, out_key=None,
    manager=None)``: W is (K, C_in, C_out) (or (C_in, C_out) for K = 1);
    convolution_mode is accepted as the layers accept it. Returns the
    output features; differentiable in F and W, any number of times (the
    backward is the layers' ConvolutionFunction's)."""

    transposed = False
    autocast_args = (0, 1)

    @staticmethod
    def prepare(F, W, *rest):
        return (F.contiguous(), W if W.dim() == 3 else W[None], *rest)

    @classmethod
    def _forward(cls, ctx, F, W, kernel_generator, convolution_mode, in_key, out_key, manager):
        x = _input(F, in_key, manager, cls.__name__)
        out_key = _out_key(manager, out_key,
                           lambda: convolution_output_key(x, kernel_generator, cls.transposed),
                           cls.__name__)
        kmap = manager.region_kernel_map(in_key, out_key, kernel_generator.region, cls.transposed)
        return ConvolutionFunction.forward(ctx, F, W, kmap, False)

    @staticmethod
    def forward(ctx, F, W, kernel_generator, convolution_mode=None, in_key=None, out_key=None,
                manager=None):
        return MinkowskiConvolutionFunction._forward(ctx, F, W, kernel_generator,
                                                     convolution_mode, in_key, out_key, manager)

    @staticmethod
    def backward(ctx, grad_out):
        gf, gw = ConvolutionFunction.backward(ctx, grad_out)[:2]
        return gf, gw, None, None, None, None, None


class MinkowskiConvolutionTransposeFunction(MinkowskiConvolutionFunction):
    """The transposed convolution's ``apply``, arguments as
    MinkowskiConvolutionFunction's; the output map by default is the
    existing finer map (the encoder's), else a new expanded one."""

    transposed = True

    @staticmethod
    def forward(ctx, F, W, kernel_generator, convolution_mode=None, in_key=None, out_key=None,
                manager=None):
        return MinkowskiConvolutionTransposeFunction._forward(
            ctx, F, W, kernel_generator, convolution_mode, in_key, out_key, manager)


class MinkowskiLocalPoolingFunction(_ReferenceFunction):
    """``apply(input_features, pooling_mode, kernel_generator, in_key,
    out_key=None, coordinate_manager=None)``: max / average / sum pooling
    (ME.PoolingMode), onto the strided map by default."""

    transposed = False
    autocast_args = (0,)

    @classmethod
    def _forward(cls, ctx, input_features, pooling_mode, kernel_generator, in_key, out_key, mgr):
        where = cls.__name__
        x = _input(input_features, in_key, mgr, where)
        mode = _mk.PoolingMode.SUM if cls.transposed else reduction(pooling_mode)
        kg = kernel_generator
        region = _mk.pooling_region(kg.region, list(kg.kernel_stride), mgr.dimension)
        out_key = _out_key(mgr, out_key, lambda: transposed_output_key(x, kg, region)
                           if cls.transposed else mgr.stride(in_key, kg.kernel_stride), where)
        kmap = mgr.region_kernel_map(in_key, out_key, region, cls.transposed)
        return LocalPoolingFunction.forward(ctx, input_features, kmap, mode)

    @staticmethod
    def forward(ctx, input_features, pooling_mode, kernel_generator, in_key, out_key=None,
                coordinate_manager=None):
        return MinkowskiLocalPoolingFunction._forward(ctx, input_features, pooling_mode,
                                                      kernel_generator, in_key, out_key,
                                                      coordinate_manager)

    @staticmethod
    def backward(ctx, grad_out):
        return LocalPoolingFunction.backward(ctx, grad_out)[0], None, None, None, None, None


class MinkowskiLocalPoolingTransposeFunction(MinkowskiLocalPoolingFunction):
    """Unpooling's ``apply`` (arguments as MinkowskiLocalPoolingFunction's):
    it sums whatever pooling_mode says, as the reference's code does."""

    transposed = True

    @staticmethod
    def forward(ctx, input_features, pooling_mode, kernel_generator, in_key, out_key=None,
                coordinate_manager=None):
        return MinkowskiLocalPoolingTransposeFunction._forward(
            ctx, input_features, pooling_mode, kernel_generator, in_key, out_key,
            coordinate_manager)


class MinkowskiGlobalPoolingFunction(_ReferenceFunction):
    """``apply(input_features, pooling_mode, in_key, out_key=None,
    coordinate_manager=None)``: one row per batch item on the manager's
    origin map of in_key (out_key, when set, must be that map)."""

    autocast_args = (0,)

    @staticmethod
    def forward(ctx, input_features, pooling_mode, in_key, out_key=None,
                coordinate_manager=None):
        where, mgr = "MinkowskiGlobalPoolingFunction", coordinate_manager
        _input(input_features, in_key, mgr, where)
        groups = mgr.batch_groups(in_key)
        origin = mgr.origin_key(in_key, groups.items)
        if _out_key(mgr, out_key, lambda: origin, where) != origin:
            raise ValueError(f"{where}: expected the origin map {origin} of the input (or None, "
                             f"or an unset key) as out_key, got {out_key}")
        return GlobalPoolingFunction.forward(ctx, input_features, groups,
                                             reduction(pooling_mode))

    @staticmethod
    def backward(ctx, grad_out):
        return GlobalPoolingFunction.backward(ctx, grad_out)[0], None, None, None, None


class BroadcastMode(enum.IntEnum):
    """The reference's broadcast modes (its spelling, ADDITON included)."""

    ELEMENTWISE_ADDITON = 0
    ELEMENTWISE_MULTIPLICATION = 1


_BROADCAST = {BroadcastMode.ELEMENTWISE_ADDITON: _mk.BroadcastMode.ADD,
              BroadcastMode.ELEMENTWISE_MULTIPLICATION: _mk.BroadcastMode.MULTIPLY}


def _broadcast_mode(mode):
    if isinstance(mode, _mk.BroadcastMode):
        return mode
    try:
        return _BROADCAST[BroadcastMode(mode)]
    except ValueError:
        raise ValueError("expected a BroadcastMode (ELEMENTWISE_ADDITON or "
                         f"ELEMENTWISE_MULTIPLICATION), got {mode!r}") from None


class MinkowskiBroadcastFunction(_ReferenceFunction):
    """``apply(input_features, input_features_global, operation_type, in_key,
    glob_key, coords_manager)``: each row's batch item's global row added or
    multiplied in; differentiable in both feature tensors."""

    autocast_args = (0, 1)

    @staticmethod
    def forward(ctx, input_features, input_features_global, operation_type, in_key, glob_key,
                coords_manager):
        where, mgr = "MinkowskiBroadcastFunction", coords_manager
        _input(input_features, in_key, mgr, where)
        _input(input_features_global, glob_key, mgr, where)
        mode = _broadcast_mode(operation_type)
        groups = _mk.broadcast_groups(mgr, in_key, input_features.detach(), glob_key,
                                      input_features_global.detach())
        return BroadcastFunction.forward(ctx, input_features, input_features_global, groups, mode)

    @staticmethod
    def backward(ctx, grad_out):
        return (*BroadcastFunction.backward(ctx, grad_out)[:2], None, None, None, None)


class MinkowskiInterpolationFunction(_ReferenceFunction):
    """``apply(input_features, tfield, in_key, coordinate_manager=None)`` ->
    (features at the Q points of tfield (Q x (1+D) float, batch first),
    in_map, out_map, weights): pair p gives point out_map[p] the weight
    weights[p] of input row in_map[p] (multilinear over the corners present,
    renormalized where some are absent). Differentiable in the features (the
    backward, a scatter of the weighted rows, any number of times)."""

    @staticmethod
    def forward(ctx, input_features, tfield, in_key, coordinate_manager=None):
        x = _input(input_features, in_key, coordinate_manager, "MinkowskiInterpolationFunction")
        out, coo, weights = interpolate(x, tfield)
        in_map, out_map = coo.cols(), coo.rows()
        ctx.mark_non_differentiable(in_map, out_map, weights)
        ctx.maps, ctx.nrows = (in_map, out_map, weights), len(input_features)
        return out, in_map, out_map, weights

    @staticmethod
    def backward(ctx, grad_out, *_):
        in_map, out_map, weights = ctx.maps
        wide = widened(grad_out)
        rows = weights.to(wide.dtype)[:, None] * wide[out_map]
        grad = wide.new_zeros(ctx.nrows, grad_out.shape[1]).index_add(0, in_map, rows)
        return grad.to(grad_out.dtype), None, None, None


class MinkowskiPruningFunction(_ReferenceFunction):
    """``apply(in_feat, mask, in_key, out_key=None, coords_manager=None)``:
    the rows where mask (N, bool or uint8) is set. The output map is a new
    map of the kept coordinates (an unset out_key is set to it), or out_key
    when it holds exactly those coordinates in that order. Differentiable in
    the features (the backward, a scatter into the kept rows, any number of
    times)."""

    @staticmethod
    def forward(ctx, in_feat, mask, in_key, out_key=None, coords_manager=None):
        where, mgr = "MinkowskiPruningFunction", coords_manager
        _input(in_feat, in_key, mgr, where)
        keep = torch.as_tensor(mask).reshape(-1)
        if keep.dtype not in (torch.bool, torch.uint8) or keep.numel() != len(in_feat):
            raise ValueError(f"{where}: expected a bool or uint8 mask of {len(in_feat)} rows, got "
                             f"{keep.dtype} of shape {tuple(torch.as_tensor(mask).shape)}")
        keep = keep.bool().cpu()  # the map is built on the host
        if out_key is None or _is_unset(out_key):
            _check_unset_size(mgr, out_key, where)
            key, rows = _mk.prune_map(mgr, in_key, in_feat.detach(), keep.numpy())
            _out_key(mgr, out_key, lambda: key, where)
        else:
            rows = keep.nonzero().flatten()
            _checked_out_key(mgr, out_key, where)
            if not torch.equal(mgr.coordinates(out_key), mgr.coordinates(in_key)[rows]):
                raise ValueError(f"{where}: expected an out_key holding the kept coordinates in "
                                 f"order, got {out_key}")
        rows = rows.to(in_feat.device)
        ctx.rows, ctx.nrows = rows, len(in_feat)
        return in_feat[rows]

    @staticmethod
    def backward(ctx, grad_out):
        grad = grad_out.new_zeros(ctx.nrows, grad_out.shape[1]).index_copy(0, ctx.rows, grad_out)
        return grad, None, None, None, None


class MinkowskiInstanceNormFunction(_ReferenceFunction):
    """``apply(in_feat, in_coords_key, glob_coords_key=None,
    coords_manager=None, gpooling_mode=...)``: (x - mean) / sqrt(var + 1e-8)
    per batch item, the reference's eps and no affine (glob_coords_key and
    gpooling_mode name how its GPU computes the means; accepted, unused,
    but an unset glob_coords_key is set to the origin map of the means, as
    the reference's global pooling sets it)."""

    @staticmethod
    def forward(ctx, in_feat, in_coords_key, glob_coords_key=None, coords_manager=None,
                gpooling_mode=None):
        where, mgr = "MinkowskiInstanceNormFunction", coords_manager
        _input(in_feat, in_coords_key, mgr, where)
        if _is_unset(glob_coords_key):
            _out_key(mgr, glob_coords_key,
                     lambda: mgr.origin_key(in_coords_key, mgr.batch_groups(in_coords_key).items),
                     where)
        seg = _mk.batch_segments(coords_manager, in_coords_key, in_feat.detach())
        c = in_feat.shape[1]
        ones, zeros = in_feat.new_ones(c), in_feat.new_zeros(c)
        return InstanceNormFunction.forward(ctx, in_feat, ones, zeros, seg, 1e-8)

    @staticmethod
    def backward(ctx, grad_out):
        return InstanceNormFunction.backward(ctx, grad_out)[0], None, None, None, None


class MinkowskiUnionFunction(_ReferenceFunction):
    """``apply(in_coords_keys, out_coords_key, coordinate_manager,
    *in_feats)``: the union of the maps in_coords_keys (two or more, one
    tensor stride), features added where they overlap. out_coords_key is an
    unset CoordinateMapKey(D + 1), set here to the union's key (as the
    reference's manager sets it), or None. Differentiable in every input's
    features (the backward gathers each input's rows, any number of
    times)."""

    @staticmethod
    def forward(ctx, in_coords_keys, out_coords_key, coordinate_manager, *in_feats):
        where, mgr = "MinkowskiUnionFunction", coordinate_manager
        keys = list(in_coords_keys)
        if len(in_feats) < 2 or len(in_feats) != len(keys):
            raise ValueError(f"{where}: expected at least 2 feature tensors, one per key, got "
                             f"{len(in_feats)} for {len(keys)} keys")
        for f, k in zip(in_feats, keys):
            _input(f, k, mgr, where)
            if f.shape[1] != in_feats[0].shape[1] or f.dtype != in_feats[0].dtype:
                raise ValueError(f"{where}: expected features of {in_feats[0].shape[1]} "
                                 f"{in_feats[0].dtype} channels, got {f.shape[1]} {f.dtype}")
        if out_coords_key is not None and not _is_unset(out_coords_key):
            raise ValueError(f"{where}: expected an unset CoordinateMapKey(D + 1) (or None) to "
                             f"receive the union's key, got {out_coords_key}")
        _check_unset_size(mgr, out_coords_key, where)
        key, size, rows = _mk.union_map(mgr, keys, [f.detach() for f in in_feats])
        _out_key(mgr, out_coords_key, lambda: key, where)
        rows = [r.to(in_feats[0].device) for r in rows]
        ctx.rows = rows
        out = widened(in_feats[0]).new_zeros(size, in_feats[0].shape[1])
        for f, r in zip(in_feats, rows):
            out = out.index_add(0, r, widened(f))
        return out.to(in_feats[0].dtype)

    @staticmethod
    def backward(ctx, grad_out):
        return (None, None, None, *(grad_out[r] for r in ctx.rows))
