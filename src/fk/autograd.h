#pragma once
// Reverse-mode autograd. A differentiable op is a pure forward and a pure
// backward (functions on tensors) plus a thin Node that holds what the backward
// needs and calls it. Engines add their own nodes the same way (a convolution
// with its kernel map, a heat solve with its trajectory and discrete adjoint).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fk/device.h"
#include "fk/tensor.h"

namespace fk::autograd {

struct Edge {
  std::shared_ptr<Node> fn;  // null: that input needs no gradient
  uint32_t input_nr = 0;     // which output of `fn` this gradient feeds
  Device device = kCPU;      // the input's: the engine refuses a gradient elsewhere
};

// A tensor saved for backward, with the storage version it had when saved.
// unpack() throws fk::Error when the tensor was modified in place since.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t);  // NOLINT: implicit from Tensor is the point
  const Tensor& unpack(const char* node_name) const;
  const Tensor& tensor() const { return t_; }
  void reset() { t_ = Tensor(); }
  bool defined() const { return t_.defined(); }

 private:
  Tensor t_;
  uint32_t version_ = 0;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  // Frees the chain of nodes only this one holds iteratively: a recursive
  // teardown of a 150k-op graph overflowed the stack.
  virtual ~Node();
  // Gradients w.r.t. this node's inputs, one per edge (undefined where none),
  // from the gradients w.r.t. its outputs (undefined where nothing flowed).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  virtual const char* name() const = 0;
  // Every SavedTensor the node holds, for memory accounting and release.
  virtual void for_each_saved(const std::function<void(SavedTensor&)>& fn) { (void)fn; }
  // Frees what backward needed (after a pass without retain_graph).
  virtual void release_saved() {
    for_each_saved([](SavedTensor& s) { s.reset(); });
    released_ = true;
  }
  bool released() const { return released_; }

  std::vector<Edge> next;
  uint32_t num_outputs = 1;

 private:
  friend struct Engine;
  std::atomic<bool> released_{false};
  // Held by a pass while it runs this node (apply, then release): passes on
  // several threads through one graph take turns here, and the second one
  // after a release gets the freed-graph error, not freed tensors.
  std::mutex run_mutex_;
  // Where the pass that last reached this node keeps its scratch: a hint a
  // pass checks against its own records (a nested pass or another thread's
  // may have written it since), so a pass needs no hash map.
  std::atomic<int64_t> visit_hint_{-1};
};

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  uint32_t output_nr = 0;
  std::weak_ptr<Node> accumulator;  // a leaf's AccumulateGrad node, shared by its graphs
};

// --- grad mode ------------------------------------------------------------
bool grad_enabled();
void set_grad_enabled(bool on);

class NoGradGuard {
 public:
  NoGradGuard() : prev_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

class EnableGradGuard {
 public:
  EnableGradGuard() : prev_(grad_enabled()) { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

// --- recording ------------------------------------------------------------
inline bool tensor_requires_grad(const Tensor& t) {
  return t.defined() && t.impl()->meta && t.impl()->meta->requires_grad;
}
// True when grad mode is on and any input requires grad: the op must record.
template <typename... Ts>
bool needs_grad(const Ts&... inputs) {
  return grad_enabled() && (tensor_requires_grad(inputs) || ...);
}
bool any_needs_grad(const std::vector<Tensor>& inputs);

// The edge a gradient for `t` flows along (its grad_fn, or its leaf accumulator).
Edge edge_of(const Tensor& t);
// Wires `node` to its inputs and makes it the grad_fn of `outputs`.
void record(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs);
inline void record(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
                   Tensor& output) {
  record(node, inputs, std::vector<Tensor*>{&output});
}

// --- running --------------------------------------------------------------
// A pass keeps its dependency counts and gradient buffers to itself, so a node's
// backward may run autograd::grad (a nested pass through shared leaves), and
// passes may run on several threads at once: a leaf's accumulation is locked,
// and each node runs under its own lock, so two threads may run backward
// through one graph (with retain_graph; without, the one that comes second
// to a node finds it freed and gets an fk::Error, as torch).
//
// Computes gradients of `roots` (seeded by `grads`) and accumulates them into
// the .grad of the leaves that require grad.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
              bool retain_graph = false);
// Returns d(sum roots·grads)/d(inputs) without touching any .grad; an input
// the roots do not depend on gets an undefined tensor.
std::vector<Tensor> grad(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                         const std::vector<Tensor>& inputs, bool retain_graph = false);

// Bytes held by the tensors the graph behind `t` saved for backward, each
// storage counted once (what a gradient mode costs in memory).
struct SavedStats {
  int64_t bytes = 0;
  int64_t tensors = 0;   // saved tensor references
  int64_t storages = 0;  // unique storages among them
  int64_t nodes = 0;
};
SavedStats saved_stats(const Tensor& t);

// Reduces a gradient of a broadcast result back to the input's shape.
Tensor sum_to(const Tensor& grad, const Dims& shape);

}  // namespace fk::autograd
