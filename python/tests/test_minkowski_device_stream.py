"""The device and stream reach fk: a tensor crosses with its DLPack device,
and every tensor handed to C++ by a CUDA tensor's op first lends torch's
current stream on that device to fk (checked by its wiring on a CPU-only
torch; in a CUDA build, by the stream fk then holds)."""
import threading
import types

import pytest
import torch

import fieldkit
import fieldkit.minkowski as ME
from fieldkit.minkowski import functional


class FakeCudaTensor:
    is_cuda = True
    device = torch.device("cuda", 1)


def test_a_cuda_tensor_lends_torchs_current_stream(monkeypatch):
    lent, streams = [], []

    def current_stream(device):
        streams.append(device)
        return types.SimpleNamespace(cuda_stream=0x5A5A)

    monkeypatch.setattr(functional, "_lend", lambda device, stream: lent.append((device, stream)))
    monkeypatch.setattr(functional, "_capsule", lambda t: "capsule")
    monkeypatch.setattr(torch.cuda, "current_stream", current_stream)
    assert functional._plain(FakeCudaTensor()) == "capsule"
    assert lent == [(1, 0x5A5A)] and streams == [torch.device("cuda", 1)]
    functional._plain(torch.zeros(2))  # a CPU tensor lends nothing
    assert lent == [(1, 0x5A5A)]


class CudaLooking(torch.Tensor):
    """A CPU tensor that answers as one on cuda:1 to the Python layer (its
    DLPack export, and so what C++ reads, stays on the host: torch's own
    export would read the overridden device, which a CUDA torch acts on)."""
    is_cuda = True
    device = torch.device("cuda", 1)

    def __dlpack_device__(self):
        return self.as_subclass(torch.Tensor).__dlpack_device__()

    def __dlpack__(self, *args, **kwargs):
        return self.as_subclass(torch.Tensor).__dlpack__(*args, **kwargs)


def recorded_lending(monkeypatch):
    lent = []
    monkeypatch.setattr(functional, "_lend", lambda device, stream: lent.append((device, stream)))
    monkeypatch.setattr(torch.cuda, "current_stream",
                        lambda device: types.SimpleNamespace(cuda_stream=0x5A5A))
    return lent


def test_cuda_tensors_handed_to_cpp_as_they_are_lend_the_stream(monkeypatch):
    """The calls that pass torch tensors straight to C++ (not through _plain)
    lend torch's current stream too: nanobind's DLPack import makes torch wait
    on nothing, so fk must read them on the stream that wrote them."""
    lent = recorded_lending(monkeypatch)
    c = torch.tensor([[0, 0, 0], [0, 1, 0], [0, 1, 0]], dtype=torch.int32)
    key, unique, inverse = ME.CoordinateManager(D=2).insert(c.as_subclass(CudaLooking))
    assert lent == [(1, 0x5A5A)] and unique.tolist() == [0, 1] and inverse.tolist() == [0, 1, 1]
    lent.clear()
    q = ME.utils.sparse_quantize(c.as_subclass(CudaLooking),
                                 quantization_mode=ME.SparseTensorQuantizationMode.FIRST_OCCURRENCE)
    assert lent == [(1, 0x5A5A)] and q.tolist() == [[0, 0, 0], [0, 1, 0]]
    lent.clear()
    b = ME.utils.batched_coordinates([c[:, 1:].as_subclass(CudaLooking)])
    assert lent == [(1, 0x5A5A)] and b.tolist() == [[0, 0, 0], [0, 1, 0], [0, 1, 0]]
    lent.clear()
    functional._coo(torch.tensor([0, 1]).as_subclass(CudaLooking), torch.tensor([1, 0]), (2, 2))
    assert lent == [(1, 0x5A5A)]
    lent.clear()
    ME.CoordinateManager(D=2).insert(c)  # CPU coordinates lend nothing
    assert lent == []


def test_the_cpu_ops_lend_nothing(monkeypatch):
    lent = []
    monkeypatch.setattr(functional, "_lend", lambda device, stream: lent.append(device))
    x = ME.SparseTensor(torch.randn(3, 2, requires_grad=True),
                        torch.tensor([[0, 0, 0], [0, 1, 0], [1, 0, 1]], dtype=torch.int32))
    ME.MinkowskiConvolution(2, 2, kernel_size=3, dimension=2)(x).F.sum().backward()
    assert lent == []


@pytest.mark.skipif(fieldkit._core.built_with_cuda(), reason="a CPU-only build's refusal")
def test_a_cpu_only_build_refuses_a_stream_naming_the_device():
    with pytest.raises(fieldkit.Error, match="CPU-only build.*cuda:3"):
        fieldkit._core.lend_cuda_stream(3, 0x5A5A)
    assert fieldkit._core.cuda_stream(0) == 0


@pytest.mark.skipif(not fieldkit._core.built_with_cuda(), reason="a CUDA build's lent streams")
def test_a_lent_stream_is_the_lending_threads_only():
    # As torch's current stream: per device and per thread, so that a thread
    # (or torch's autograd device thread) lending its stream moves no other
    # thread's ops. Storing the handle needs no GPU.
    before = fieldkit._core.cuda_stream(0)
    seen = {}

    def lend_elsewhere():
        seen["start"] = fieldkit._core.cuda_stream(0)
        fieldkit._core.lend_cuda_stream(0, 0x5A5A)
        seen["lent"] = fieldkit._core.cuda_stream(0)

    t = threading.Thread(target=lend_elsewhere)
    t.start()
    t.join()
    assert seen == {"start": 0, "lent": 0x5A5A}
    assert fieldkit._core.cuda_stream(0) == before


@pytest.mark.skipif(fieldkit._core.built_with_cuda(), reason="a CPU-only build's answer")
def test_a_cpu_only_build_reports_no_cuda():
    assert fieldkit._core.cuda_device_count() == 0
    assert fieldkit.cuda_available() is False


@pytest.mark.skipif(not (fieldkit._core.built_with_cuda() and torch.cuda.is_available()),
                    reason="needs a CUDA build and a CUDA torch")
def test_fk_runs_on_torchs_stream():
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        functional._plain(torch.zeros(2, device="cuda"))
        assert fieldkit._core.cuda_stream(torch.cuda.current_device()) == s.cuda_stream
    functional._plain(torch.zeros(2, device="cuda"))
    assert fieldkit._core.cuda_stream(torch.cuda.current_device()) == \
        torch.cuda.current_stream().cuda_stream


def test_dlpack_carries_the_device():
    d = fieldkit._core.fk_describe(torch.zeros(2, 3))
    assert d["shape"] == [2, 3] and d["device"] == "cpu"


def test_device_arguments_reach_the_tensors():
    # "meta" stands for an accelerator on a CPU-only torch: no C++ call reads it
    coords = [torch.tensor([[0, 1], [2, 3]]), torch.tensor([[4, 5]])]
    feats = [torch.ones(2, 3), torch.ones(1, 3)]
    bc = ME.utils.batched_coordinates(coords, device="meta")
    assert bc.device.type == "meta" and bc.dtype == torch.int32 and bc.shape == (3, 3)
    bc, bf, bl = ME.utils.sparse_collate(coords, feats, [torch.zeros(2), torch.ones(1)],
                                         device="meta")
    assert bc.device.type == bf.device.type == bl.device.type == "meta"
    assert ME.utils.sparse_collate(coords, feats)[1].device.type == "cpu"
    pts = torch.tensor([[0, 0.5, 0.5], [0, 1.5, 0.5]])
    assert ME.TensorField(torch.ones(2, 1), pts, device="meta").F.device.type == "meta"
