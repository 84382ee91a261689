#include "tensor_bridge.h"
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <string>
#include <utility>
#include "fk/cuda/runtime.h"
#include "fk/cuda/versions.h"
#include "fk/error.h"
#include "fk/factory.h"

namespace fkpy {
namespace {

namespace dl = nb::dlpack;

// A DLPack dtype by the name numpy and torch give it (uint8, int8,
// float128, ...), or by its codes where it has none.
std::string dtype_str(dl::dtype d) {
  using C = dl::dtype_code;
  static const std::pair<C, const char*> kKinds[] = {{C::Int, "int"},         {C::UInt, "uint"},
                                                     {C::Float, "float"},     {C::Bfloat, "bfloat"},
                                                     {C::Complex, "complex"}, {C::Bool, "bool"}};
  for (const auto& [code, kind] : kKinds)
    if (static_cast<C>(d.code) == code && d.lanes == 1) return kind + std::to_string(d.bits);
  return "DLPack dtype (code " + std::to_string(d.code) + ", " + std::to_string(d.bits) +
         " bits, " + std::to_string(d.lanes) + " lanes)";
}

fk::DType fk_dtype(dl::dtype d) {
  using C = dl::dtype_code;
  const auto code = static_cast<C>(d.code);
  if (d.lanes == 1) {
    if (code == C::Bool && d.bits == 8) return fk::DType::Bool;
    if (code == C::Int && d.bits == 32) return fk::DType::I32;
    if (code == C::Int && d.bits == 64) return fk::DType::I64;
    if (code == C::Float && d.bits == 16) return fk::DType::F16;
    if (code == C::Bfloat && d.bits == 16) return fk::DType::BF16;
    if (code == C::Float && d.bits == 32) return fk::DType::F32;
    if (code == C::Float && d.bits == 64) return fk::DType::F64;
    if (code == C::Complex && d.bits == 64) return fk::DType::C64;
    if (code == C::Complex && d.bits == 128) return fk::DType::C128;
  }
  throw nb::type_error(("fieldkit: expected a tensor of bool, int32, int64, float16, bfloat16, "
                        "float32, float64, complex64 or complex128, got " +
                        dtype_str(d))
                           .c_str());
}

dl::dtype dl_dtype(fk::DType t) {
  using C = dl::dtype_code;
  auto make = [](C c, int bits) {
    return dl::dtype{static_cast<uint8_t>(c), static_cast<uint8_t>(bits), 1};
  };
  switch (t) {
    case fk::DType::Bool:
      return make(C::Bool, 8);
    case fk::DType::I32:
      return make(C::Int, 32);
    case fk::DType::I64:
      return make(C::Int, 64);
    case fk::DType::F16:
      return make(C::Float, 16);
    case fk::DType::BF16:
      return make(C::Bfloat, 16);
    case fk::DType::F32:
      return make(C::Float, 32);
    case fk::DType::F64:
      return make(C::Float, 64);
    case fk::DType::C64:
      return make(C::Complex, 64);
    case fk::DType::C128:
      return make(C::Complex, 128);
  }
  throw fk::Error("fieldkit: unknown fk dtype");
}

fk::Device fk_device(int type, int id) {
  if (type == nb::device::cpu::value) return fk::kCPU;
  if (type == nb::device::cuda::value) return fk::cuda_device(id);
  throw nb::type_error(
      ("fieldkit: expected a CPU or CUDA tensor, got DLPack device type " + std::to_string(type))
          .c_str());
}

// DLPack's DLManagedTensor (a stable C ABI): what a "dltensor" capsule holds.
struct ManagedTensor {
  dl::dltensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor*);
};

// One export to torch: the managed tensor, the fk tensor it views and the
// geometry arrays it points into.
struct TorchExport {
  ManagedTensor managed;
  fk::Tensor tensor;
  int64_t shape[fk::kMaxDims], strides[fk::kMaxDims];
};

// torch.utils.dlpack.from_dlpack checks its argument in Python before it
// calls torch._C._from_dlpack; a capsule needs none of that (about 1.5 us a
// call). Held for the life of the process (never destroyed after exit).
nb::handle torch_from_capsule() {
  static nb::object* fn =
      new nb::object(nb::module_::import_("torch").attr("_C").attr("_from_dlpack"));
  return *fn;
}

nb::object export_to_torch(const fk::Tensor& t) {
  auto* e = new TorchExport{};
  e->tensor = t.detach();
  const int nd = t.dim();
  for (int i = 0; i < nd; ++i) {
    e->shape[i] = t.size(i);
    e->strides[i] = t.stride(i);
  }
  const fk::Device dev = t.device();
  dl::dltensor& d = e->managed.dl_tensor;
  d.data = t.data_ptr();
  d.device = {dev.is_cuda() ? nb::device::cuda::value : nb::device::cpu::value, dev.index};
  d.ndim = nd;
  d.dtype = dl_dtype(t.dtype());
  d.shape = e->shape;
  d.strides = e->strides;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](ManagedTensor* m) { delete static_cast<TorchExport*>(m->manager_ctx); };
  // Freed here unless torch consumed it (then torch calls the deleter).
  PyObject* cap = PyCapsule_New(&e->managed, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* m = static_cast<ManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      m->deleter(m);
    }
  });
  if (!cap) {
    delete e;
    throw nb::python_error();
  }
  return torch_from_capsule()(nb::steal(cap));
}

}  // namespace

fk::Tensor from_dlpack(const nb::ndarray<nb::ro>& array) {
  const fk::DType dtype = fk_dtype(array.dtype());
  const fk::Device device = fk_device(array.device_type(), array.device_id());
  const size_t nd = array.ndim();
  if (nd > static_cast<size_t>(fk::kMaxDims))
    throw nb::value_error(("fieldkit: expected at most " + std::to_string(fk::kMaxDims) +
                           " dimensions, got " + std::to_string(nd))
                              .c_str());
  fk::Dims shape, strides;
  int64_t extent = 1;  // elements spanned, from the first to one past the last
  bool empty = false;
  for (size_t i = 0; i < nd; ++i) {
    const int64_t n = static_cast<int64_t>(array.shape(i));
    const int64_t s = array.stride(i);
    if (s < 0 && n > 1)
      throw nb::value_error(
          "fieldkit: expected non-negative strides, got a reversed view (copy it first)");
    shape.push_back(n);
    strides.push_back(s < 0 ? 0 : s);
    if (n == 0) empty = true;
    extent += (n - 1) * (s < 0 ? 0 : s);
  }
  const size_t nbytes = empty ? 0 : static_cast<size_t>(extent) * fk::itemsize(dtype);
  // The deleter owns a reference to the DLPack handle; it may run on any
  // thread, after any Python frame that made it is gone.
  auto* keep = new nb::ndarray<nb::ro>(array);
  auto storage = std::make_shared<fk::Storage>(
      device, const_cast<void*>(static_cast<const void*>(array.data())), nbytes, [keep](void*) {
        nb::gil_scoped_acquire gil;
        delete keep;
      });
  return fk::make_tensor(std::move(storage), dtype, shape, strides, 0);
}

nb::object to_framework(const fk::Tensor& t, Framework framework) {
  FK_CHECK(t.defined(), "fieldkit.to_framework", "a defined tensor", "an undefined tensor");
  if (framework == Framework::Torch) return export_to_torch(t);
  const int nd = t.dim();
  size_t shape[fk::kMaxDims];
  int64_t strides[fk::kMaxDims];
  for (int i = 0; i < nd; ++i) {
    shape[i] = static_cast<size_t>(t.size(i));
    strides[i] = t.stride(i);
  }
  // The capsule owns a reference to fk's storage (a copy of the handle).
  auto* held = new fk::Tensor(t.detach());
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<fk::Tensor*>(p); });
  const fk::Device dev = t.device();
  const int dev_type = dev.is_cuda() ? nb::device::cuda::value : nb::device::cpu::value;
  nb::ndarray<nb::numpy> a(t.data_ptr(), nd, shape, owner, strides, dl_dtype(t.dtype()), dev_type,
                           dev.index);
  return a.cast();
}

void bind_tensor(nb::module_& m) {
  // Views a DLPack producer as an fk tensor and hands it back to torch: the
  // round trip the tests use to show that nothing is copied.
  m.def(
      "roundtrip_torch", [](nb::ndarray<nb::ro> a) { return to_torch(from_dlpack(a)); },
      nb::arg("tensor"));
  m.def(
      "roundtrip_numpy", [](nb::ndarray<nb::ro> a) { return to_numpy(from_dlpack(a)); },
      nb::arg("array"));
  m.def(
      "fk_describe",
      [](nb::ndarray<nb::ro> a) {
        fk::Tensor t = from_dlpack(a);
        nb::dict d;
        d["dtype"] = fk::name(t.dtype());
        d["device"] = t.device().str();
        d["shape"] = std::vector<int64_t>(t.shape().begin(), t.shape().end());
        d["strides"] = std::vector<int64_t>(t.strides().begin(), t.strides().end());
        d["data_ptr"] = reinterpret_cast<uintptr_t>(t.data_ptr());
        d["contiguous"] = t.is_contiguous();
        return d;
      },
      nb::arg("tensor"));
  // torch's current CUDA stream lent to fk for a device's ops (fk launches
  // on it, so the sparse ops order with torch's own work). A CPU-only build
  // refuses: a CUDA tensor cannot run there.
  m.def(
      "lend_cuda_stream",
      [](int device, uintptr_t stream) {
        FK_CHECK(fk::cuda::built_with_cuda(), "fieldkit.lend_cuda_stream",
                 "a fieldkit built with CUDA",
                 "a CPU-only build (a tensor on cuda:" + std::to_string(device) + ")");
        fk::cuda::set_current_stream(device, reinterpret_cast<void*>(stream));
      },
      nb::arg("device"), nb::arg("stream"));
  m.def(
      "cuda_stream",
      [](int device) { return reinterpret_cast<uintptr_t>(fk::cuda::current_stream(device)); },
      nb::arg("device"));
  m.def("built_with_cuda", &fk::cuda::built_with_cuda);
  m.def("cuda_versions", [] {  // {built, runtime, driver}: 1000 major + 10 minor, -1 CPU-only
    const fk::cuda::Versions v = fk::cuda::versions();
    nb::dict d;
    d["built"] = v.built;
    d["runtime"] = v.runtime;
    d["driver"] = v.driver;
    return d;
  });
  m.def("cuda_device_count", &fk::cuda::device_count);
  // A fresh fk tensor (fk's allocator) of the given dtype name, filled with
  // 0, 1, 2, ...: shows that fk's own memory reaches torch without a copy.
  m.def(
      "arange_fk",
      [](int64_t n, const std::string& dtype) {
        FK_CHECK(n >= 0, "arange_fk", "a count >= 0", std::to_string(n));  // it sized storage
        fk::Tensor t = fk::empty({n}, {fk::DType::F64});
        double* p = t.data<double>();
        for (int64_t i = 0; i < n; ++i) p[i] = static_cast<double>(i);
        fk::Tensor c = t.to(fk::dtype_from_name(dtype));
        nb::dict d;
        d["tensor"] = to_torch(c);
        d["data_ptr"] = reinterpret_cast<uintptr_t>(c.data_ptr());
        return d;
      },
      nb::arg("n"), nb::arg("dtype") = "f32");
}

}  // namespace fkpy
