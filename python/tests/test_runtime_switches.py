"""fieldkit's runtime switches: TF32 for fk's CUDA GEMMs (torch's flag does
not reach them) and fk's own allocator cache (torch.cuda.empty_cache does
not free it)."""
import pytest

import fieldkit


def test_tf32_is_fks_own_switch():
    before = fieldkit.allow_tf32()
    try:
        fieldkit.set_allow_tf32(True)
        assert fieldkit.allow_tf32() is True
        fieldkit.set_allow_tf32(False)
        assert fieldkit.allow_tf32() is False
    finally:
        fieldkit.set_allow_tf32(before)
    with pytest.raises(TypeError, match="expected a bool, got int"):
        fieldkit.set_allow_tf32(1)


def test_the_cache_is_emptied_and_counted():
    torch = pytest.importorskip("torch")
    import fieldkit.minkowski as ME
    g = torch.Generator().manual_seed(0)
    coords = torch.cat([torch.zeros(4000, 1, dtype=torch.int32),
                        torch.randint(0, 40, (4000, 3), generator=g, dtype=torch.int32)], 1)
    x = ME.SparseTensor(torch.ones(4000, 64), coords)
    conv = ME.MinkowskiConvolution(64, 64, kernel_size=3, dimension=3)
    y = conv(x)  # fk's allocator served its kernel map and scratch
    del x, y, conv
    stats = fieldkit.memory_stats()
    assert set(stats) == {"allocated", "peak", "reserved", "num_allocs", "cache_hits"}
    assert stats["num_allocs"] > 0 and stats["reserved"] > stats["allocated"]
    fieldkit.empty_cache()
    after = fieldkit.memory_stats(torch.device("cpu"))
    assert after["reserved"] < stats["reserved"]  # the cached blocks went back
    assert after["allocated"] == stats["allocated"]


@pytest.mark.parametrize("bad, err, text", [
    ("gpu", fieldkit.Error, "expected 'cpu', 'cuda' or 'cuda:N', got 'gpu'"),
    (3, TypeError, "expected a device name"),
])
def test_bad_devices_are_refused_by_name(bad, err, text):
    with pytest.raises(err, match=text.replace("(", r"\(")):
        fieldkit.empty_cache(bad)
    with pytest.raises(err, match=text.replace("(", r"\(")):
        fieldkit.memory_stats(bad)


def test_a_cuda_device_this_process_cannot_use_is_refused():
    if fieldkit.cuda_available():
        pytest.skip("a CUDA device is visible")
    with pytest.raises(fieldkit.Error, match="fieldkit.empty_cache device"):
        fieldkit.empty_cache("cuda:0")
