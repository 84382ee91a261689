#pragma once
// nn::Module: the unit networks are built from. A module owns parameters
// (trainable fk tensors, leaves that require grad), buffers (state that is
// saved but not trained, e.g. BatchNorm's running statistics) and named
// children. Names are dotted paths ("block1.conv2.weight"), in registration
// order, so two instances of one architecture list the same names in the same
// order: that is what a checkpoint (checkpoint.h) and an optimizer rely on.
//
// Tensors are handles: the ones registered here are the ones layers compute
// with, so optimizers and load_state update them in place (under no-grad) and
// every holder sees the new values.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fk/tensor.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski::nn {

using NamedTensors = std::vector<std::pair<std::string, fk::Tensor>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  NamedTensors named_parameters() const;
  std::vector<fk::Tensor> parameters() const;
  NamedTensors named_buffers() const;
  // Parameters then buffers: what a checkpoint holds.
  NamedTensors state() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }

  // Train mode (the default) vs eval mode: BatchNorm uses batch or running
  // statistics, Dropout drops or passes through. Applies to every descendant.
  void train(bool on = true);
  void eval() { train(false); }
  bool training() const { return training_; }

  // Clears every parameter's gradient (undefined, as after construction).
  void zero_grad();
  // Moves every parameter and buffer (and a parameter's gradient) to `device`
  // in place: each tensor keeps its handle, dtype, shape and requires_grad,
  // and gets a contiguous copy of its values on `device` as its storage, so
  // the layers, the optimizer and every other holder of the handle compute on
  // `device` from then on. Autograd graphs recorded before the move must not
  // be run backward after it (their saved versions no longer match). All or
  // none (move_in_place.h): every copy is made before any storage changes, so
  // an unavailable device (fk refuses the allocation: an fk::Error) or memory
  // running out partway leaves every tensor where it was.
  void to(fk::Device device);
  int64_t num_parameters() const;

 protected:
  fk::Tensor register_parameter(std::string name, fk::Tensor t);
  fk::Tensor register_buffer(std::string name, fk::Tensor t);
  template <typename M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m) {
    add_child(std::move(name), m);
    return m;
  }

 private:
  void add_child(std::string name, std::shared_ptr<Module> m);
  void collect(const std::string& prefix, bool parameters, NamedTensors& out) const;

  NamedTensors parameters_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// A module mapping one sparse tensor to another (layers, blocks, networks).
class SparseModule : public Module {
 public:
  virtual SparseTensor forward(const SparseTensor& x) = 0;
  SparseTensor operator()(const SparseTensor& x) { return forward(x); }
};

// Runs its children in order.
class Sequential : public SparseModule {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<SparseModule>> layers);
  void push_back(std::shared_ptr<SparseModule> layer);
  SparseTensor forward(const SparseTensor& x) override;
  size_t size() const { return layers_.size(); }

 private:
  std::vector<std::shared_ptr<SparseModule>> layers_;
};

}  // namespace minkowski::nn
