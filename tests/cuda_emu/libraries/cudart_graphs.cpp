// The emulated CUDA runtime's graphs: what a capture recorded (its work in
// order, its allocations), instantiated and replayed on a stream as one
// piece of that stream's work, any number of times.
#include <cuda_runtime.h>

#include <unordered_set>

#include "emulated_runtime.h"

namespace fkemu::runtime {
namespace {

struct Graph {
  std::shared_ptr<GraphBody> body;
};

// A replay still queued keeps the body (and its allocations) alive after
// the exec is destroyed, as CUDA lets a launched graph finish.
struct Exec {
  std::shared_ptr<GraphBody> body;
  bool auto_free = false;  // cudaGraphInstantiateFlagAutoFreeOnLaunch
};

std::unordered_set<Graph*>& graphs() {
  static auto* g = new std::unordered_set<Graph*>;
  return *g;
}

std::unordered_set<Exec*>& execs() {
  static auto* e = new std::unordered_set<Exec*>;
  return *e;
}

Graph* find_graph(cudaGraph_t g) {
  auto* p = reinterpret_cast<Graph*>(g);
  return graphs().count(p) != 0 ? p : nullptr;
}

Exec* find_exec(cudaGraphExec_t e) {
  auto* p = reinterpret_cast<Exec*>(e);
  return execs().count(p) != 0 ? p : nullptr;
}

}  // namespace

GraphBody::~GraphBody() {
  release_graph_blocks(blocks);
}

cudaGraph_t make_graph(std::shared_ptr<GraphBody> body) {
  auto* g = new Graph{std::move(body)};
  graphs().insert(g);
  return reinterpret_cast<cudaGraph_t>(g);
}

}  // namespace fkemu::runtime

using fkemu::runtime::Lock;
using fkemu::runtime::mutex;
using fkemu::runtime::record;

extern "C" {

// Every recorded piece of work is a node, allocations and frees included
// (CUDA's memory nodes); the handles name them but nothing reads them.
cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t* nodes, size_t* numNodes) {
  if (numNodes == nullptr) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  auto* g = fkemu::runtime::find_graph(graph);
  if (g == nullptr) return record(cudaErrorInvalidValue);
  auto& recorded = g->body->nodes;
  if (nodes != nullptr)
    for (size_t i = 0; i < *numNodes; ++i)
      nodes[i] = i < recorded.size() ? reinterpret_cast<cudaGraphNode_t>(&recorded[i]) : nullptr;
  *numNodes = recorded.size();
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags) {
  constexpr unsigned long long kKnown =
      cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |
      cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority;
  if (pGraphExec == nullptr || (flags & ~kKnown) != 0) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  auto* g = fkemu::runtime::find_graph(graph);
  if (g == nullptr) return record(cudaErrorInvalidValue);
  auto* e =
      new fkemu::runtime::Exec{g->body, (flags & cudaGraphInstantiateFlagAutoFreeOnLaunch) != 0};
  fkemu::runtime::execs().insert(e);
  *pGraphExec = reinterpret_cast<cudaGraphExec_t>(e);
  return cudaSuccess;
}

// Refused (cudaErrorInvalidValue) while memory a previous launch allocated
// and the graph does not free is still held by the host, unless the exec
// was instantiated to free it on relaunch.
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  Lock lock(mutex());
  auto* e = fkemu::runtime::find_exec(graphExec);
  if (e == nullptr) return record(cudaErrorInvalidValue);
  auto* s = fkemu::runtime::find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  for (const auto* b : e->body->blocks)
    if (!b->freed_in_graph && b->outstanding && !e->auto_free) return record(cudaErrorInvalidValue);
  std::shared_ptr<const fkemu::runtime::GraphBody> body = e->body;
  if (const cudaError_t err = fkemu::runtime::enqueue(*s, [body] {
        for (const fkemu::StreamWork& node : body->nodes) node();
      }))
    return record(err);
  return record(fkemu::runtime::launch_graph_blocks(e->body->blocks, e->auto_free));
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  Lock lock(mutex());
  auto* g = fkemu::runtime::find_graph(graph);
  if (g == nullptr) return record(cudaErrorInvalidValue);
  fkemu::runtime::graphs().erase(g);
  delete g;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  Lock lock(mutex());
  auto* e = fkemu::runtime::find_exec(graphExec);
  if (e == nullptr) return record(cudaErrorInvalidValue);
  fkemu::runtime::execs().erase(e);
  delete e;
  return cudaSuccess;
}

}  // extern "C"
