#include "fk/tensor.h"

#include <fmt/format.h>
#include <sstream>

#include "fk/autograd.h"
#include "fk/memory.h"
#include "fk/object_pool.h"
#include "fk/ops/copy.h"
#include "fk/ops/view.h"
#include "fk/print.h"
#include "fk/sync_debug.h"

namespace fk {

Storage::Storage(Device d, size_t n) : data(allocate(d, n)), nbytes(n), device(d) {}

Storage::Storage(Device d, void* p, size_t n, std::function<void(void*)> del)
    : data(p), nbytes(n), device(d), deleter(std::move(del)) {}

Storage::~Storage() {
  if (deleter) {
    deleter(data);
  } else {
    deallocate(device, data, nbytes);
  }
}

TensorImpl::~TensorImpl() = default;

Tensor make_tensor(std::shared_ptr<Storage> storage, DType dtype, const Dims& shape,
                   const Dims& strides, int64_t offset) {
  auto impl = std::allocate_shared<TensorImpl>(PoolAllocator<TensorImpl>());
  impl->storage = std::move(storage);
  impl->dtype = dtype;
  impl->shape = shape;
  impl->strides = strides;
  impl->offset = offset;
  return Tensor(std::move(impl));
}

// A 0-d tensor has no dim to name (wrap_dim takes dim 0 of one, for
// reductions: size(0) read past the shape).
int64_t Tensor::size(int64_t d) const {
  FK_CHECK(dim() > 0, "Tensor::size", "a tensor with at least one dim", "a 0-d tensor");
  return shape()[wrap_dim(d, dim(), "Tensor::size")];
}
int64_t Tensor::stride(int64_t d) const {
  FK_CHECK(dim() > 0, "Tensor::stride", "a tensor with at least one dim", "a 0-d tensor");
  return strides()[wrap_dim(d, dim(), "Tensor::stride")];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  const Dims& sh = shape();
  const Dims& st = strides();
  for (int i = sh.size() - 1; i >= 0; --i) {
    if (sh[i] == 1) continue;
    if (st[i] != expected) return false;
    expected *= sh[i];
  }
  return true;
}

void Tensor::check_dtype(DType expected, const char* where) const {
  FK_CHECK(dtype() == expected, where, std::string("dtype ") + name(expected),
           std::string("dtype ") + name(dtype()));
}

double Tensor::item() const {
  FK_CHECK(numel() == 1, "Tensor::item", "a tensor with one element", "shape " + shape().str());
  FK_CHECK(!is_complex(dtype()), "Tensor::item", "a real dtype", name(dtype()));
  const HostRead read("Tensor::item", device());  // FK_SYNC_DEBUG
  return to_vector<double>()[0];
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  const HostRead read("Tensor::to_vector", device());  // FK_SYNC_DEBUG
  Tensor c = to(kCPU).to(dtype_of<T>()).contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}
template std::vector<bool> Tensor::to_vector<bool>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<c64> Tensor::to_vector<c64>() const;
template std::vector<c128> Tensor::to_vector<c128>() const;

// --- autograd accessors -----------------------------------------------------

bool Tensor::requires_grad() const {
  return autograd::tensor_requires_grad(*this);
}

Tensor& Tensor::set_requires_grad(bool r) {
  if (r) {
    FK_CHECK(is_inexact(dtype()), "set_requires_grad", "a floating or complex dtype",
             name(dtype()));
  }
  // Either way on a non-leaf: it would keep its grad_fn (switching it off did
  // not take it out of the graph).
  FK_CHECK(!grad_fn(), "set_requires_grad", "a leaf tensor",
           std::string("the output of ") + grad_fn()->name() + " (use detach())");
  if (!impl_->meta) {
    if (!r) return *this;
    impl_->meta = std::make_unique<autograd::AutogradMeta>();
  }
  impl_->meta->requires_grad = r;
  return *this;
}

Tensor Tensor::grad() const {
  return impl_->meta ? impl_->meta->grad : Tensor();
}

void Tensor::set_grad(const Tensor& g) const {
  // A gradient of another shape was broadcast into by the next backward.
  if (g.defined()) {
    FK_CHECK(g.shape() == shape() && g.dtype() == dtype() && g.device() == device(), "set_grad",
             fmt::format("a gradient of the tensor's shape {}, dtype {} and device {}",
                         shape().str(), name(dtype()), device().str()),
             fmt::format("shape {}, dtype {} on {}", g.shape().str(), name(g.dtype()),
                         g.device().str()));
  }
  if (!impl_->meta) impl_->meta = std::make_unique<autograd::AutogradMeta>();
  impl_->meta->grad = g;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  return impl_->meta ? impl_->meta->grad_fn : nullptr;
}

bool Tensor::is_leaf() const {
  return !grad_fn();
}

void Tensor::backward(const Tensor& g, bool retain_graph) const {
  autograd::backward({*this}, {g}, retain_graph);
}

Tensor Tensor::detach() const {
  return make_tensor(storage(), dtype(), shape(), strides(), offset());
}

// --- views and copies: thin forwards to the ops --------------------------

Tensor Tensor::reshape(const Dims& s) const {
  return fk::reshape(*this, s);
}
Tensor Tensor::view(const Dims& s) const {
  return fk::view(*this, s);
}
Tensor Tensor::transpose(int64_t a, int64_t b) const {
  return fk::transpose(*this, a, b);
}
Tensor Tensor::t() const {
  FK_CHECK(dim() <= 2, "t", "a tensor of at most 2 dims (transpose(d0, d1) for more)",
           shape().str());
  return dim() < 2 ? view(shape()) : transpose(0, 1);
}
Tensor Tensor::permute(const Dims& o) const {
  return fk::permute(*this, o);
}
Tensor Tensor::expand(const Dims& s) const {
  return fk::expand(*this, s);
}
Tensor Tensor::squeeze() const {
  return fk::squeeze(*this);
}
Tensor Tensor::squeeze(int64_t d) const {
  return fk::squeeze(*this, d);
}
Tensor Tensor::unsqueeze(int64_t d) const {
  return fk::unsqueeze(*this, d);
}
Tensor Tensor::narrow(int64_t d, int64_t s, int64_t l) const {
  return fk::narrow(*this, d, s, l);
}
Tensor Tensor::slice(int64_t d, int64_t s, int64_t e, int64_t st) const {
  return fk::slice(*this, d, s, e, st);
}
Tensor Tensor::select(int64_t d, int64_t i) const {
  return fk::select(*this, d, i);
}
Tensor Tensor::real() const {
  return fk::real(*this);
}
Tensor Tensor::imag() const {
  return fk::imag(*this);
}
Tensor Tensor::contiguous() const {
  return fk::contiguous(*this);
}
Tensor Tensor::clone() const {
  return fk::clone(*this);
}
Tensor Tensor::to(DType t) const {
  return fk::to_dtype(*this, t);
}
Tensor Tensor::to(Device d) const {
  return fk::to_device(*this, d);
}
Tensor& Tensor::copy_(const Tensor& src) {
  fk::copy_(*this, src);
  return *this;
}

std::string Tensor::str() const {
  return to_string(*this);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  return os << t.str();
}

}  // namespace fk
