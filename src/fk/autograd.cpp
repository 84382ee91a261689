#include "fk/autograd.h"

#include <unordered_map>
#include <unordered_set>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/copy.h"
#include "fk/ops/reduce.h"

namespace fk::autograd {
namespace {

thread_local bool g_grad_enabled = true;

// Sink of a leaf's gradient: adds it into the leaf's .grad.
struct AccumulateGrad : Node {
  std::weak_ptr<TensorImpl> leaf;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    auto impl = leaf.lock();
    if (!impl || !g[0].defined()) return {};
    Tensor var(impl);
    Tensor gi = g[0];
    if (gi.dtype() != var.dtype()) {
      if (is_complex(gi.dtype()) && !is_complex(var.dtype())) gi = gi.real();
      gi = gi.to(var.dtype());
    }
    FK_CHECK(gi.shape() == var.shape(), "gradient accumulation",
             "a gradient of shape " + var.shape().str(), gi.shape().str());
    Tensor prev = var.grad();
    var.set_grad(prev.defined() ? add(prev, gi) : gi.clone());
    return {};
  }
  const char* name() const override { return "AccumulateGrad"; }
  void release_saved() override {}  // shared by every graph the leaf enters; saves nothing
};

std::shared_ptr<Node> accumulator_of(const Tensor& t) {
  AutogradMeta* m = t.impl()->meta.get();
  auto acc = m->accumulator.lock();
  if (!acc) {
    auto a = std::make_shared<AccumulateGrad>();
    a->leaf = t.impl_ptr();
    a->num_outputs = 1;
    acc = a;
    m->accumulator = acc;
  }
  return acc;
}

Tensor accumulate(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return add(a, b);
}

struct EdgeKey {
  Node* fn;
  uint32_t nr;
  bool operator==(const EdgeKey&) const = default;
};
struct EdgeKeyHash {
  size_t operator()(const EdgeKey& k) const {
    return std::hash<Node*>()(k.fn) ^ (static_cast<size_t>(k.nr) << 1);
  }
};

// Runs the graph from the roots. With `captures`, gradients arriving at those
// edges are returned instead of being accumulated into leaves.
std::vector<Tensor> run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                                 bool retain_graph, const std::vector<Edge>* captures) {
  FK_CHECK(roots.size() == grads.size(), "backward", std::to_string(roots.size()) + " gradients",
           std::to_string(grads.size()));
  NoGradGuard no_grad;
  std::vector<Edge> root_edges;
  std::vector<Tensor> root_grads;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    FK_CHECK(tensor_requires_grad(r), "backward", "a tensor that requires grad",
             "one that does not (no input of it requires grad)");
    Tensor g = grads[i];
    if (!g.defined()) {
      FK_CHECK(r.numel() == 1, "backward", "a gradient argument for a non-scalar output",
               "none for shape " + r.shape().str());
      g = ones_like(r);
    }
    FK_CHECK(g.shape() == r.shape(), "backward", "a gradient of shape " + r.shape().str(),
             g.shape().str());
    root_edges.push_back(edge_of(r));
    root_grads.push_back(g);
  }

  // Dependencies: how many edges point at each node.
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::shared_ptr<Node>> owners;
  std::vector<Node*> stack;
  for (auto& e : root_edges) {
    if (e.fn && owners.emplace(e.fn.get(), e.fn).second) stack.push_back(e.fn.get());
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (auto& e : n->next) {
      if (!e.fn) continue;
      ++deps[e.fn.get()];
      if (owners.emplace(e.fn.get(), e.fn).second) stack.push_back(e.fn.get());
    }
  }

  std::unordered_map<EdgeKey, size_t, EdgeKeyHash> capture_index;
  std::vector<Tensor> captured;
  std::unordered_set<Node*> capture_nodes;
  if (captures) {
    captured.resize(captures->size());
    for (size_t i = 0; i < captures->size(); ++i) {
      const Edge& e = (*captures)[i];
      if (!e.fn) continue;
      capture_index[{e.fn.get(), e.input_nr}] = i;
      capture_nodes.insert(e.fn.get());
    }
  }

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  auto add_grad = [&](const Edge& e, const Tensor& g) {
    auto& buf = buffers[e.fn.get()];
    if (buf.empty()) buf.resize(e.fn->num_outputs);
    buf[e.input_nr] = accumulate(buf[e.input_nr], g);
  };
  for (size_t i = 0; i < root_edges.size(); ++i) {
    if (root_edges[i].fn) add_grad(root_edges[i], root_grads[i]);
  }

  std::vector<Node*> ready;
  for (auto& [n, owner] : owners) {
    if (deps[n] == 0) ready.push_back(n);
  }
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    std::vector<Tensor> in = std::move(buffers[n]);
    buffers.erase(n);
    if (in.empty()) in.resize(n->num_outputs);
    bool is_capture = capture_nodes.count(n) > 0;
    if (is_capture) {
      for (uint32_t k = 0; k < in.size(); ++k) {
        auto it = capture_index.find({n, k});
        if (it != capture_index.end()) captured[it->second] = in[k];
      }
    }
    bool is_leaf_sink = dynamic_cast<AccumulateGrad*>(n) != nullptr;
    std::vector<Tensor> out;
    bool any = false;
    for (auto& g : in) any = any || g.defined();
    if (any && !(captures && is_leaf_sink)) {
      FK_CHECK(!n->released(), std::string("backward through ") + n->name(),
               "a graph that still holds its saved tensors (pass retain_graph=true to "
               "backward more than once)",
               "a graph freed by an earlier backward");
      out = n->apply(std::move(in));
      if (!retain_graph) n->release_saved();
    }
    for (size_t k = 0; k < n->next.size(); ++k) {
      const Edge& e = n->next[k];
      if (!e.fn) continue;
      if (k < out.size() && out[k].defined()) add_grad(e, out[k]);
      if (--deps[e.fn.get()] == 0) ready.push_back(e.fn.get());
    }
  }
  return captured;
}

}  // namespace

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }

SavedTensor::SavedTensor(const Tensor& t) : t_(t), version_(t.defined() ? t.version() : 0) {}

const Tensor& SavedTensor::unpack(const char* node_name) const {
  if (t_.defined() && t_.version() != version_) {
    throw Error(std::string("backward of ") + node_name,
                "a saved tensor at version " + std::to_string(version_) +
                    " (as when it was saved)",
                "version " + std::to_string(t_.version()) +
                    ": it was modified by an in-place op after being saved");
  }
  return t_;
}

bool any_needs_grad(const std::vector<Tensor>& inputs) {
  if (!grad_enabled()) return false;
  for (auto& t : inputs) {
    if (tensor_requires_grad(t)) return true;
  }
  return false;
}

Edge edge_of(const Tensor& t) {
  if (!tensor_requires_grad(t)) return {};
  AutogradMeta* m = t.impl()->meta.get();
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  return {accumulator_of(t), 0};
}

void record(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
            const std::vector<Tensor*>& outputs) {
  node->next.clear();
  node->next.reserve(inputs.size());
  for (const Tensor& in : inputs) node->next.push_back(edge_of(in));
  node->num_outputs = static_cast<uint32_t>(outputs.size());
  for (uint32_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = *outputs[i];
    if (!out.defined()) continue;
    // Views share an impl-less storage only; outputs always get their own meta.
    auto& meta = out.impl()->meta;
    if (!meta) meta = std::make_unique<AutogradMeta>();
    meta->requires_grad = true;
    meta->grad_fn = node;
    meta->output_nr = i;
  }
}

void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
              bool retain_graph) {
  run_backward(roots, grads, retain_graph, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                         const std::vector<Tensor>& inputs, bool retain_graph) {
  std::vector<Edge> edges;
  for (const Tensor& in : inputs) {
    FK_CHECK(tensor_requires_grad(in), "autograd::grad", "inputs that require grad",
             "an input that does not");
    edges.push_back(edge_of(in));
  }
  return run_backward(roots, grads, retain_graph, &edges);
}

SavedStats saved_stats(const Tensor& t) {
  SavedStats s;
  if (!t.defined() || !t.grad_fn()) return s;
  std::unordered_set<Node*> seen;
  std::unordered_set<const Storage*> storages;
  std::vector<Node*> stack{t.grad_fn().get()};
  seen.insert(stack.back());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    ++s.nodes;
    n->for_each_saved([&](SavedTensor& st) {
      if (!st.defined()) return;
      ++s.tensors;
      const Storage* p = st.tensor().storage().get();
      if (storages.insert(p).second) s.bytes += static_cast<int64_t>(p->nbytes);
    });
    for (auto& e : n->next) {
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  s.storages = static_cast<int64_t>(storages.size());
  return s;
}

Tensor sum_to(const Tensor& grad, const Dims& shape) {
  if (grad.shape() == shape) return grad;
  int lead = grad.dim() - shape.size();
  std::vector<int64_t> dims;
  for (int i = 0; i < grad.dim(); ++i) {
    if (i < lead || (shape[i - lead] == 1 && grad.shape()[i] != 1)) dims.push_back(i);
  }
  Tensor r = sum(grad, Dims(dims), true);
  return r.reshape(shape);
}

}  // namespace fk::autograd
