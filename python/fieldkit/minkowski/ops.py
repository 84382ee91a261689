"""Pruning, union and interpolation: C++ decides the coordinates, the features
follow through torch indexing (pruning, union) or fieldkit's spmm pair
(interpolation)."""
import torch

from .._core import minkowski as _mk
from .functional import SpmmFunction, run, widened
from .map_rows import _features_on
from .sparse_tensor import SparseTensor, TensorField, layer_input


class MinkowskiPruning(torch.nn.Module):
    """Keeps the rows where ``mask`` (bool, N or N x 1) is True, on a new map;
    an all-False mask gives an empty tensor."""

    def forward(self, input, mask):
        mask = torch.as_tensor(mask).cpu()  # the map is built on the host
        if mask.dtype == torch.uint8:
            mask = mask.bool()
        mgr = input.coordinate_manager
        key, rows = _mk.prune_map(mgr, input.coordinate_map_key, input.F.detach(),
                                  mask.numpy().astype(bool) if mask.dtype == torch.bool else mask)
        return SparseTensor(input.F[rows.to(input.F.device)], coordinate_map_key=key,
                            coordinate_manager=mgr)


class MinkowskiUnion(torch.nn.Module):
    """The union of the inputs' coordinates (one manager); features add up
    where inputs overlap."""

    def forward(self, *inputs):
        if len(inputs) < 2:
            raise ValueError(f"MinkowskiUnion: expected at least 2 inputs, got {len(inputs)}")
        for x in inputs:
            layer_input(x, "MinkowskiUnion")
        mgr, first = inputs[0].coordinate_manager, inputs[0].F
        for x in inputs[1:]:
            if x.coordinate_manager is not mgr:
                raise ValueError("MinkowskiUnion: expected inputs of one coordinate manager")
            if x.F.shape[1] != first.shape[1] or x.F.dtype != first.dtype:
                raise ValueError(f"MinkowskiUnion: expected inputs of {first.shape[1]} "
                                 f"{first.dtype} channels, got {x.F.shape[1]} {x.F.dtype}")
        key, size, rows = _mk.union_map(mgr, [x.coordinate_map_key for x in inputs],
                                        [x.F.detach() for x in inputs])
        out = widened(inputs[0].F).new_zeros(size, inputs[0].F.shape[1])
        for x, r in zip(inputs, rows):
            out = out.index_add(0, r.to(out.device), widened(x.F))
        return SparseTensor(out.to(first.dtype), coordinate_map_key=key, coordinate_manager=mgr)


def interpolate(input, points, mode=_mk.InterpolationMode.MULTILINEAR):
    """(features at the points, coordinate list, weights): multilinear over the
    2^D corners present (renormalized where some are absent)."""
    points = torch.as_tensor(points)
    # The points and weights are built on the host; the spmm runs where F is.
    coo, weights = _mk.interpolation_weights(input.coordinate_manager, input.coordinate_map_key,
                                             input.F.detach(), widened(points.detach()).cpu(), mode)
    # The weights (f64 from C++) in the finer of the points' and the features'
    # dtypes, at least f32: f64 features at f32 points keep f64-accurate
    # weights, and half points and features do not round them to half first.
    wdtype = torch.promote_types(torch.promote_types(points.dtype, input.F.dtype), torch.float32)
    out = run(SpmmFunction, weights.to(input.F.device, wdtype), input.F, coo)
    return out, coo, weights.to(input.F.dtype)  # the reference's weights: the features' dtype


class MinkowskiInterpolation(torch.nn.Module):
    """forward(input, tfield): the input's features at the points of tfield
    (Q x (1+D) float, batch first). Returns out, then (in_map, out_map) with
    return_kernel_map (int64 tensors: pair p weighs input row in_map[p] into
    point out_map[p]), then the weights of the pairs with return_weights; all
    on the features' device."""

    def __init__(self, return_kernel_map=False, return_weights=False):
        super().__init__()
        self.return_kernel_map, self.return_weights = return_kernel_map, return_weights

    def forward(self, input, tfield):
        points = tfield.C if isinstance(tfield, TensorField) else tfield
        out, coo, weights = interpolate(input, points)
        if not (self.return_kernel_map or self.return_weights):
            return out
        result = [out]
        device = input.F.device
        if self.return_kernel_map:
            # The list's rows are the points (out_map), its columns the rows of input.
            result.append((coo.cols().to(device), coo.rows().to(device)))
        if self.return_weights:
            result.append(weights.to(device))
        return tuple(result)


def _same_map(tensors, where):
    """The inputs of cat / sum / mean / var (given one by one, or as one list
    or tuple): SparseTensors of one manager (_features checks their maps),
    or TensorFields on the same points of one manager."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise ValueError(f"{where}: expected at least one SparseTensor or TensorField, got none")
    first = tensors[0]
    if not isinstance(first, (SparseTensor, TensorField)):
        raise TypeError(f"{where}: expected SparseTensors or TensorFields, got "
                        f"{type(first).__name__}")
    kind = TensorField if isinstance(first, TensorField) else SparseTensor
    for x in tensors[1:]:
        if not isinstance(x, kind):
            raise TypeError(f"{where}: expected all SparseTensors or all TensorFields, got a "
                            f"{type(x).__name__} with a {type(first).__name__}")
        if kind is TensorField:
            if x.coordinate_manager is not first.coordinate_manager:
                raise ValueError(f"{where}: expected TensorFields of one coordinate manager, "
                                 "got fields of two")
            if not (x.C is first.C or (x.C.shape == first.C.shape and torch.equal(x.C, first.C))):
                raise ValueError(f"{where}: expected TensorFields on the same points, got "
                                 f"{len(first.C)} and {len(x.C)} points that differ")
        elif x.coordinate_manager is not first.coordinate_manager:
            raise ValueError(f"{where}: expected tensors on the same coordinate map of one "
                             f"manager, got {first.coordinate_map_key} and "
                             f"{x.coordinate_map_key} of another manager")
    return tensors


def _features(tensors, where):
    """The features of _same_map's tensors, each on the first's rows."""
    tensors = _same_map(tensors, where)
    if isinstance(tensors[0], TensorField):
        return tensors[0], [x.F for x in tensors]
    return tensors[0], [tensors[0].F] + [_features_on(tensors[0], x, where) for x in tensors[1:]]


def _on(first, features):
    """features on the coordinates of `first` (its map, or its points)."""
    if isinstance(first, TensorField):
        return first._with(features)
    return SparseTensor(features, coordinate_map_key=first.coordinate_map_key,
                        coordinate_manager=first.coordinate_manager)


def cat(*tensors):
    """Channel-wise concatenation of tensors on one map of one manager (or
    TensorFields on the same points); ``cat(a, b)`` or ``cat([a, b])``."""
    first, fs = _features(tensors, "cat")
    return _on(first, torch.cat(fs, 1))


def sum(*tensors):  # noqa: A001 (the reference's name)
    """Elementwise sum of tensors on one map (or fields on the same points)."""
    first, fs = _features(tensors, "sum")
    return _on(first, torch.stack(fs).sum(0))


def mean(*tensors):
    """Elementwise mean of tensors on one map (or fields on the same points)."""
    first, fs = _features(tensors, "mean")
    return _on(first, torch.stack(fs).mean(0))


def var(*tensors):
    """Elementwise population variance (divided by the count) of tensors on
    one map (or fields on the same points), as the reference's var."""
    first, fs = _features(tensors, "var")
    return _on(first, torch.stack(fs).var(0, unbiased=False))


class _Stack(torch.nn.Sequential):
    """Every child applied to the same input, the outputs combined."""

    def forward(self, x):
        return self.combine(*[m(x) for m in self])


class MinkowskiStackCat(_Stack):
    combine = staticmethod(lambda *xs: cat(*xs))


class MinkowskiStackSum(_Stack):
    combine = staticmethod(lambda *xs: sum(*xs))


class MinkowskiStackMean(_Stack):
    combine = staticmethod(lambda *xs: mean(*xs))


class MinkowskiStackVar(_Stack):
    combine = staticmethod(lambda *xs: var(*xs))


def _channels_second(dense, format):
    """`dense` as B x C x s_1..s_D from the layout `format` names ("BCXX",
    "BXXC", ...: one B, one C and an X per spatial axis; None is B, C, X..)."""
    if format is None:
        return dense
    f = format.upper()
    if len(f) != dense.dim() or f.count("B") != 1 or f.count("C") != 1 or \
            f.count("X") != dense.dim() - 2:
        raise ValueError(f"to_sparse: expected a format of one B, one C and {dense.dim() - 2} "
                         f"X for a {dense.dim()}-D tensor, got {format!r}")
    spatial = [i for i, a in enumerate(f) if a == "X"]
    return dense.permute(f.index("B"), f.index("C"), *spatial)


def _spatial_dense(where, dense):
    """A dense tensor with a batch, a channel and at least one spatial axis."""
    if not isinstance(dense, torch.Tensor):
        raise TypeError(f"{where}: expected a torch.Tensor, got {type(dense).__name__}")
    if dense.dim() < 3:
        raise ValueError(f"{where}: expected a dense B x C x s_1..s_D tensor (at least one spatial "
                         f"axis), got shape {tuple(dense.shape)}")


def to_sparse(dense, format=None, coordinates=None, device=None, coordinate_manager=None,
              remove_zeros=True):
    """A dense tensor (B x C x s_1..s_D, or the layout `format` names) as a
    SparseTensor: the cells with a nonzero channel (every cell without
    remove_zeros), row-major; the features are indexed from `dense`
    (differentiable). `coordinates` is unused (as in the reference); `device`
    moves the result's features."""
    _spatial_dense("to_sparse", dense)
    dense = _channels_second(dense, format)
    spatial = dense.shape[2:]
    keep = dense.detach().abs().sum(1) != 0 if remove_zeros else \
        torch.ones((dense.shape[0], *spatial), dtype=torch.bool, device=dense.device)
    idx = keep.nonzero()
    coords = idx.to(torch.int32)
    features = dense.movedim(1, -1)[tuple(idx.t())]
    return SparseTensor(features, coords, coordinate_manager=coordinate_manager, device=device)


def dense_coordinates(shape):
    """The coordinates of every cell of a dense B x C x s_1..s_D tensor of
    this shape, row-major in (b, x_1, .., x_D): (B s_1 .. s_D) x (1+D) int32."""
    shape = list(shape)
    axes = [torch.arange(n, dtype=torch.int32) for n in [shape[0], *shape[2:]]]
    return torch.stack(torch.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(axes))


def to_sparse_all(dense, coordinates=None):
    """Every cell of a dense B x C x s_1..s_D tensor as a row, zeros included.
    With ``coordinates`` (one row per cell, in dense_coordinates' order, as
    the reference pairs them) the rows take those coordinates instead."""
    _spatial_dense("to_sparse_all", dense)
    if coordinates is None:
        return to_sparse(dense, remove_zeros=False)
    features = dense.movedim(1, -1).reshape(-1, dense.shape[1])
    coordinates = torch.as_tensor(coordinates)
    if coordinates.dim() != 2 or coordinates.shape[0] != features.shape[0]:
        raise ValueError(f"to_sparse_all: expected coordinates of {features.shape[0]} rows (one "
                         f"per cell), got shape {tuple(coordinates.shape)}")
    # the coordinates go where the features are (the reference's device=)
    return SparseTensor(features, coordinates, device=features.device)


class MinkowskiToSparseTensor(torch.nn.Module):
    """A TensorField's sparse(), or a dense tensor (B x C x s_1..s_D) as a
    SparseTensor the way the reference's code does it (not as its
    documentation says): zeros are removed only when remove_zeros is set AND
    coordinates are given (which are then unused); otherwise every cell is
    kept, on the given coordinates if any (see to_sparse_all)."""

    def __init__(self, remove_zeros=True, coordinates=None):
        super().__init__()
        self.remove_zeros, self.coordinates = remove_zeros, coordinates

    def forward(self, x):
        if isinstance(x, TensorField):
            return x.sparse()
        if not isinstance(x, torch.Tensor):
            raise ValueError("MinkowskiToSparseTensor: expected a TensorField or a dense "
                             f"torch.Tensor, got {type(x).__name__}")
        if self.remove_zeros and self.coordinates is not None:
            return to_sparse(x)
        return to_sparse_all(x, self.coordinates)


class MinkowskiToDenseTensor(torch.nn.Module):
    def __init__(self, shape=None):
        super().__init__()
        self.shape = shape

    def forward(self, x):
        return x.dense(shape=self.shape)[0]


class MinkowskiToFeature(torch.nn.Module):
    def forward(self, x):
        return x.F
