"""The reference's GPU backend choices: which allocator its GPU maps use and
whether a manager's maps live on the CPU or the GPU.

fieldkit has neither choice to make. Its device memory always comes from
fk's own stream-ordered caching pool (src/fk/memory.h), and an op runs where
its features are. So the allocator is recorded, as the reference records it
on a build without CUDA (where it selects nothing either), and a CUDA build
warns that the raw-cudaMalloc choice is not honoured. A CUDA map type on a
build without CUDA is refused, as the reference fails there too (it has no
GPU manager to make)."""
import enum
import warnings

from .. import _core


class GPUMemoryAllocatorType(enum.IntEnum):
    """The reference's values: PYTORCH (torch's caching allocator, its
    default) or CUDA (raw cudaMalloc / cudaFree)."""

    PYTORCH = 0
    CUDA = 1


class CoordinateMapType(enum.IntEnum):
    """The reference's values: where a manager keeps its maps."""

    CPU = 0
    CUDA = 1


def _member(enum_type, value, where):
    try:
        return enum_type(value)
    except ValueError:
        names = " or ".join(m.name for m in enum_type)
        raise ValueError(f"{where}: expected a {enum_type.__name__} ({names}), got "
                         f"{value!r}") from None


def allocator_type(value, where="allocator_type"):
    """value as a GPUMemoryAllocatorType (None: the process-wide choice);
    warns on a CUDA build when it asks for raw cudaMalloc."""
    if value is None:
        return _gpu_allocator
    value = _member(GPUMemoryAllocatorType, value, where)
    if value == GPUMemoryAllocatorType.CUDA and _core.built_with_cuda():
        warnings.warn(f"{where}: GPUMemoryAllocatorType.CUDA (raw cudaMalloc) is recorded but "
                      "not honoured: fieldkit's device memory always comes from its own "
                      "stream-ordered pool", stacklevel=3)
    return value


def coordinate_map_type(value, where="coordinate_map_type"):
    """value as a CoordinateMapType (None: the process-wide default); a CUDA
    map type needs a build with the CUDA backend."""
    if value is None:
        return _map_type
    value = _member(CoordinateMapType, value, where)
    if value == CoordinateMapType.CUDA and not _core.built_with_cuda():
        raise ValueError(f"{where}: CoordinateMapType.CUDA needs fieldkit built with CUDA "
                         "(FK_ENABLE_CUDA=ON); this build has the CPU backend only")
    return value


_gpu_allocator = GPUMemoryAllocatorType.PYTORCH
_map_type = CoordinateMapType.CUDA if _core.built_with_cuda() else CoordinateMapType.CPU


def set_gpu_allocator(backend):
    """The reference's process-wide allocator for the managers made from now
    on (recorded: see the module's note)."""
    global _gpu_allocator
    _gpu_allocator = allocator_type(backend, "set_gpu_allocator")


def gpu_allocator():
    """The allocator set_gpu_allocator recorded (PYTORCH by default)."""
    return _gpu_allocator


def set_memory_manager_backend(backend):
    """The reference's deprecated name of set_gpu_allocator."""
    warnings.warn("set_memory_manager_backend is deprecated; use set_gpu_allocator",
                  DeprecationWarning, stacklevel=2)
    set_gpu_allocator(backend)


def set_coordinate_map_type(coordinate_map_type_):
    """The default map type of the managers made from now on (CUDA when the
    build has CUDA, else CPU); CUDA on a CPU-only build is a ValueError."""
    global _map_type
    _map_type = coordinate_map_type(coordinate_map_type_, "set_coordinate_map_type")


def default_coordinate_map_type():
    return _map_type
