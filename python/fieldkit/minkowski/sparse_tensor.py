"""SparseTensor and TensorField: torch features on the coordinates of a C++
CoordinateManager map. Row i of the features is row i of the map."""
import numbers

import torch

from .._core import minkowski as _mk
from .functional import SplatFunction, run, widened
from .map_rows import _aligned_features, _features_on, _rows_in_map
from .quantization import _reduce_duplicates, _reduce_onto, reduced_dtype
from .coordinates import (
    SparseTensorQuantizationMode as QMode,
    default_manager,
    exact_float,
    positive_stride,
    quantize_points,
    _axes,
    _int_coordinates,
)
from .tensor_base import _Tensor


class SparseTensor(_Tensor):
    """Features (N x C torch tensor) on one map of a CoordinateManager.

    Build from ``coordinates`` (N x (1+D) ints, batch index first; duplicates
    are reduced by ``quantization_mode``) or from an existing
    ``coordinate_map_key`` of ``coordinate_manager``."""

    def __init__(self, features, coordinates=None, tensor_stride=1, coordinate_map_key=None,
                 coordinate_manager=None, quantization_mode=QMode.RANDOM_SUBSAMPLE,
                 allocator_type=None, minkowski_algorithm=None, requires_grad=None, device=None):
        if not isinstance(features, torch.Tensor):
            raise TypeError("SparseTensor: expected features as a torch.Tensor (N x C), got "
                            f"{type(features).__name__} (torch.as_tensor converts numpy)")
        if features.dim() != 2:
            raise ValueError(f"SparseTensor: expected 2-D features (N x C), got shape "
                             f"{tuple(features.shape)}")
        if device is not None:
            features = features.to(device)
        self.quantization_mode = QMode(quantization_mode)
        self.unique_index = self.inverse_mapping = None
        if coordinates is not None and self.quantization_mode == QMode.SPLAT_LINEAR_INTERPOLATION:
            raise ValueError("SparseTensor: expected a quantization mode that reduces duplicate "
                             "coordinates, got SPLAT_LINEAR_INTERPOLATION (a TensorField's "
                             "splat(): TensorField(features, points).splat())")
        if coordinates is not None:
            coordinates = _int_coordinates(coordinates)
            if device is not None:
                # As in the reference, `device` moves the coordinates too: a
                # CUDA manager builds its maps on the device, where host
                # coordinates would have them built on the host and uploaded.
                coordinates = coordinates.to(device)
            if coordinates.dim() != 2 or coordinates.shape[0] != features.shape[0]:
                raise ValueError(
                    "SparseTensor: expected coordinates of shape N x (1+D) with N = "
                    f"{features.shape[0]} feature rows, got {tuple(coordinates.shape)}")
            mgr = coordinate_manager or default_manager(
                coordinates.shape[1] - 1, coordinates, allocator_type, minkowski_algorithm)
            key, unique, inverse = mgr.insert(coordinates, _axes(tensor_stride), "")
            # The manager hands its row indices back on the host; they index
            # the features, on the features' device.
            unique, inverse = unique.to(features.device), inverse.to(features.device)
            # Without repeats the features are the caller's tensor itself, as
            # the reference's (x.F.grad of a leaf given is its gradient; an
            # in-place op on either changes both), unless the mode's reduction
            # has another dtype (integers' mean): that holds without repeats too.
            if unique.numel() != features.shape[0]:
                features = _reduce_duplicates(features, unique, inverse, self.quantization_mode)
            else:
                features = features.to(reduced_dtype(features.dtype, self.quantization_mode))
            self.unique_index, self.inverse_mapping = unique, inverse
        elif coordinate_map_key is not None and coordinate_manager is not None:
            mgr, key = coordinate_manager, coordinate_map_key
            if mgr.size(key) != features.shape[0]:
                raise ValueError(f"SparseTensor: expected {mgr.size(key)} feature rows (the map "
                                 f"{key}), got {features.shape[0]}")
        else:
            raise ValueError("SparseTensor: expected coordinates, or a coordinate_map_key with "
                             "its coordinate_manager")
        if requires_grad is not None:
            features.requires_grad_(requires_grad)
        self._F, self._manager, self._key, self._C = features, mgr, key, None

    @classmethod
    def _on_map(cls, features, key, manager):
        """An op's output on the map it was computed for: no checks (the C++
        op made one row per map row), a per-call saving for small ops."""
        t = cls.__new__(cls)
        t.quantization_mode = QMode.RANDOM_SUBSAMPLE
        t.unique_index = t.inverse_mapping = None
        t._F, t._manager, t._key, t._C = features, manager, key, None
        return t

    @property
    def C(self):
        if self._C is None:
            self._C = self._manager.coordinates(self._key)
        return self._C

    def _rows_of(self, b):
        """Item b is batch index b, as the reference's (an absent one has no
        rows)."""
        return (self.C[:, 0] == b).nonzero().flatten()

    @property
    def coordinate_manager(self):
        return self._manager

    @property
    def coordinate_map_key(self):
        return self._key

    coordinate_key = coordinate_map_key  # the reference's other name

    @property
    def tensor_stride(self):
        return list(self._key.tensor_stride)

    @property
    def D(self):
        return self._manager.dimension

    dimension = D

    def __repr__(self):
        return (f"SparseTensor(features={tuple(self._F.shape)} {self._F.dtype}, "
                f"map={self._key}, D={self.D})")

    # -- same coordinates, other features ------------------------------------
    def _with(self, features):
        return SparseTensor(features, coordinate_map_key=self._key,
                            coordinate_manager=self._manager)

    def _same_manager(self, other):
        if other._manager is not self._manager:
            raise ValueError("SparseTensor arithmetic: expected tensors of one coordinate "
                             "manager (the same coordinate map, or maps to unite), got "
                             f"{self._key} and {other._key} of another manager")

    def _binary(self, other, op):
        """op on the features. Another SparseTensor of the same manager on
        another map: on the union of the two maps, as the reference does:
        rows of self alone keep self's features (whatever op is), rows of
        other alone get op(0, other), shared rows op(self, other)."""
        if not isinstance(other, SparseTensor):
            if not isinstance(other, (torch.Tensor, numbers.Number)):
                raise TypeError("SparseTensor arithmetic: expected a SparseTensor, a torch.Tensor "
                                f"or a number, got {type(other).__name__}"
                                + (" (its sparse() is a SparseTensor)"
                                   if isinstance(other, TensorField) else ""))
            if isinstance(other, numbers.Number) and not isinstance(other, (int, float, complex)):
                # a Fraction, Decimal or numpy scalar as the Python number it
                # is (torch takes no Fraction or Decimal; a Decimal is no
                # numbers.Real, but a real number all the same)
                other = int(other) if isinstance(other, numbers.Integral) else \
                    complex(other) if isinstance(other, numbers.Complex) and \
                    not isinstance(other, numbers.Real) else float(other)
            return self._with(op(self._F, other))
        self._same_manager(other)
        theirs = _aligned_features(self, other)
        if theirs is not None:
            return self._with(op(self._F, theirs))
        key, size, (mine, theirs) = _mk.union_map(self._manager, [self._key, other._key],
                                                  [self._F.detach(), other._F.detach()])
        mine, theirs = mine.to(self._F.device), theirs.to(self._F.device)
        # The union's features in the dtype op gives the pair (torch's
        # promotion, either order).
        dtype = torch.result_type(self._F, other._F)
        f = self._F.new_zeros(size, self._F.shape[1], dtype=dtype).index_copy(
            0, mine, self._F.to(dtype))
        f = f.index_copy(0, theirs, op(f[theirs], other._F).to(dtype))
        return SparseTensor._on_map(f, key, self._manager)

    def _in_place(self, other, op):
        """The reference's in-place ops: another SparseTensor must be on the
        same map (no union); the features change in place."""
        if isinstance(other, SparseTensor):
            self._same_manager(other)
            other = _features_on(self, other, "SparseTensor in-place arithmetic")
        op(self._F, other)
        return self

    def __iadd__(self, o):
        return self._in_place(o, torch.Tensor.add_)

    def __isub__(self, o):
        return self._in_place(o, torch.Tensor.sub_)

    def __imul__(self, o):
        return self._in_place(o, torch.Tensor.mul_)

    def __itruediv__(self, o):
        return self._in_place(o, torch.Tensor.div_)

    def __add__(self, o):
        return self._binary(o, torch.add)

    def __sub__(self, o):
        return self._binary(o, torch.sub)

    def __mul__(self, o):
        return self._binary(o, torch.mul)

    def __truediv__(self, o):
        return self._binary(o, torch.div)

    def __neg__(self):
        return self._with(-self._F)

    # -- conversions -----------------------------------------------------------
    def _cells(self, min_coordinate, contract_stride):
        """(batch index, grid cell of each row (N x D), min_coordinate)."""
        c = self.C.long()
        spatial = c[:, 1:]
        if min_coordinate is None:
            if (spatial < 0).any():
                raise ValueError("expected a min_coordinate with negative coordinates")
            lo = torch.zeros(self.D, dtype=torch.long)
        else:
            lo = torch.as_tensor(min_coordinate, dtype=torch.long).reshape(-1)
            if lo.numel() not in (1, self.D):  # one value, D, or (1, D) as the reference passes
                raise ValueError(f"expected a min coordinate of 1 or {self.D} values, got "
                                 f"{tuple(torch.as_tensor(min_coordinate).shape)}")
            lo = lo.expand(self.D)
            below = (spatial < lo).any(0)
            if below.any():
                a = int(below.nonzero()[0])
                raise ValueError(f"expected coordinates >= the min coordinate {lo.tolist()}, "
                                 f"got {int(spatial[:, a].min())} on axis {a}")
        ts = torch.as_tensor(self.tensor_stride, dtype=torch.long).expand(self.D)
        if contract_stride and (lo % ts).any():
            raise ValueError(f"expected a min coordinate on the tensor stride {ts.tolist()} "
                             f"grid (contract_stride), got {lo.tolist()}")
        cell = (spatial - lo) // ts if contract_stride else spatial - lo
        return c[:, 0], cell, lo

    def dense(self, shape=None, min_coordinate=None, contract_stride=True):
        """(B x C x s_1..s_D dense tensor, min_coordinate, tensor_stride), a
        torch scatter of the features (differentiable); tensor_stride is a D
        int32 tensor (torch.IntTensor), as the reference's. min_coordinate comes
        back as the grid's origin: the one given, or zeros when none is
        (the reference returns the coordinates' minimum then, though its grid
        starts at the origin too)."""
        batch, cell, lo = self._cells(min_coordinate, contract_stride)
        if len(batch) and int(batch.min()) < 0:  # index_put would wrap it to the last batch
            raise ValueError(f"dense: expected batch indices >= 0, got {int(batch.min())}")
        batches = int(batch.max()) + 1 if len(batch) else 0
        if shape is None:
            if not len(cell):
                raise ValueError("dense: expected a shape for an empty tensor (no row to size "
                                 "it), got none")
            sizes = (cell.max(0).values + 1).tolist()
            shape = [batches, self._F.shape[1], *sizes]
        shape = [int(v) for v in shape]
        if len(shape) != self.D + 2:
            raise ValueError(f"dense: expected a shape of B, C and {self.D} spatial sizes, got "
                             f"{shape}")
        shape[1] = self._F.shape[1]  # as the reference: the channels are the features'
        if len(cell) and ((cell.max(0).values >= torch.tensor(shape[2:])).any() or
                          int(batch.max()) >= shape[0]):
            raise ValueError(f"dense: expected a shape holding every coordinate, got {shape} for "
                             f"batches up to {int(batch.max())} and cells up to "
                             f"{cell.max(0).values.tolist()}")
        dense = self._F.new_zeros([shape[0], *shape[2:], shape[1]])
        rows = (batch, *cell.unbind(1))  # host coordinates index the features' device
        dense = dense.index_put(tuple(r.to(self._F.device) for r in rows), self._F)
        # min_coordinate as the reference gives it: an int32 1 x D tensor
        return dense.movedim(-1, 1), lo.to(torch.int32).reshape(1, self.D), \
            torch.IntTensor(self.tensor_stride)

    def sparse(self, min_coords=None, max_coords=None, contract_coords=True):
        """(torch sparse COO tensor B x s_1..s_D x C (the features a dense last
        dimension), min_coords, tensor_stride (a torch.IntTensor, as the
        reference's)): cell = (c - min_coords) / ts
        with contract_coords, s_a up to max_coords (default the largest
        cell); differentiable in the features. As the reference: min_coords
        defaults to the smallest coordinate on each axis (unlike dense(), which
        starts at the origin), and comes back 1 x D, divided by the tensor
        stride with contract_coords (a row's coordinates are then
        ts * (min_coords + cell))."""
        if min_coords is None:
            spatial = self.C[:, 1:].long()
            min_coords = spatial.min(0).values if len(spatial) else [0] * self.D
        batch, cell, lo = self._cells(min_coords, contract_coords)
        if max_coords is None:
            sizes = (cell.max(0).values + 1).tolist() if len(cell) else [0] * self.D
        else:
            hi = torch.as_tensor(max_coords, dtype=torch.long).reshape(-1).expand(self.D) - lo
            if contract_coords:
                hi = hi // torch.as_tensor(self.tensor_stride, dtype=torch.long).expand(self.D)
            sizes = (hi + 1).tolist()
            if len(cell) and (cell >= hi + 1).any():
                raise ValueError(f"sparse: expected coordinates within max_coords {max_coords}, "
                                 "got one beyond it")
        batches = int(batch.max()) + 1 if len(batch) else 0
        indices = torch.cat([batch[None], cell.t()], 0).to(self._F.device)
        out = torch.sparse_coo_tensor(indices, self._F, [batches, *sizes, self._F.shape[1]])
        if contract_coords:
            lo = lo // torch.as_tensor(self.tensor_stride, dtype=torch.long).expand(self.D)
        return out, lo.to(torch.int32).reshape(1, self.D), torch.IntTensor(self.tensor_stride)

    def features_at_coordinates(self, query_coordinates):
        """Features at continuous points (Q x (1+D) float, batch first),
        multilinear over the corners present (differentiable in F)."""
        from .ops import interpolate

        return interpolate(self, query_coordinates)[0]

    def interpolate(self, field):
        """This tensor's features at the points of a TensorField, as a
        TensorField: multilinear over the corners present. On the map of
        ``field.splat()`` every corner is present, so this is the splat's
        transpose (the reference keeps the splat's weights for this)."""
        return TensorField(self.features_at_coordinates(field.C), field.C,
                           coordinate_manager=self._manager)

    def slice(self, X):
        """This tensor's features at each point X quantized onto this tensor's
        map, as a TensorField. X is a TensorField quantized by
        ``X.sparse()`` (the result has X's points), or a SparseTensor built
        from coordinates on this very map (the result has each input row's
        voxel coordinates, the reference's second form)."""
        if isinstance(X, TensorField):
            return X._with(self._F[self._field_rows(X, "slice")])
        inverse = self._input_rows(X, "slice")
        return self._at_input_rows(self._F[inverse], X)

    def _field_rows(self, X, where):
        """Each point of the field X's row of this tensor's map: X's own
        quantization where X's manager holds the map, else each point's voxel
        looked up by coordinate (a key names rows of its manager only: another
        manager's map under the same key once gave its rows silently)."""
        same = X.coordinate_manager is self._manager
        if same:
            try:
                return X.inverse_mapping(self._key)
            except _NotQuantized:  # never quantized here: looked up as another manager's
                pass
        rows = _rows_in_map(self.C, X._voxels(self._key.tensor_stride))
        off = int((rows < 0).sum())
        if off:
            raise ValueError(f"{where}: expected every point of the field on a coordinate of this "
                             f"tensor's map" + ("" if same else " (of another coordinate manager)")
                             + f", got {off} of {len(rows)} points off it")
        return rows.to(self._F.device)

    def cat_slice(self, X):
        """slice(X) with X's own features concatenated after (a SparseTensor
        X's brought to the same input rows)."""
        if isinstance(X, TensorField):
            return X._with(torch.cat([self._F[self._field_rows(X, "cat_slice")], X.F], 1))
        inverse = self._input_rows(X, "cat_slice")
        return self._at_input_rows(torch.cat([self._F[inverse], X.F[inverse]], 1), X)

    def _input_rows(self, X, where):
        """The map row of each input row of a SparseTensor X on this map."""
        if not isinstance(X, SparseTensor):
            raise TypeError(f"{where}: expected a TensorField or a SparseTensor, got "
                            f"{type(X).__name__}")
        if X._manager is not self._manager or X._key != self._key:
            raise ValueError(f"{where}: expected a SparseTensor on this tensor's map {self._key} "
                             f"of its manager, got one on {X._key}"
                             + ("" if X._manager is self._manager else " of another manager"))
        if X.inverse_mapping is None:
            raise ValueError(f"{where}: expected a SparseTensor built from coordinates (it keeps "
                             "each input row's map row), got one made on an existing map")
        return X.inverse_mapping

    def _at_input_rows(self, features, X):
        """features (one row per input row of X) as a TensorField on each
        input row's voxel coordinates, in this tensor's manager."""
        inverse = X.inverse_mapping
        points = exact_float(self.C[inverse.to(self.C.device)]).to(features.device)
        return TensorField(features, points, coordinate_manager=self._manager,
                           quantization_mode=X.quantization_mode)


class TensorField(_Tensor):
    """Features on continuous coordinates (N x (1+D) float, batch first).
    ``sparse()`` quantizes them onto a SparseTensor and remembers each point's
    row, so ``SparseTensor.slice(field)`` brings features back to the points."""

    def __init__(self, features, coordinates=None, tensor_stride=1,
                 coordinate_field_map_key=None, coordinate_manager=None,
                 quantization_mode=QMode.UNWEIGHTED_AVERAGE, allocator_type=None,
                 minkowski_algorithm=None, requires_grad=None, device=None):
        field_key = None
        if coordinates is None:
            # The reference's other form: the points of a coordinate field of
            # the manager, at the field's tensor stride.
            if coordinate_field_map_key is None or \
                    not hasattr(coordinate_manager, "get_coordinate_field"):
                raise ValueError("TensorField: expected coordinates, or a "
                                 "coordinate_field_map_key with its coordinate_manager")
            coordinates = coordinate_manager.get_coordinate_field(coordinate_field_map_key)
            field_key = coordinate_field_map_key
            tensor_stride = field_key.tensor_stride
        if not isinstance(features, torch.Tensor):
            raise TypeError("TensorField: expected features as a torch.Tensor (N x C), got "
                            f"{type(features).__name__} (torch.as_tensor converts numpy)")
        positive_stride(tensor_stride, "TensorField")
        coordinates = torch.as_tensor(coordinates)
        if features.dim() != 2 or coordinates.dim() != 2 or \
                coordinates.shape[0] != features.shape[0]:
            raise ValueError("TensorField: expected N x C features and N x (1+D) coordinates, "
                             f"got {tuple(features.shape)} and {tuple(coordinates.shape)}")
        if coordinates.dtype == torch.bool or coordinates.is_complex():
            raise ValueError("TensorField: expected integer or real coordinates, got "
                             f"{coordinates.dtype}")
        d = coordinates.shape[1] - 1
        if len(_axes(tensor_stride)) not in (1, d):
            raise ValueError(f"TensorField: expected a tensor_stride of 1 or {d} values (one per "
                             f"axis), got {_axes(tensor_stride)}")
        if device is not None:
            features, coordinates = features.to(device), coordinates.to(device)
        if requires_grad is not None:
            features.requires_grad_(requires_grad)
        self._F, self._C = features, coordinates
        self._tensor_stride = _axes(tensor_stride)
        self._manager = coordinate_manager or default_manager(
            coordinates.shape[1] - 1, coordinates, allocator_type, minkowski_algorithm)
        self.quantization_mode = _field_mode(quantization_mode, "TensorField")
        self._inverse = {}
        # One cell shared with the fields _with derives from this one, so a key
        # registered through any of them is theirs all (the reference's slice
        # reuses X.coordinate_field_map_key).
        self._field_key = [field_key]

    @property
    def C(self):
        return self._C

    @property
    def coordinate_field_map_key(self):
        """This field's key among its manager's coordinate fields, registered
        on first use (the reference's TensorField has one from the start), for
        the manager's field methods, e.g. field_to_sparse_map(field.coordinate_key,
        field.sparse().coordinate_key)."""
        if self._field_key[0] is None:
            if not hasattr(self._manager, "insert_field"):
                raise ValueError("TensorField.coordinate_field_map_key: expected a "
                                 "fieldkit.minkowski.CoordinateManager, got "
                                 f"{type(self._manager).__name__}")
            self._field_key[0] = self._manager.insert_field(self._C, self._tensor_stride)
        return self._field_key[0]

    coordinate_key = coordinate_field_map_key  # the reference's other name

    @property
    def coordinate_manager(self):
        return self._manager

    @property
    def D(self):
        return self._C.shape[1] - 1

    dimension = D

    @property
    def tensor_stride(self):
        return list(self._tensor_stride)

    def _with(self, features):
        """These points with other features (and this field's quantizations and
        coordinate field key, registered now or later)."""
        out = TensorField(features, self._C, tensor_stride=self._tensor_stride,
                          coordinate_manager=self._manager,
                          quantization_mode=self.quantization_mode)
        out._inverse, out._field_key = self._inverse, self._field_key
        return out

    def sparse(self, tensor_stride=1, coordinate_map_key=None, quantization_mode=None):
        """The field quantized onto a SparseTensor: each point to the voxel
        floor(x / ts) * ts (batch index rounded), duplicates reduced by the
        quantization mode (this field's by default). With coordinate_map_key,
        onto that existing map of the field's manager instead (on its tensor
        stride; every point must land on one of its coordinates, rows no point
        lands on get zeros). SPLAT_LINEAR_INTERPOLATION runs splat()."""
        mode = _field_mode(self.quantization_mode if quantization_mode is None
                           else quantization_mode, "TensorField.sparse")
        if len(_axes(tensor_stride)) not in (1, self.D):
            raise ValueError(f"TensorField.sparse: expected a tensor_stride of 1 or {self.D} "
                             f"values (one per axis), got {_axes(tensor_stride)}")
        if mode == QMode.SPLAT_LINEAR_INTERPOLATION:
            if coordinate_map_key is not None:
                raise ValueError("TensorField.sparse: expected no coordinate_map_key with "
                                 "SPLAT_LINEAR_INTERPOLATION (a splat makes its own map of every "
                                 f"corner), got {coordinate_map_key}")
            return self.splat(tensor_stride)
        if coordinate_map_key is not None:
            return self._sparse_onto(coordinate_map_key, mode)
        x = SparseTensor(self._F, self._voxels(tensor_stride), tensor_stride=tensor_stride,
                         quantization_mode=mode, coordinate_manager=self._manager)
        self._inverse[x.coordinate_map_key] = x.inverse_mapping
        return x

    def _voxels(self, tensor_stride):
        """Each point's voxel on the tensor_stride grid, int32 coordinates."""
        return quantize_points(self._C, tensor_stride)

    def _sparse_onto(self, key, mode):
        """sparse() onto the existing map `key`."""
        mgr = self._manager
        if not isinstance(key, _mk.MapKey) or not mgr.has(key):
            raise ValueError("TensorField.sparse: expected the key of a map of the field's "
                             f"coordinate manager, got {key!r}")
        rows = _rows_in_map(mgr.coordinates(key), self._voxels(key.tensor_stride))
        off = int((rows < 0).sum())
        if off:
            raise ValueError(f"TensorField.sparse: expected every point on a coordinate of the "
                             f"map {key}, got {off} of {len(rows)} points off it")
        rows = rows.to(self._F.device)
        features = _reduce_onto(self._F, rows, mgr.size(key), mode)
        self._inverse[key] = rows
        return SparseTensor(features, coordinate_map_key=key, coordinate_manager=mgr)

    def splat(self, tensor_stride=None):
        """The features spread onto the grid (the transpose of multilinear
        interpolation): each point gives each of its 2^D corners
        (floor(x / ts) * ts + {0, ts} per axis) the share prod_j (1 - |x_j -
        c_j| / ts_j) of its features. A SparseTensor on a new map of this
        field's manager holding every corner, in order of first occurrence;
        differentiable in the features. The batch column is rounded (half to
        even)."""
        ts = self._tensor_stride if tensor_stride is None else _axes(tensor_stride)
        points = widened(self._C) if self._C.is_floating_point() else self._C.double()
        splat_map = _mk.splat_map(self._manager, points.detach().cpu(), ts)  # a host map
        out = run(SplatFunction, self._F, splat_map)
        return SparseTensor._on_map(out, splat_map.key, self._manager)

    def inverse_mapping(self, key):
        """Each point's row of the map `key`: the row sparse() gave it there,
        else (a map of a coarser stride, a strided conv's or pooling's output)
        the row of its voxel's parent, through the finest map this field was
        quantized onto whose tensor stride divides key's."""
        if key in self._inverse:
            return self._inverse[key]
        mgr = self._manager
        if isinstance(key, _mk.MapKey) and mgr.has(key):
            ts = list(key.tensor_stride)
            finer = [k for k in self._inverse
                     if mgr.has(k) and all(t % f == 0 for t, f in zip(ts, k.tensor_stride))]
            if finer:
                fine = min(finer, key=lambda k: list(k.tensor_stride))
                _, parent = mgr.stride_map(fine, key)
                rows = parent.to(self._inverse[fine].device)[self._inverse[fine]]
                self._inverse[key] = rows
                return rows
        raise _NotQuantized(f"TensorField: no quantization onto the map {key} and no finer one "
                            f"it strides (call sparse())")


class _NotQuantized(ValueError):
    """A field with no quantization onto (or toward) a map of its manager."""


def _field_mode(mode, where):
    """A field's quantization mode: one that reduces the points of a voxel
    (NO_QUANTIZATION kept the first of them without a word; the reference
    refuses it)."""
    mode = QMode(mode)
    if mode == QMode.NO_QUANTIZATION:
        raise ValueError(f"{where}: expected a quantization mode that reduces the points of a "
                         "voxel (UNWEIGHTED_AVERAGE, UNWEIGHTED_SUM, RANDOM_SUBSAMPLE, MAX_POOL or "
                         "SPLAT_LINEAR_INTERPOLATION), got NO_QUANTIZATION")
    return mode


def layer_input(x, where, dimension=None, fields=False):
    """x checked as a layer's input: a SparseTensor (or, with fields, a
    TensorField) of the layer's dimension; a TypeError or ValueError naming
    what was given instead of an AttributeError deep in the layer."""
    kinds = (SparseTensor, TensorField) if fields else (SparseTensor,)
    if not isinstance(x, kinds):
        raise TypeError(f"{where}: expected a {' or a '.join(k.__name__ for k in kinds)}, got "
                        f"{type(x).__name__}")
    if dimension is not None and dimension > 0 and x.D != dimension:
        raise ValueError(f"{where}: expected a {dimension}-D input (the layer's dimension), "
                         f"got a {x.D}-D one")
    return x
