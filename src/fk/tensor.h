#pragma once
// fk::Tensor: a refcounted handle to (storage, dtype, shape, strides, offset,
// device) plus optional autograd metadata. Views share storage, and with it the
// storage's version counter, which in-place ops bump so that autograd can tell
// when a tensor it saved was modified.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fk/device.h"
#include "fk/dtype.h"
#include "fk/error.h"
#include "fk/shape.h"

namespace fk {

namespace autograd {
class Node;
struct AutogradMeta;
}  // namespace autograd

// A block of memory on one device. Freed through fk's caching allocator unless
// an external deleter was given (memory lent by another framework).
struct Storage {
  Storage(Device d, size_t nbytes);  // allocates from fk's allocator
  Storage(Device d, void* data, size_t nbytes, std::function<void(void*)> deleter);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  std::atomic<uint32_t> version{0};
  std::function<void(void*)> deleter;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Dims shape;
  Dims strides;        // in elements
  int64_t offset = 0;  // in elements
  DType dtype = DType::F32;
  std::unique_ptr<autograd::AutogradMeta> meta;
  ~TensorImpl();
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // --- metadata -----------------------------------------------------------
  const Dims& shape() const { return impl_->shape; }
  const Dims& strides() const { return impl_->strides; }
  int dim() const { return impl_->shape.size(); }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t numel() const { return impl_->shape.numel(); }
  int64_t offset() const { return impl_->offset; }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device; }
  size_t itemsize() const { return fk::itemsize(impl_->dtype); }
  int64_t nbytes() const { return numel() * static_cast<int64_t>(itemsize()); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  uint32_t version() const { return impl_->storage->version.load(std::memory_order_relaxed); }
  void bump_version() const { impl_->storage->version.fetch_add(1, std::memory_order_relaxed); }

  // Raw pointer to the first element (storage + offset).
  void* data_ptr() const {
    return static_cast<char*>(impl_->storage->data) +
           impl_->offset * static_cast<int64_t>(itemsize());
  }
  // Typed pointer; throws when T does not match the dtype.
  template <typename T>
  T* data() const {
    check_dtype(dtype_of<T>(), "Tensor::data<T>");
    return static_cast<T*>(data_ptr());
  }
  // The single element of a one-element tensor, converted to double (real types).
  double item() const;
  // Copies the elements (any layout, any device) into a vector of T (converting).
  template <typename T>
  std::vector<T> to_vector() const;

  // --- autograd -----------------------------------------------------------
  bool requires_grad() const;
  // Leaves only (a non-leaf refuses either value); true wants an inexact dtype.
  Tensor& set_requires_grad(bool r);
  Tensor grad() const;
  // g: the tensor's shape, dtype and device, or undefined to clear the gradient.
  void set_grad(const Tensor& g) const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  bool is_leaf() const;
  // Reverse-mode gradient of this tensor. `grad` defaults to ones for a
  // one-element tensor; `retain_graph` keeps saved tensors for another pass.
  void backward(const Tensor& grad = Tensor(), bool retain_graph = false) const;
  Tensor detach() const;  // shares storage, no autograd history

  // --- views (share storage; differentiable) ------------------------------
  Tensor reshape(const Dims& shape) const;  // a view when the layout allows, else a copy
  Tensor view(const Dims& shape) const;     // a view or an error
  Tensor flatten() const { return reshape({numel()}); }
  Tensor transpose(int64_t d0, int64_t d1) const;
  // A matrix's transpose; a 0-D or 1-D tensor is its own (a view), as
  // torch's; more dims are refused (transpose() names the two).
  Tensor t() const;
  Tensor permute(const Dims& order) const;
  Tensor expand(const Dims& shape) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor real() const;  // complex -> real view of the real parts
  Tensor imag() const;

  // --- copies and conversions (differentiable) ----------------------------
  Tensor contiguous() const;
  Tensor clone() const;
  Tensor to(DType t) const;
  Tensor to(Device d) const;
  // In-place copy from src (broadcast, converting dtype and device).
  Tensor& copy_(const Tensor& src);

  std::string str() const;

  void check_dtype(DType expected, const char* where) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Makes a tensor viewing `storage` with the given geometry.
Tensor make_tensor(std::shared_ptr<Storage> storage, DType dtype, const Dims& shape,
                   const Dims& strides, int64_t offset);

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace fk
