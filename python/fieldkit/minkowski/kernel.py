"""Kernel descriptions: the reference's KernelGenerator, resolved to a C++
KernelRegion for a given dimension."""
import numpy as np
import torch

from .._core import minkowski as _mk
from .coordinates import _axes, _int_coordinates

RegionType = _mk.RegionType


class KernelGenerator:
    """kernel_size / stride / dilation (an int or D ints, kept as D ints as
    the reference's), the region type (HYPER_CUBE, HYPER_CROSS or CUSTOM with
    ``region_offsets``, K x D ints)."""

    def __init__(self, kernel_size=-1, stride=1, dilation=1, is_transpose=False,
                 region_type=RegionType.HYPER_CUBE, region_offsets=None,
                 expand_coordinates=False, axis_types=None, dimension=-1):
        if dimension is None or dimension <= 0:
            raise ValueError(f"KernelGenerator: expected a dimension > 0, got {dimension}")
        if axis_types is not None:
            raise ValueError("KernelGenerator: expected axis_types None (per-axis HYBRID kernels "
                             "are not supported; use RegionType.CUSTOM with region_offsets), got "
                             f"{axis_types!r}")
        self.kernel_size = _per_dimension(kernel_size, dimension, "kernel_size")
        self.kernel_stride = _per_dimension(stride, dimension, "stride", "positive ints")
        self.kernel_dilation = _per_dimension(dilation, dimension, "dilation", "positive ints")
        for name, values in (("stride", self.kernel_stride), ("dilation", self.kernel_dilation)):
            if min(values) < 1:
                raise ValueError(f"KernelGenerator: expected a {name} of 1 or {dimension} "
                                 f"positive ints, got {values}")
        self.region_type = _region_type(region_type)
        self.region_offsets = region_offsets
        self.expand_coordinates = expand_coordinates
        self.axis_types = axis_types
        self.dimension = dimension
        if self.region_type == RegionType.CUSTOM and region_offsets is None:
            raise ValueError("KernelGenerator: a CUSTOM region needs region_offsets (K x D)")
        self.region = self._region()
        self.kernel_volume = self.region.volume(dimension)
        # The reference's name: True when every stride is 1 (the output keeps
        # the input's coordinates).
        self.requires_strided_coordinates = self.unit_stride
        self.cache = {}

    def get_kernel(self, tensor_stride, is_transpose):
        """(region_type, region_offset, kernel_volume) at a tensor stride, as
        the reference's (cached per stride): the CUSTOM offsets given, an empty
        IntTensor for the regions the engine makes per stride."""
        ts = tuple(_per_dimension(tensor_stride, self.dimension, "tensor_stride"))
        if ts not in self.cache:
            self.cache[ts] = (self.region_type, self._offsets(), self.kernel_volume)
        return self.cache[ts]

    def _offsets(self):
        if self.region_type != RegionType.CUSTOM:
            return torch.IntTensor()
        return torch.as_tensor(self.region_offsets).to(torch.int32).reshape(-1, self.dimension)

    def _region(self):
        """The C++ KernelRegion this generator describes."""
        if self.region_type == RegionType.CUSTOM:
            given = self.region_offsets
            given = (given.detach().cpu().numpy() if isinstance(given, torch.Tensor)
                     else np.asarray(given))
            if given.ndim != 2 or given.shape[1] != self.dimension:
                raise ValueError(f"KernelGenerator: expected region_offsets K x "
                                 f"{self.dimension} (one offset a row), got shape "
                                 f"{tuple(given.shape)}")
            offsets = _axes(given.ravel())  # fractions refused, not truncated
            return _mk.KernelRegion.custom(offsets, self.dimension, self.kernel_dilation)
        if self.region_type == RegionType.HYPER_CROSS:
            return _mk.KernelRegion.cross(self.kernel_size, self.kernel_dilation)
        return _mk.KernelRegion.cube(self.kernel_size, self.kernel_dilation)

    # Copies and pickles (deepcopy of a model, torch.save, spawned workers)
    # carry the description; the C++ region is made again from it.
    def __getstate__(self):
        state = dict(self.__dict__)
        del state["region"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.region = self._region()

    @property
    def unit_stride(self):
        return all(s == 1 for s in self.kernel_stride)


def _per_dimension(value, dimension, name, what="ints"):
    """An int or `dimension` ints as `dimension` ints (fractions refused)."""
    values = _axes(value)
    if len(values) not in (1, dimension):
        raise ValueError(f"KernelGenerator: expected a {name} of 1 or {dimension} {what}, got "
                         f"{values}")
    return values * dimension if len(values) == 1 else values


def _region_type(value):
    """A RegionType from itself or the reference's integers (0 HYPER_CUBE,
    1 HYPER_CROSS, 2 CUSTOM); anything else is refused, not taken as a cube."""
    if isinstance(value, RegionType):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2:
        return RegionType(value)
    raise ValueError("KernelGenerator: expected region_type a RegionType (HYPER_CUBE, "
                     f"HYPER_CROSS, CUSTOM) or 0, 1, 2, got {value!r}")


def get_kernel_volume(region_type, kernel_size, region_offset, axis_types, dimension):
    """The number of kernel offsets (weights' first dimension), as the
    reference's: prod k_i for HYPER_CUBE, sum (k_i - 1) + 1 for HYPER_CROSS
    (odd sizes only), the rows of region_offset (K x D) for CUSTOM.
    axis_types (the reference's per-axis HYBRID kernels) is refused: no
    engine path builds one."""
    return _description(region_type, kernel_size, region_offset, axis_types,
                        dimension).kernel_volume


def convert_region_type(region_type, tensor_stride, kernel_size, up_stride, dilation,
                        region_offset, axis_types, dimension, center=True):
    """(region_type, region_offset, kernel_volume), as the reference's: the
    offsets are the CUSTOM ones given (an int32 K x D tensor), an empty
    IntTensor for HYPER_CUBE and HYPER_CROSS, whose offsets the engine makes
    per tensor stride. tensor_stride, up_stride, dilation and center shaped
    only the reference's HYBRID offsets: accepted, unused."""
    gen = _description(region_type, kernel_size, region_offset, axis_types, dimension)
    return gen.region_type, gen._offsets(), gen.kernel_volume


def _description(region_type, kernel_size, region_offset, axis_types, dimension):
    """A KernelGenerator of the reference's loose kernel arguments, checked."""
    kind = _region_type(region_type)
    if kind != RegionType.CUSTOM and region_offset is not None and len(region_offset):
        raise ValueError(f"expected no region_offset with {kind.name} (its offsets come from "
                         "kernel_size), got some")
    return KernelGenerator(kernel_size, region_type=kind,
                           region_offsets=region_offset if kind == RegionType.CUSTOM else None,
                           axis_types=axis_types, dimension=dimension)


def make_generator(kernel_generator, kernel_size, stride, dilation, dimension,
                   expand_coordinates=False):
    if kernel_generator is not None:
        # A generator of another dimension would have its offsets re-split
        # by this layer's (a 3-D CUSTOM pair read as three 2-D offsets).
        if dimension is not None and kernel_generator.dimension != dimension:
            raise ValueError(f"expected a kernel_generator of the layer's dimension {dimension}, "
                             f"got one of dimension {kernel_generator.dimension}")
        kernel_generator.expand_coordinates = expand_coordinates
        return kernel_generator
    return KernelGenerator(kernel_size, stride, dilation, expand_coordinates=expand_coordinates,
                           dimension=dimension)


def output_key(x, coordinates):
    """The target map a layer's ``coordinates`` argument names (a SparseTensor
    or a map key of the input's manager), or None."""
    if coordinates is None:
        return None
    if hasattr(coordinates, "coordinate_map_key"):
        if coordinates.coordinate_manager is not x.coordinate_manager:
            raise ValueError("expected output coordinates of the input's coordinate manager, "
                             "got a tensor of another manager")
        return coordinates.coordinate_map_key
    if isinstance(coordinates, _mk.MapKey):
        if not x.coordinate_manager.has(coordinates):
            raise ValueError(f"expected a map of the input's manager, got the key {coordinates}")
        return coordinates
    raise TypeError("expected output coordinates as a SparseTensor or a CoordinateMapKey, got "
                    f"{type(coordinates).__name__}")


def inserted_key(x, coords, tensor_stride, where):
    """Output coordinates listed as an N x (1+D) integer tensor (batch first,
    no repeats), inserted as a new map of x's manager at tensor_stride (its
    rows in the order given)."""
    c = _int_coordinates(coords)
    if c.dim() != 2 or c.shape[1] != x.D + 1:
        raise ValueError(f"{where}: expected coordinates of shape N x {x.D + 1} (batch first), "
                         f"got {tuple(coords.shape)}")
    distinct = len(torch.unique(c, dim=0))
    if distinct != c.shape[0]:
        raise ValueError(f"{where}: expected coordinates without repeats (one output row each), "
                         f"got {c.shape[0]} rows of which {distinct} distinct")
    return x.coordinate_manager.insert(c, _axes(tensor_stride), "listed")[0]


def transposed_output_key(x, gen, region=None):
    """A transposed op's output map: the existing map of the finer stride
    (the encoder's: same tag, else untagged), else a new one, x's coordinates
    expanded by `region` (the generator's by default; pooling's stride map
    where the kernel is the stride, so that the new cells are the ones its
    features reach)."""
    mgr, key = x.coordinate_manager, x.coordinate_map_key
    s = gen.kernel_stride * (x.D if len(gen.kernel_stride) == 1 else 1)
    ts = list(key.tensor_stride)
    if len(ts) == 1:
        ts = ts * x.D
    for a in range(x.D):
        if ts[a] % s[a]:
            raise ValueError("transposed op: expected a stride dividing the input tensor stride "
                             f"on every axis, got stride {s[a]} for tensor stride {ts[a]} on "
                             f"axis {a}")
    out_ts = [t // q for t, q in zip(ts, s)]
    if not gen.expand_coordinates:
        for cand in (_mk.MapKey(out_ts, key.tag), _mk.MapKey(out_ts, "")):
            if mgr.has(cand):
                return cand
    return mgr.expand(key, gen.region if region is None else region, out_ts)


def _per_axis(v, d):
    return list(v) * d if len(v) == 1 else list(v)


def expanded_output_key(x, gen):
    """MinkowskiConvolution(expand_coordinates=True)'s output map, as the
    reference's stride_region makes it: every input coordinate plus every
    kernel offset (at the input's tensor stride) that lies on the output
    stride's grid, inserted as a new map at the output stride."""
    mgr, key, d = x.coordinate_manager, x.coordinate_map_key, x.D
    ts = _per_axis(key.tensor_stride, d)
    out_ts = [t * s for t, s in zip(ts, _per_axis(gen.kernel_stride, d))]
    offsets = torch.tensor(gen.region.offsets(ts), dtype=torch.int64).view(-1, d)
    c = mgr.coordinates(key).to(torch.int64)
    points = (c[:, None, 1:] + offsets[None]).reshape(-1, d)
    batch = c[:, :1].repeat_interleave(len(offsets), 0)
    on_grid = (points % torch.tensor(out_ts)).eq(0).all(1)
    rows = torch.cat([batch, points], 1)[on_grid]
    limit = 2 ** 30
    if len(rows) and (rows[:, 1:].abs().max() > limit):
        raise ValueError(f"expand_coordinates: expected expanded coordinates within "
                         f"[-2^30, 2^30], got one beyond it from the map {key}")
    return mgr.insert(rows.to(torch.int32).contiguous(), out_ts, key.tag + "expand")[0]
