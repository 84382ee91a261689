"""The reference's GPU choices (allocator, map type): accepted with its values,
checked, recorded; a CUDA map type on a build without CUDA is refused, and a
CUDA build says that raw cudaMalloc is not honoured."""
import pytest
import torch

import fieldkit.minkowski as ME
from fieldkit.minkowski import backend_choices


@pytest.fixture(autouse=True)
def restore_choices():
    saved = backend_choices._gpu_allocator, backend_choices._map_type
    yield
    backend_choices._gpu_allocator, backend_choices._map_type = saved


def test_the_references_values():
    assert [(m.name, int(m)) for m in ME.GPUMemoryAllocatorType] == [("PYTORCH", 0), ("CUDA", 1)]
    assert [(m.name, int(m)) for m in ME.CoordinateMapType] == [("CPU", 0), ("CUDA", 1)]


def test_the_allocator_is_recorded_for_the_managers_made_after():
    assert ME.CoordinateManager(2).allocator_type == ME.GPUMemoryAllocatorType.PYTORCH
    ME.set_gpu_allocator(ME.GPUMemoryAllocatorType.CUDA)
    assert backend_choices.gpu_allocator() == ME.GPUMemoryAllocatorType.CUDA
    assert ME.CoordinateManager(2).allocator_type == ME.GPUMemoryAllocatorType.CUDA
    m = ME.CoordinateManager(2, allocator_type=ME.GPUMemoryAllocatorType.PYTORCH)
    assert m.allocator_type == ME.GPUMemoryAllocatorType.PYTORCH
    with pytest.warns(DeprecationWarning, match="set_gpu_allocator"):
        ME.set_memory_manager_backend(ME.GPUMemoryAllocatorType.PYTORCH)
    assert backend_choices.gpu_allocator() == ME.GPUMemoryAllocatorType.PYTORCH


def test_a_new_tensors_manager_gets_the_given_choices():
    c = torch.tensor([[0, 1, 1], [0, 2, 2]], dtype=torch.int32)
    x = ME.SparseTensor(torch.ones(2, 1), c, allocator_type=ME.GPUMemoryAllocatorType.CUDA,
                        minkowski_algorithm=ME.MinkowskiAlgorithm.MEMORY_EFFICIENT)
    mgr = x.coordinate_manager
    assert mgr.allocator_type == ME.GPUMemoryAllocatorType.CUDA
    assert mgr.minkowski_algorithm == ME.MinkowskiAlgorithm.MEMORY_EFFICIENT
    assert mgr.coordinate_map_type == ME.CoordinateMapType.CPU  # CPU coordinates
    f = ME.TensorField(torch.ones(2, 1), c.double())
    assert f.coordinate_manager.coordinate_map_type == ME.CoordinateMapType.CPU


def test_bad_values_name_what_was_expected():
    with pytest.raises(ValueError, match=r"GPUMemoryAllocatorType \(PYTORCH or CUDA\), got 'x'"):
        ME.set_gpu_allocator("x")
    with pytest.raises(ValueError, match=r"CoordinateMapType \(CPU or CUDA\), got 5"):
        ME.CoordinateManager(2, coordinate_map_type=5)
    with pytest.raises(ValueError, match="MinkowskiAlgorithm"):
        ME.CoordinateManager(2, minkowski_algorithm=9)


@pytest.mark.skipif(ME.is_cuda_available(), reason="a build without CUDA")
def test_a_cuda_map_type_needs_a_cuda_build():
    from fieldkit.minkowski.MinkowskiCoordinateManager import set_coordinate_map_type

    assert backend_choices.default_coordinate_map_type() == ME.CoordinateMapType.CPU
    with pytest.raises(ValueError, match="needs fieldkit built with CUDA"):
        set_coordinate_map_type(ME.CoordinateMapType.CUDA)
    with pytest.raises(ValueError, match="needs fieldkit built with CUDA"):
        ME.CoordinateManager(2, coordinate_map_type=ME.CoordinateMapType.CUDA)
    set_coordinate_map_type(ME.CoordinateMapType.CPU)
    assert ME.CoordinateManager(3).coordinate_map_type == ME.CoordinateMapType.CPU


def test_a_cuda_build_warns_that_raw_cudamalloc_is_not_honoured(monkeypatch):
    monkeypatch.setattr(backend_choices._core, "built_with_cuda", lambda: True)
    with pytest.warns(UserWarning, match="not honoured"):
        ME.set_gpu_allocator(ME.GPUMemoryAllocatorType.CUDA)
    assert backend_choices.gpu_allocator() == ME.GPUMemoryAllocatorType.CUDA
    assert ME.CoordinateManager(2, coordinate_map_type=ME.CoordinateMapType.CUDA) \
        .coordinate_map_type == ME.CoordinateMapType.CUDA
