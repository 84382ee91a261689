"""Tensors cross into C++ and back through DLPack without copies."""
import numpy as np
import pytest
import torch

import fieldkit
from fieldkit import _core

DTYPES = [torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64, torch.complex64, torch.complex128]
FK_NAMES = ["i32", "i64", "f16", "bf16", "f32", "f64", "c64", "c128"]


@pytest.mark.parametrize("dtype,fk_name", zip(DTYPES, FK_NAMES))
def test_torch_round_trip_shares_memory(dtype, fk_name):
    x = torch.arange(12).reshape(3, 4).to(dtype)
    assert _core.fk_describe(x)["dtype"] == fk_name
    assert _core.fk_describe(x)["data_ptr"] == x.data_ptr()
    y = _core.roundtrip_torch(x)
    assert y.dtype == dtype and y.shape == x.shape
    assert y.data_ptr() == x.data_ptr()
    x.view(-1)[0] = 7  # one buffer: a write through torch shows in the view
    assert y.view(-1)[0] == 7


def test_fk_memory_reaches_torch_without_copy():
    for name, dtype in [("f32", torch.float32), ("bf16", torch.bfloat16), ("i64", torch.int64)]:
        d = _core.arange_fk(5, name)
        t = d["tensor"]
        assert t.dtype == dtype and t.data_ptr() == d["data_ptr"]
        assert t.tolist() == [0, 1, 2, 3, 4]


def test_fk_memory_outlives_the_call():
    t = _core.arange_fk(1000, "f64")["tensor"]
    other = [torch.ones(1000, dtype=torch.float64) for _ in range(10)]  # reuse pressure
    assert t[999].item() == 999 and len(other) == 10


def test_non_contiguous_views_keep_their_strides():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    for view in (base[:, ::2], base.t(), base[1:3, 2:5]):
        d = _core.fk_describe(view)
        assert d["strides"] == list(view.stride())
        assert d["data_ptr"] == view.data_ptr()
        assert not d["contiguous"]
        back = _core.roundtrip_torch(view)
        assert back.data_ptr() == view.data_ptr() and back.stride() == view.stride()
        assert torch.equal(back, view)


def test_numpy_round_trip_shares_memory():
    a = np.arange(10, dtype=np.float64).reshape(2, 5)
    b = _core.roundtrip_numpy(a)
    assert b.ctypes.data == a.ctypes.data and b.dtype == a.dtype
    assert np.array_equal(a, b)


def test_reversed_numpy_view_is_refused():
    with pytest.raises(ValueError, match="non-negative strides"):
        _core.fk_describe(np.arange(5.0)[::-1])


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="got uint16"):
        _core.fk_describe(np.arange(4, dtype=np.uint16))


def test_cpp_error_becomes_value_error_with_message():
    with pytest.raises(fieldkit.Error) as err:
        _core.arange_fk(3, "f128")
    assert isinstance(err.value, ValueError)
    assert "f128" in str(err.value)


def test_cpp_ops_take_strided_views_as_they_are():
    import fieldkit.minkowski as ME
    from fieldkit._core import minkowski as _mk

    x = ME.SparseTensor(torch.ones(3, 1), torch.tensor([[0, 0, 0], [0, 1, 0], [0, 0, 1]]))
    kmap = x.coordinate_manager.region_kernel_map(x.coordinate_map_key, x.coordinate_map_key,
                                           ME.KernelRegion.cube([3]), False)
    features = torch.randn(3, 4)[:, ::2]
    weight = torch.randn(9, 2, 2).transpose(1, 2)  # (K, C_out, C_in) seen as (K, C_in, C_out)
    out = _mk.conv_forward(features, weight, kmap)
    assert torch.equal(out, _mk.conv_forward(features.contiguous(), weight.contiguous(), kmap))


def test_bool_tensors_follow_torchs_dlpack_support():
    # torch < 2.1 knows no DLPack bool (kDLBool, code 6) and refuses it cleanly
    try:
        t = _core.arange_fk(3, "bool")["tensor"]
    except RuntimeError as err:
        assert "code 6" in str(err)
    else:
        assert t.dtype == torch.bool and t.tolist() == [False, True, True]
    a = _core.roundtrip_numpy(np.array([True, False]))
    assert a.dtype == np.bool_ and a.tolist() == [True, False]


def test_uint8_is_not_taken_for_bool():
    with pytest.raises(TypeError, match="got uint8"):
        _core.fk_describe(np.array([0, 5], dtype=np.uint8))
    with pytest.raises(TypeError, match="got int8"):
        _core.fk_describe(np.array([0, 5], dtype=np.int8))


def test_bfloat16_reaches_numpy_as_float32_values():
    # numpy has no bfloat16: an f32 copy, not an object array wrapping a handle
    a = _core.roundtrip_numpy(torch.tensor([1.5, -2.0, 3.0], dtype=torch.bfloat16))
    assert a.dtype == np.float32 and a.tolist() == [1.5, -2.0, 3.0]


def test_a_negative_count_is_refused_not_a_crash():
    # It sized the storage (n * 8 bytes) before any check: a segfault.
    with pytest.raises(fieldkit.Error, match="a count >= 0"):
        _core.arange_fk(-1, "f32")
    assert _core.arange_fk(3, "int64")["tensor"].tolist() == [0, 1, 2]  # torch's names too
