"""Coordinate managers, map keys and building sparse inputs (quantization,
batching) on fieldkit's C++ coordinate machinery."""
import enum
import threading
import warnings

import numpy as np
import torch

from .._core import minkowski as _mk
from . import backend_choices as choices
from .backend_choices import set_coordinate_map_type  # noqa: F401  (the reference's place)
from .functional import lend_streams, resolved, widened

CoordinateMapKey = _mk.MapKey


class SparseTensorQuantizationMode(enum.IntEnum):
    """How the features of duplicate coordinates are reduced (values as in
    MinkowskiEngine). RANDOM_SUBSAMPLE keeps one row per voxel: in a
    SparseTensor or TensorField.sparse() the first occurrence (the reference's
    CPU choice, and the row its ``unique_index`` names), in sparse_quantize,
    asked for by keyword, a draw from a fixed seed (its returned index names
    the drawn row). FIRST_OCCURRENCE keeps the first everywhere (sparse_quantize's
    default, as the reference's). SPLAT_LINEAR_INTERPOLATION
    is TensorField's splat() (TensorField.sparse() runs it); a SparseTensor or
    sparse_quantize refuses it."""

    RANDOM_SUBSAMPLE = 0
    UNWEIGHTED_AVERAGE = 1
    UNWEIGHTED_SUM = 2
    NO_QUANTIZATION = 3
    MAX_POOL = 4
    SPLAT_LINEAR_INTERPOLATION = 5
    FIRST_OCCURRENCE = 6


_CORE_MODE = {
    SparseTensorQuantizationMode.RANDOM_SUBSAMPLE: _mk.QuantizationMode.RANDOM_SUBSAMPLE,
    SparseTensorQuantizationMode.UNWEIGHTED_AVERAGE: _mk.QuantizationMode.UNWEIGHTED_AVERAGE,
    SparseTensorQuantizationMode.UNWEIGHTED_SUM: _mk.QuantizationMode.UNWEIGHTED_SUM,
    SparseTensorQuantizationMode.MAX_POOL: _mk.QuantizationMode.MAX_POOL,
    SparseTensorQuantizationMode.FIRST_OCCURRENCE: _mk.QuantizationMode.FIRST_OCCURRENCE,
}


def core_mode(mode):
    mode = SparseTensorQuantizationMode(mode)
    if mode not in _CORE_MODE:
        raise ValueError("sparse_quantize: expected a quantization mode among "
                         f"{', '.join(m.name for m in _CORE_MODE)}, got {mode.name}")
    return _CORE_MODE[mode]


class MinkowskiAlgorithm(enum.IntEnum):
    """The reference's GPU kernel-map strategy (its values); SparseTensor,
    TensorField and CoordinateManager accept it (``minkowski_algorithm``) and
    ignore it: the CPU engine has one strategy."""

    DEFAULT = 0
    MEMORY_EFFICIENT = 1
    SPEED_OPTIMIZED = 2


def _rows_by_batch(batch):
    """(the batch indices present, ascending; [the rows of each, ascending]):
    one stable sort, not a pass over every row per batch item."""
    items, counts = torch.unique(batch, return_counts=True)
    order = torch.sort(batch, stable=True).indices
    return items, list(torch.split(order, counts.tolist()))


class CoordinateManager(_mk.CoordinateManager):
    """The maps of one sparse-tensor graph (C++ CoordinateManager). ``D`` is the
    spatial dimension; num_threads is accepted and ignored (fk's thread pool is
    process-wide). The map type, allocator and algorithm are checked and
    recorded (None: the process-wide choices), and select nothing: see
    backend_choices.py."""

    def __init__(self, D, num_threads=-1, coordinate_map_type=None, allocator_type=None,
                 minkowski_algorithm=None):
        super().__init__(int(D))
        self.coordinate_map_type = choices.coordinate_map_type(coordinate_map_type)
        self.allocator_type = choices.allocator_type(allocator_type)
        self.minkowski_algorithm = _member(MinkowskiAlgorithm, minkowski_algorithm or 0,
                                           "minkowski_algorithm")
        self._reset_python_state()

    def _reset_python_state(self):
        # What the C++ manager does not hold: the maps inserted from
        # coordinates (origin()'s batch items come from them), the reference's
        # coordinate fields (float points, insert_field) and the field-to-sparse
        # maps made from them, each (unique, inverse) or (sparse rows, field rows)
        # as the call that made it returned it.
        self._inserted = {}  # keys, in insertion order, each once
        self._fields = {}
        self._field_to_sparse = {}
        self._unique_keys = 0
        # {(map, its "@sorted" twin) and back: the other's row of each row}
        # (determinism.sorted_coordinates' permutation, sparse_tensor's joins).
        self._twin_rows = {}
        # Held while a key is chosen and its entry made (insert_field's free
        # key, sorted_coordinates' one twin per map): Python threads sharing
        # the manager would otherwise both find a key free.
        self._keys_lock = threading.RLock()

    def clear(self):
        super().clear()
        self._reset_python_state()

    @property
    def D(self):
        return self.dimension

    def get_coordinates(self, key_or_tensor_stride):
        """A map's N x (1+D) int32 coordinates, by key or, as the reference
        allows, by tensor stride (see _map_key)."""
        return self.coordinates(self._map_key(key_or_tensor_stride, "get_coordinates"))

    def _map_key(self, key_or_tensor_stride, where):
        """A key as it is; a tensor stride names the map at that stride with
        the tag '' or the tag of a map inserted from coordinates (strided maps
        keep their input's tag), the reference's lookup by tensor stride."""
        if isinstance(key_or_tensor_stride, _mk.MapKey):
            return key_or_tensor_stride
        ts = self._tensor_stride(key_or_tensor_stride, where)
        for tag in dict.fromkeys(["", *(k.tag for k in self._inserted)]):
            if self.has(_mk.MapKey(ts, tag)):
                return _mk.MapKey(ts, tag)
        raise ValueError(f"CoordinateManager.{where}: expected a CoordinateMapKey or the tensor "
                         f"stride of a map of this manager, got tensor stride {ts}, which none has")

    def _tensor_stride(self, tensor_stride, where):
        """An int, or 1 or D ints (list, tuple, array, tensor), as D positive ints."""
        try:
            if not isinstance(tensor_stride, (int, list, tuple)):
                tensor_stride = torch.as_tensor(tensor_stride).flatten()
            ts = _axes(tensor_stride)
        except (TypeError, ValueError, RuntimeError):
            ts = []
        ts = ts * self.dimension if len(ts) == 1 else ts
        if len(ts) != self.dimension or min(ts) < 1:
            raise ValueError(f"CoordinateManager.{where}: expected a tensor stride of 1 or "
                             f"{self.dimension} positive ints, got {tensor_stride!r}")
        return ts

    def get_unique_coordinate_map_key(self, tensor_stride):
        """A key at `tensor_stride` that names no map or field of this manager
        yet (the reference draws a random tag; this one counts: "unique-<n>")."""
        ts = self._tensor_stride(tensor_stride, "get_unique_coordinate_map_key")
        while True:
            self._unique_keys += 1
            key = _mk.MapKey(ts, f"unique-{self._unique_keys}")
            if not self.has(key) and key not in self._fields:
                return key

    def origin(self):
        """The key of the origin map: one row (b, 0, ..., 0) per batch index b
        of the maps inserted from coordinates, ascending. The reference's
        origin map has tensor stride 0, which this engine's maps cannot have
        (strides are positive): this one is "<tag>@origin" at the first
        inserted map's tensor stride, the map global pooling of that map
        writes to."""
        if not self._inserted:
            raise ValueError("CoordinateManager.origin: expected a map inserted from coordinates "
                             "(insert_and_map, a SparseTensor), got none")
        batch = torch.cat([self.coordinates(k)[:, 0] for k in self._inserted])
        return self.origin_key(next(iter(self._inserted)), torch.unique(batch).tolist())

    def origin_field(self):
        """The origin map of the coordinate fields' batch indices (rounded): the
        "field@origin" map global pooling of a TensorField writes to (tensor
        stride 1; the reference's has stride 0)."""
        if not self._fields:
            raise ValueError("CoordinateManager.origin_field: expected a coordinate field "
                             "(insert_field, a TensorField's coordinate_key), got none")
        batch = torch.cat([torch.round(c[:, 0].double()).cpu() for c in self._fields.values()])
        items = torch.unique(batch).to(torch.int64).tolist()
        return self.origin_key(_mk.MapKey([1] * self.dimension, "field"), items)

    def number_of_unique_batch_indices(self):
        """The rows of origin() (of origin_field() when no map was inserted
        from coordinates), as the reference counts them."""
        if not self._inserted and not self._fields:
            raise ValueError("CoordinateManager.number_of_unique_batch_indices: expected a map "
                             "inserted from coordinates or a coordinate field, got neither")
        return self.size(self.origin() if self._inserted else self.origin_field())

    def stride(self, key, stride, string_id=""):
        """The map at tensor stride key's times `stride` (an int for every
        axis, or one per axis), made here or reused, as the reference's
        stride(key, stride, string_id). The new key keeps key's tag: another
        string_id is refused rather than ignored."""
        if string_id:
            raise ValueError("CoordinateManager.stride: expected string_id '' (the strided map "
                             f"keeps the input map's tag), got {string_id!r}")
        return super().stride(key, _axes(stride))

    def origin_map(self, key):
        """(batch indices, [the rows of each]): the map's rows grouped by their
        batch index, ascending, as the reference's origin_map."""
        return _rows_by_batch(self.coordinates(self._map_key(key, "origin_map"))[:, 0].long())

    def stride_map(self, in_key, stride_key):
        """(input rows, strided rows): every row of in_key's map (0 .. N-1) and
        the row of its parent floor(c / ts) * ts on stride_key's map, whose
        tensor stride ts must be a multiple of in_key's."""
        from .map_rows import _rows_in_map

        where = "CoordinateManager.stride_map"
        for key in (in_key, stride_key):
            if not isinstance(key, _mk.MapKey) or not self.has(key):
                raise ValueError(f"{where}: expected the key of a map of this manager, "
                                 f"got {key!r}")
        ts, fine = list(stride_key.tensor_stride), list(in_key.tensor_stride)
        if any(t % f for t, f in zip(ts, fine)):
            raise ValueError(f"{where}: expected a strided map whose tensor stride is a "
                             f"multiple of the input's {fine}, got {ts}")
        c = self.coordinates(in_key)
        parents = c.clone()
        parents[:, 1:] = torch.div(c[:, 1:], torch.tensor(ts, dtype=c.dtype),
                                   rounding_mode="floor") * torch.tensor(ts, dtype=c.dtype)
        rows = _rows_in_map(self.coordinates(stride_key), parents)
        if len(rows) and int(rows.min()) < 0:
            raise ValueError(f"{where}: expected a strided map holding every input row's parent, "
                             f"got {int((rows < 0).sum())} of {len(rows)} parents off it")
        return torch.arange(len(rows)), rows

    def union_map(self, in_keys, out_key):
        """The union of the maps in_keys (of one tensor stride), as the
        reference: out_key, an unset CoordinateMapKey(coordinate_size), is set
        to the union's key, and each input gets a 2 x n int64 tensor (row 0 its
        rows 0 .. n-1, row 1 their rows in the union; the first map's rows come
        first, in order)."""
        where = "CoordinateManager.union_map"
        in_keys = list(in_keys)
        if not in_keys:
            raise ValueError(f"{where}: expected at least one map key, got none")
        for key in in_keys:
            if not isinstance(key, _mk.MapKey) or not self.has(key):
                raise ValueError(f"{where}: expected the keys of maps of this manager, "
                                 f"got {key!r}")
        if not isinstance(out_key, _mk.MapKey) or out_key.is_key_set():
            raise ValueError(f"{where}: expected an unset CoordinateMapKey(coordinate_size) to "
                             f"receive the union's key, got {out_key!r}")
        if out_key.get_coordinate_size() != self.dimension + 1:
            raise ValueError(f"{where}: expected out_key of coordinate size "
                             f"{self.dimension + 1}, got {out_key.get_coordinate_size()}")
        # The C++ union takes sparse tensors: no channel is read.
        empty = [torch.zeros(self.size(k), 0) for k in in_keys]
        key, _, rows = _mk.union_map(self, in_keys, empty)
        out_key.tensor_stride, out_key.tag = key.tensor_stride, key.tag
        return [torch.stack([torch.arange(len(r)), r.long().cpu()]) for r in rows]

    def interpolation_map_weight(self, key, samples):
        """(map rows, sample rows, weights) of the multilinear interpolation of
        key's map at the float samples (Q x (1+D), batch first), as the
        reference: sample out[p] takes weights[p] of row in[p]; the corners
        absent from the map are left out and the others renormalized. All
        three on the samples' device."""
        where = "CoordinateManager.interpolation_map_weight"
        key = self._map_key(key, where.split(".")[1])
        samples = torch.as_tensor(samples)
        if samples.dim() != 2 or samples.shape[1] != self.dimension + 1 or \
                not samples.is_floating_point():
            raise ValueError(f"{where}: expected float samples of shape Q x {self.dimension + 1}, "
                             f"got {samples.dtype} {tuple(samples.shape)}")
        f = torch.zeros(self.size(key), 0, dtype=samples.dtype)
        coo, weights = _mk.interpolation_weights(self, key, f, resolved(samples.detach()).cpu(),
                                                 _mk.InterpolationMode.MULTILINEAR)
        at = samples.device
        return (coo.cols().long().to(at), coo.rows().long().to(at),
                weights.to(device=at, dtype=samples.dtype))

    def origin_field_map(self, key):
        """(batch indices, [the points of each]): a coordinate field's points
        grouped by their (rounded) batch index, ascending, as origin_map does
        for a map."""
        field = self._field(key, "origin_field_map")
        return _rows_by_batch(torch.round(field[:, 0].double()).long().cpu())

    def kernel_map(self, in_key, out_key, stride=1, kernel_size=3, dilation=1,
                   region_type=_mk.RegionType.HYPER_CUBE, region_offset=None, is_transpose=False,
                   is_pool=False):
        """The reference's kernel map between two maps of this manager: {kernel
        index: int32 tensor 2 x n (row 0 input rows, row 1 output rows)}, the
        offsets with no pair left out. The keys fix the strides; with is_pool
        and kernel_size equal to stride the map is the pooling layers' (each
        input under its floor-strided parent, every pair under index 0, as the
        reference's stride map); is_transpose maps a coarse input onto a finer
        output."""
        from .kernel import KernelGenerator

        gen = KernelGenerator(kernel_size, stride, dilation, region_type=region_type,
                              region_offsets=region_offset, dimension=self.dimension)
        region = gen.region
        if is_pool:
            region = _mk.pooling_region(region, list(gen.kernel_stride), self.dimension)
        kmap = self.region_kernel_map(self._map_key(in_key, "kernel_map"),
                                      self._map_key(out_key, "kernel_map"), region, is_transpose)
        pairs = {k: kmap.offset_pairs(k) for k in range(kmap.volume) if kmap.count(k)}
        d = self.dimension
        stride_map = is_pool and gen.region_type != _mk.RegionType.CUSTOM and \
            list(gen.kernel_size) * (d // len(gen.kernel_size)) == \
            list(gen.kernel_stride) * (d // len(gen.kernel_stride))
        if stride_map and pairs:
            joined = torch.cat(list(pairs.values()), 1)
            return {0: joined[:, torch.sort(joined[0].long(), stable=True).indices]}
        return pairs

    get_kernel_map = kernel_map  # the reference's other name

    def insert(self, coordinates, tensor_stride=(1,), tag=""):
        """The C++ insert, on torch's current stream for CUDA coordinates (fk
        reads them on its stream: see functional.lend_streams)."""
        lend_streams(coordinates)
        inserted = super().insert(coordinates, tensor_stride, tag)
        self._inserted[inserted[0]] = None
        return inserted

    def insert_and_map(self, coordinates, tensor_stride=1, string_id=""):
        key, unique, inverse = self.insert(_int_coordinates(coordinates), _axes(tensor_stride),
                                           string_id)
        return key, (unique, inverse)

    # -- coordinate fields (the reference's float point sets) ------------------
    def insert_field(self, coordinates, tensor_stride, string_id=""):
        """Registers N x (1+D) real points (batch index first) as a coordinate
        field and returns its key; integer points become float32 (float64
        past 2^24, where float32 would round them). Fields have
        their own keys, apart from the maps' (as in the reference)."""
        where = "CoordinateManager.insert_field"
        c = torch.as_tensor(coordinates).detach()
        if c.dim() != 2 or c.shape[1] != self.dimension + 1:
            raise ValueError(f"{where}: expected N x {self.dimension + 1} coordinates (batch "
                             f"index first), got shape {tuple(c.shape)}")
        ts = self._tensor_stride(tensor_stride, "insert_field")
        with self._keys_lock:
            key, n = _mk.MapKey(ts, string_id), 0
            while key in self._fields:
                n += 1
                key = _mk.MapKey(ts, f"{string_id}~{n}")
            self._fields[key] = exact_float(c)
        return key

    def get_coordinate_field(self, field_map_key):
        return self._field(field_map_key, "get_coordinate_field")

    def _field(self, key, where):
        if not isinstance(key, _mk.MapKey) or key not in self._fields:
            raise ValueError(f"CoordinateManager.{where}: expected the key of a coordinate field "
                             f"of this manager (insert_field), got {key!r}")
        return self._fields[key]

    def field_to_sparse_insert_and_map(self, field_map_key, sparse_tensor_stride,
                                       sparse_tensor_string_id=""):
        """A new map of the field's points quantized to `sparse_tensor_stride`
        (floor(x / ts) * ts, batch index rounded): (key, (unique_map,
        inverse_map)) as insert_and_map gives, also kept for
        get_field_to_sparse_map."""
        points = self._field(field_map_key, "field_to_sparse_insert_and_map")
        ts = self._tensor_stride(sparse_tensor_stride, "field_to_sparse_insert_and_map")
        key, unique, inverse = self.insert(quantize_points(points, ts), ts,
                                           sparse_tensor_string_id)
        self._field_to_sparse[(field_map_key, key)] = (unique, inverse)
        return key, (unique, inverse)

    def field_to_sparse_map(self, field_map_key, sparse_map_key):
        """(sparse rows, field rows): for each field point whose voxel at the
        sparse map's tensor stride is on that map, in field order, the map row
        and the point's row; points off the map are left out (as in the
        reference). Kept for get_field_to_sparse_map unless a map of this pair
        already is."""
        from .map_rows import _rows_in_map

        points = self._field(field_map_key, "field_to_sparse_map")
        if not isinstance(sparse_map_key, _mk.MapKey) or not self.has(sparse_map_key):
            raise ValueError("CoordinateManager.field_to_sparse_map: expected the key of a map "
                             f"of this manager, got {sparse_map_key!r}")
        voxels = quantize_points(points, sparse_map_key.tensor_stride)
        rows = _rows_in_map(self.coordinates(sparse_map_key), voxels)
        on_map = rows >= 0
        pair = (rows[on_map], on_map.nonzero().flatten())
        self._field_to_sparse.setdefault((field_map_key, sparse_map_key), pair)
        return pair

    def get_field_to_sparse_map(self, field_map_key, sparse_map_key):
        """The pair field_to_sparse_insert_and_map or field_to_sparse_map kept
        for these keys."""
        if (field_map_key, sparse_map_key) not in self._field_to_sparse:
            raise ValueError("CoordinateManager.get_field_to_sparse_map: expected a field and a "
                             "map joined by field_to_sparse_insert_and_map or field_to_sparse_map, "
                             f"got {field_map_key!r} and {sparse_map_key!r}")
        return self._field_to_sparse[(field_map_key, sparse_map_key)]

    def exists_field_to_sparse(self, field_map_key, sparse_map_key):
        return (field_map_key, sparse_map_key) in self._field_to_sparse

    def field_to_sparse_keys(self, field_map_key):
        """The keys of the maps a field-to-sparse map of this field is kept for."""
        return [s for f, s in self._field_to_sparse if f == field_map_key]


_member = choices._member


class CoordsManager:
    """The v0.4 manager's name, gone from the reference too: constructing it
    raises, pointing at CoordinateManager (the reference raises the same
    DeprecationWarning)."""

    def __init__(self, *args, **kwargs):
        raise DeprecationWarning("CoordsManager was removed (MinkowskiEngine v0.5); use "
                                 "CoordinateManager(D=...)")


def _whole(x):
    """x as an int; a fraction (2.5, 1.9) is a ValueError, not truncated."""
    i = int(x)
    if i != x:
        raise ValueError(f"expected whole numbers (kernel sizes, strides, dilations, "
                         f"offsets), got {x!r}")
    return i


def _axes(v):
    """An int or a sequence of ints (a list, tuple, numpy array or tensor) as
    a list (one value means every axis)."""
    if isinstance(v, (torch.Tensor, np.ndarray)):
        v = v.tolist()
    if isinstance(v, (list, tuple)):
        return [_whole(x) for x in v]
    return [_whole(v)]


def convert_to_int_list(arg, dimension):
    """The reference's helper: an int (every axis alike) or D values as a list
    of D ints."""
    values = _axes(arg)
    if len(values) == 1 and not isinstance(arg, (list, tuple, torch.Tensor, np.ndarray)):
        values = values * dimension
    if len(values) != dimension:
        raise ValueError(f"expected an int or {dimension} values, got {arg!r}")
    return values


def convert_to_int_tensor(arg, dimension):
    """convert_to_int_list's values as a D int32 tensor (torch.IntTensor),
    the reference's other helper."""
    return torch.IntTensor(convert_to_int_list(arg, dimension))


_INT32 = torch.iinfo(torch.int32)


def _int_coordinates(c, warn=True):
    """c as int32 coordinates. Real ones are floored, with a warning (as the
    reference gives; points are usually meant to be quantized first) unless
    the caller quantized them itself (`warn=False`); values
    int32 cannot hold (or NaN, infinity) are a ValueError rather than a silent
    wrap-around to other coordinates."""
    c = torch.as_tensor(c)
    if c.dtype == torch.int32:
        return c.contiguous()
    if c.dtype == torch.bool or c.is_complex():
        raise ValueError(f"expected integer or real coordinates, got {c.dtype}")
    if c.is_floating_point():
        if not bool(torch.isfinite(c).all()):
            raise ValueError("expected finite coordinates, got a NaN or an infinity")
        if warn:
            warnings.warn(f"coordinates of dtype {c.dtype} are floored to int32 (quantize points "
                          "first: sparse_quantize, or a TensorField)", stacklevel=3)
        c = torch.floor(widened(c))  # f16 exactly in f32: torch < 2 has no CPU half floor
    # In f64 (or int64): f32 rounds int32's largest value up to 2^31, and an
    # int16 tensor wraps int32's bounds to -1 and 0 (every value was refused).
    exact = c.double() if c.is_floating_point() else c.long()
    if c.numel() and (exact.min() < _INT32.min or exact.max() > _INT32.max):
        raise ValueError(f"expected coordinates within int32, got values in "
                         f"[{int(exact.min())}, {int(exact.max())}]")
    return c.to(torch.int32).contiguous()


def positive_stride(tensor_stride, where):
    """tensor_stride as a list of ints, each >= 1 (a 0 divided the points
    into NaNs, reported as non-finite coordinates)."""
    ts = _axes(tensor_stride)
    if not ts or min(ts) < 1:
        raise ValueError(f"{where}: expected a tensor stride of ints >= 1, got {tensor_stride!r}")
    return ts


def exact_float(points):
    """Integer points as real ones: float32 (the reference's) where it holds
    them all exactly (|c| <= 2^24), else float64 (16777217 became 16777216)."""
    if points.is_floating_point():
        return points
    big = len(points) and int(points.abs().max()) > 2 ** 24
    return points.to(torch.float64 if big else torch.float32)


def quantize_points(points, tensor_stride):
    """Each point's voxel on the tensor-stride grid as int32 coordinates:
    floor(x / ts) * ts per spatial axis and the batch column rounded (a
    TensorField's quantization, as the reference's)."""
    tensor_stride = positive_stride(tensor_stride, "quantize_points")
    if not points.is_floating_point():  # exact: f32 holds integers only up to 2^24
        c = points.to(torch.int64).clone()
        ts = torch.as_tensor(_axes(tensor_stride), dtype=torch.int64, device=c.device)
        c[:, 1:] = torch.div(c[:, 1:], ts, rounding_mode="floor") * ts
        return _int_coordinates(c, warn=False)
    # In f64, which holds every f16/bf16/f32 value and int32 coordinate
    # exactly: in f32, x / ts and the product back round past 2^24. A copy:
    # an f64 input is the caller's tensor (a field's own coordinates).
    c = points.to(torch.float64, copy=True)
    ts = torch.as_tensor(_axes(tensor_stride), dtype=c.dtype, device=c.device)
    c[:, 0] = torch.round(c[:, 0])
    c[:, 1:] = torch.floor(c[:, 1:] / ts) * ts
    return _int_coordinates(c, warn=False)  # floored here: no warning


def unique_coordinate_map(coordinates, tensor_stride=1):
    """(unique_map, inverse_map) of N x (1+D) integer coordinates: the input
    row of each unique coordinate (first occurrence) and each row's unique
    index, as a coordinate map of a scratch manager makes them."""
    c = _int_coordinates(coordinates)
    _, unique, inverse = CoordinateManager(c.shape[1] - 1).insert(c, _axes(tensor_stride), "")
    return unique, inverse


class SparseTensorOperationMode(enum.IntEnum):
    """SEPARATE_COORDINATE_MANAGER (default): every SparseTensor built from raw
    coordinates gets a new manager. SHARE_COORDINATE_MANAGER: they share one
    global manager (call clear_global_coordinate_manager() between iterations,
    or its maps accumulate)."""

    SEPARATE_COORDINATE_MANAGER = 0
    SHARE_COORDINATE_MANAGER = 1


_operation_mode = SparseTensorOperationMode.SEPARATE_COORDINATE_MANAGER
_global_manager = None


def set_sparse_tensor_operation_mode(mode):
    global _operation_mode
    _operation_mode = SparseTensorOperationMode(mode)


def sparse_tensor_operation_mode():
    return _operation_mode


def global_coordinate_manager():
    return _global_manager


def set_global_coordinate_manager(manager):
    global _global_manager
    _global_manager = manager


def clear_global_coordinate_manager():
    global _global_manager
    _global_manager = None


def default_manager(dimension, coordinates=None, allocator_type=None, minkowski_algorithm=None):
    """The manager a tensor built from raw coordinates joins (see the mode); a
    new one has the coordinates' map type (CUDA for CUDA coordinates, as in the
    reference) and the given allocator and algorithm."""
    global _global_manager
    cuda = coordinates is not None and coordinates.is_cuda
    map_type = choices.CoordinateMapType.CUDA if cuda else choices.CoordinateMapType.CPU
    make = lambda: CoordinateManager(dimension, coordinate_map_type=map_type,  # noqa: E731
                                     allocator_type=allocator_type,
                                     minkowski_algorithm=minkowski_algorithm)
    if _operation_mode != SparseTensorOperationMode.SHARE_COORDINATE_MANAGER:
        return make()
    if _global_manager is None:
        _global_manager = make()
    elif _global_manager.dimension != dimension:
        raise ValueError(f"the global coordinate manager has dimension "
                         f"{_global_manager.dimension}, got coordinates of dimension {dimension}")
    return _global_manager
