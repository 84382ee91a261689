#include "fk/autograd.h"

#include <atomic>
#include <climits>
#include <mutex>
#include <unordered_set>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/copy.h"
#include "fk/ops/reduce.h"

namespace fk::autograd {
namespace {

thread_local bool g_grad_enabled = true;

// Sink of a leaf's gradient: adds it into the leaf's .grad (locked: passes on
// several threads may share the leaf; only this lock is taken, so reading,
// zeroing or setting .grad, as an optimizer does, must not overlap a pass).
struct AccumulateGrad : Node {
  std::weak_ptr<TensorImpl> leaf;
  std::mutex mu;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    std::lock_guard<std::mutex> lock(mu);
    auto impl = leaf.lock();
    if (!impl || !g[0].defined()) return {};
    Tensor var(impl);
    // A leaf that stopped requiring grad after the graph was built takes
    // none (torch's rule).
    if (!var.requires_grad()) return {};
    Tensor gi = std::move(g[0]);
    if (gi.dtype() != var.dtype()) {
      if (is_complex(gi.dtype()) && !is_complex(var.dtype())) gi = gi.real();
      gi = gi.to(var.dtype());
    }
    FK_CHECK(gi.shape() == var.shape(), "gradient accumulation",
             "a gradient of shape " + var.shape().str(), gi.shape().str());
    Tensor prev = var.grad();
    if (prev.defined()) {
      var.set_grad(add(prev, gi));
    } else {
      // Take over a gradient buffer nothing else references; copy a shared one
      // (it may alias another leaf's .grad or a tensor the caller holds).
      bool unique =
          gi.impl_ptr().use_count() == 1 && gi.storage().use_count() == 1 && gi.is_contiguous();
      var.set_grad(unique ? gi : gi.clone());
    }
    return {};
  }
  const char* name() const override { return "AccumulateGrad"; }
  void release_saved() override {}  // shared by every graph the leaf enters; saves nothing
};

// One accumulator per leaf while any graph holds it: threads recording ops on
// a shared leaf find the same node (each making its own raced on .grad).
std::mutex g_accumulator_mu;

std::shared_ptr<Node> accumulator_of(const Tensor& t) {
  std::lock_guard<std::mutex> lock(g_accumulator_mu);
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

}  // namespace

// Runs the graph from the roots. With `captures`, gradients arriving at those
// edges are returned instead of being accumulated into leaves. The pass's
// scratch (dependency counts, gradient buffers) lives in `visits`, in the order
// nodes were reached, and every edge is resolved to its visit before any
// backward runs: a nested pass from a node's backward, or a pass on another
// thread, may share nodes (a leaf's accumulator) but not this scratch. A node's
// visit_hint_ finds its visit; where another thread's pass overwrote it (a
// shared leaf), the leaf gets a second visit, which accumulates its share.
struct Engine {
  struct Visit {
    Node* node;
    int deps = 0;
    size_t first_edge = 0;       // its edges' visits: edge_visits[first_edge ...]
    std::vector<Tensor> buffer;  // gradients w.r.t. the node's outputs
  };

  // Per visit: whether its outputs feed a captured edge, directly or through
  // other nodes (a leaf's accumulator has no edges, so it never runs).
  static std::vector<char> nodes_reaching(const std::vector<Visit>& visits,
                                          const std::vector<int32_t>& edge_visits,
                                          const std::vector<Edge>& captures) {
    const size_t nv = visits.size();
    std::vector<int> deps(nv);
    std::vector<int32_t> order, ready;
    for (size_t i = 0; i < nv; ++i) {
      deps[i] = visits[i].deps;
      if (deps[i] == 0) ready.push_back(static_cast<int32_t>(i));
    }
    while (!ready.empty()) {  // a topological order (Kahn's)
      const int32_t i = ready.back();
      ready.pop_back();
      order.push_back(i);
      const Visit& v = visits[static_cast<size_t>(i)];
      for (size_t k = 0; k < v.node->next.size(); ++k) {
        const int32_t j = edge_visits[v.first_edge + k];
        if (j >= 0 && --deps[static_cast<size_t>(j)] == 0) ready.push_back(j);
      }
    }
    std::vector<char> runs(nv, 0), feeds(nv, 0);  // feeds: a captured node, or one that runs
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const auto i = static_cast<size_t>(*it);
      const Visit& v = visits[i];
      for (size_t k = 0; k < v.node->next.size(); ++k) {
        const int32_t j = edge_visits[v.first_edge + k];
        if (j >= 0 && feeds[static_cast<size_t>(j)]) runs[i] = 1;
      }
      bool captured = false;
      for (const Edge& e : captures) captured = captured || e.fn.get() == v.node;
      feeds[i] = runs[i] || captured;
    }
    return runs;
  }

  static std::vector<Tensor> run(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                                 bool retain_graph, const std::vector<Edge>* captures) {
    FK_CHECK(roots.size() == grads.size(), "backward", fk::to_text(roots.size()) + " gradients",
             fk::to_text(grads.size()));
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
      FK_CHECK(g.device() == r.device(), "backward",
               "a gradient on the output's device " + r.device().str(),
               "one on " + g.device().str());
      // In the output's dtype, as torch casts it: a bool gradient summed over
      // two paths was an or (1 + 1 = 1), an f16 one lost digits, an f64 one
      // for an f32 matmul failed inside its backward. Complex and real do not
      // mix (an imaginary part would be dropped silently).
      if (g.dtype() != r.dtype()) {
        FK_CHECK(is_complex(g.dtype()) == is_complex(r.dtype()), "backward",
                 std::string("a gradient of the output's dtype ") + name(r.dtype()),
                 name(g.dtype()));
        g = g.to(r.dtype());
      }
      root_edges.push_back(edge_of(r));
      root_grads.push_back(g);
    }

    // Visit every reachable node once, counting the edges that point at it.
    std::vector<Visit> visits;
    std::vector<int32_t> edge_visits, stack;  // -1: an edge needing no gradient
    auto visit = [&](Node* n) {
      const int64_t hint = n->visit_hint_.load(std::memory_order_relaxed);
      if (hint >= 0 && hint < static_cast<int64_t>(visits.size()) &&
          visits[static_cast<size_t>(hint)].node == n)
        return static_cast<int32_t>(hint);
      FK_CHECK(visits.size() < INT32_MAX, "backward", "a graph of fewer than 2^31 nodes", "more");
      const auto i = static_cast<int32_t>(visits.size());
      n->visit_hint_.store(i, std::memory_order_relaxed);
      visits.push_back({n, 0, 0, std::vector<Tensor>(n->num_outputs)});
      stack.push_back(i);
      return i;
    };
    std::vector<int32_t> root_visits;
    for (const Edge& e : root_edges) root_visits.push_back(e.fn ? visit(e.fn.get()) : -1);
    while (!stack.empty()) {
      const int32_t i = stack.back();
      stack.pop_back();
      visits[static_cast<size_t>(i)].first_edge = edge_visits.size();
      for (const Edge& e : visits[static_cast<size_t>(i)].node->next) {
        const int32_t j = e.fn ? visit(e.fn.get()) : -1;
        if (j >= 0) ++visits[static_cast<size_t>(j)].deps;
        edge_visits.push_back(j);
      }
    }

    // With captures (autograd::grad), only nodes on a path to a captured
    // edge run (torch's rule): another branch's nodes ran for nothing and,
    // without retain_graph, freed what a later backward of it needed.
    std::vector<char> runs;
    if (captures) runs = nodes_reaching(visits, edge_visits, *captures);

    std::vector<Tensor> captured;
    if (captures) captured.resize(captures->size());
    auto add_to = [](Tensor& slot, const Tensor& g) { slot = slot.defined() ? add(slot, g) : g; };
    for (size_t i = 0; i < root_edges.size(); ++i) {
      if (root_visits[i] >= 0) {
        add_to(visits[static_cast<size_t>(root_visits[i])].buffer[root_edges[i].input_nr],
               root_grads[i]);
      }
    }

    std::vector<int32_t> ready;
    for (size_t i = 0; i < visits.size(); ++i) {
      if (visits[i].deps == 0) ready.push_back(static_cast<int32_t>(i));
    }
    while (!ready.empty()) {
      const auto vi = static_cast<size_t>(ready.back());
      Visit& v = visits[vi];
      ready.pop_back();
      Node* n = v.node;
      std::vector<Tensor> in = std::move(v.buffer);
      if (captures) {
        for (size_t c = 0; c < captures->size(); ++c) {
          const Edge& e = (*captures)[c];
          if (e.fn.get() == n && in[e.input_nr].defined()) add_to(captured[c], in[e.input_nr]);
        }
      }
      bool any = false;
      for (auto& g : in) any = any || g.defined();
      std::vector<Tensor> out;
      if (any && !(captures && !runs[vi])) {
        std::lock_guard<std::mutex> lock(n->run_mutex_);
        FK_CHECK(!n->released(), std::string("backward through ") + n->name(),
                 "a graph that still holds its saved tensors (pass retain_graph=true to "
                 "backward more than once)",
                 "a graph freed by an earlier backward");
        out = n->apply(std::move(in));
        if (!retain_graph) n->release_saved();
      }
      for (size_t k = 0; k < n->next.size(); ++k) {
        const Edge& e = n->next[k];
        const int32_t j = edge_visits[v.first_edge + k];
        if (j < 0) continue;
        if (k < out.size() && out[k].defined()) {
          // A backward that made a gradient on another device than its input
          // (a host buffer for a CUDA tensor) is named here, not found later
          // as a host read of device memory by the next node or an optimizer.
          FK_CHECK(out[k].device() == e.device, std::string("backward of ") + n->name(),
                   "the gradient of input " + fk::to_text(k) + " on its device " + e.device.str(),
                   "one on " + out[k].device().str());
          add_to(visits[static_cast<size_t>(j)].buffer[e.input_nr], out[k]);
        }
        if (--visits[static_cast<size_t>(j)].deps == 0) ready.push_back(j);
      }
    }
    return captured;
  }
};

// The nodes only this one holds are freed here one at a time, not each from
// its holder's destructor (a 150k-op graph overflowed the stack): each one's
// saved tensors go first (a saved input holds its own grad_fn), then its edges,
// the sole ones taken over and the shared ones let go.
Node::~Node() {
  std::vector<std::shared_ptr<Node>> sole;
  auto take_edges = [&sole](std::vector<Edge>& edges) {
    for (Edge& e : edges) {
      if (!e.fn) continue;
      if (e.fn.use_count() == 1) {
        // The last owner's writes to the node happen before it is read here.
        std::atomic_thread_fence(std::memory_order_acquire);
        sole.push_back(std::move(e.fn));
      } else {
        e.fn.reset();
      }
    }
  };
  take_edges(next);
  while (!sole.empty()) {
    std::shared_ptr<Node> n = std::move(sole.back());
    sole.pop_back();
    n->release_saved();
    take_edges(n->next);  // n is freed here with no edge left to follow
  }
}

bool grad_enabled() {
  return g_grad_enabled;
}
void set_grad_enabled(bool on) {
  g_grad_enabled = on;
}

SavedTensor::SavedTensor(const Tensor& t) : t_(t), version_(t.defined() ? t.version() : 0) {}

const Tensor& SavedTensor::unpack(const char* node_name) const {
  if (t_.defined() && t_.version() != version_) {
    throw Error(std::string("backward of ") + node_name,
                "a saved tensor at version " + fk::to_text(version_) + " (as when it was saved)",
                "version " + fk::to_text(t_.version()) +
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
  if (m->grad_fn) return {m->grad_fn, m->output_nr, t.device()};
  return {accumulator_of(t), 0, t.device()};
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
  Engine::run(roots, grads, retain_graph, nullptr);
}

std::vector<Tensor> grad(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads,
                         const std::vector<Tensor>& inputs, bool retain_graph) {
  std::vector<Edge> edges;
  for (const Tensor& in : inputs) {
    FK_CHECK(tensor_requires_grad(in), "autograd::grad", "inputs that require grad",
             "an input that does not");
    edges.push_back(edge_of(in));
  }
  return Engine::run(roots, grads, retain_graph, &edges);
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
