#pragma once
// StepGraph: a device training step recorded once as a CUDA graph and
// replayed for the rest of a stage (the Solver's device path).
//
// The step is a callable that only enqueues work on the device's current
// stream and reads nothing back (field forward, operator, losses, backward,
// gradient norm, clipping, AdamW; its per-step scalars come and go through a
// DeviceStepBlock). Its `shape` is a number the caller changes whenever the
// host-side structure of the step changes (what it enqueues, with which
// buffers): a graph only replays for the shape it was captured at.
//   warm-up   the first step at a shape runs eagerly (caches fill, the
//             losses make their observation-only constants, cuBLAS binds
//             the stream), the next one is captured and launched
//   replay    later steps at that shape are one graph launch each
//   refusal   a reason known up front (an operator that is not capturable,
//             the knob off) or a failed capture (a host read inside the
//             step, an allocation that outlives it, an unsupported call)
//             makes every later step of the stage eager; note() says why
// Memory: the step's temporaries are allocated and freed inside the graph
// (stream-ordered pool), so a replay allocates nothing on the host side;
// a capture that keeps any of them alive is refused.
// The graph uses its own non-blocking stream, set as the device's current
// stream of the constructing thread for the StepGraph's lifetime (after a
// sync of the previous one) and synchronized and restored at its end, on
// that thread (fk's current stream is per thread; other threads' work stays
// on their own streams): one per stage, so a stage change (grid, operator,
// curriculum) always captures anew.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "fk/cuda/graph.h"
#include "fk/device.h"

namespace nefi {

class Operator;

// Whether device steps are captured: `option` when set, else the knob
// NEFI_CUDA_GRAPH (bool, default 1; malformed: fk::Error naming it).
bool cuda_graph_enabled(const std::optional<bool>& option);

// Why a step on `device` through `op` cannot be captured (empty: it can).
std::string step_graph_refusal(const Operator& op, fk::Device device);

class StepGraph {
 public:
  // `refusal` non-empty: every step runs eagerly, on the default stream.
  StepGraph(fk::Device device, std::string refusal);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Runs one step: eagerly, captured then launched, or replayed (see above).
  void run(const std::function<void()>& enqueue, int64_t shape);
  // Drops the graph (the caller changed buffers the graph reads); the next
  // step warms up again.
  void invalidate();

  bool refused() const { return !refusal_.empty(); }
  const std::string& refusal() const { return refusal_; }
  int64_t eager_steps() const { return eager_; }
  int64_t graph_steps() const { return launched_; }
  // Whether the last run() replayed the captured graph (not eager, not the
  // capture's own launch).
  bool last_replayed() const { return last_replayed_; }
  int64_t captures() const { return captures_; }
  int64_t nodes() const { return captured_nodes_; }  // of the last capture
  // One line for verbose output: how the stage's steps ran, and why.
  std::string note() const;

 private:
  void capture_and_launch(const std::function<void()>& enqueue, int64_t shape);

  int device_;
  std::string refusal_;
  void* stream_ = nullptr;
  void* previous_stream_ = nullptr;
  fk::cuda::GraphExec exec_;
  int64_t shape_ = -1;       // of exec_
  int64_t warm_shape_ = -1;  // of the last eager step
  bool warm_ = false;
  bool last_replayed_ = false;
  int64_t eager_ = 0, launched_ = 0, captures_ = 0, captured_nodes_ = 0;
};

}  // namespace nefi
