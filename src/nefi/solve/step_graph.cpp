#include "nefi/solve/step_graph.h"

#include <exception>

#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/knobs.h"
#include "fk/profile.h"
#include "nefi/operators/operator.h"

namespace nefi {
namespace {

fk::Knob kCudaGraph("NEFI_CUDA_GRAPH", fk::KnobType::Bool, "1",
                    "nefi: capture a device solve's training step as one CUDA graph and replay "
                    "it (0: every step eager)",
                    fk::KnobRead::PerCall);

}  // namespace

bool cuda_graph_enabled(const std::optional<bool>& option) {
  if (option) return *option;
  return kCudaGraph.as_bool();
}

std::string step_graph_refusal(const Operator& op, fk::Device device) {
  if (!device.is_cuda()) return "the step runs on the host (" + device.str() + ")";
  if (!op.graph_capturable())
    return "operator " + op.kind() + " is not graph-capturable: " + op.not_capturable_reason();
  return "";
}

StepGraph::StepGraph(fk::Device device, std::string refusal)
    : device_(device.index), refusal_(std::move(refusal)) {
  FK_CHECK(device.is_cuda(), "nefi::StepGraph", "a CUDA device", device.str());
  if (refused()) return;
  // Capture needs a stream of its own; what ran on the previous one finishes
  // first (fk frees in its current stream's order).
  fk::cuda::synchronize(device_);
  previous_stream_ = fk::cuda::current_stream(device_);
  stream_ = fk::cuda::create_stream(device_);
  fk::cuda::set_current_stream(device_, stream_);
}

StepGraph::~StepGraph() {
  fk::cuda::destroy_graph(exec_);
  if (!stream_) return;
  // The last replays finish before the stream goes. An index error they
  // recorded is not swallowed: left pending for the next synchronization to
  // throw, and announced on stderr (runtime.h's synchronize_in_destructor).
  fk::cuda::synchronize_in_destructor(device_, "nefi::StepGraph's destructor");
  fk::cuda::set_current_stream(device_, previous_stream_);
  fk::cuda::destroy_stream(device_, stream_);
}

void StepGraph::invalidate() {
  fk::cuda::destroy_graph(exec_);
  shape_ = -1;
  warm_ = false;
}

void StepGraph::run(const std::function<void()>& enqueue, int64_t shape) {
  last_replayed_ = false;
  if (refused()) {
    enqueue();
    ++eager_;
    return;
  }
  if (exec_.exec && shape == shape_) {
    fk::cuda::launch_graph(exec_);
    fk::profile::count_launch();
    ++launched_;
    last_replayed_ = true;
    return;
  }
  if (exec_.exec) invalidate();
  if (!warm_ || warm_shape_ != shape) {
    enqueue();
    ++eager_;
    warm_ = true;
    warm_shape_ = shape;
    return;
  }
  capture_and_launch(enqueue, shape);
}

void StepGraph::capture_and_launch(const std::function<void()>& enqueue, int64_t shape) {
  try {
    const int64_t before = fk::cuda::pool_stats(device_).allocated;
    fk::cuda::begin_capture(device_);
    enqueue();
    const int64_t kept = fk::cuda::pool_stats(device_).allocated - before;
    FK_CHECK(kept == 0, "nefi::StepGraph",
             "a step that frees every buffer it allocates (a replay reallocates them)",
             fk::to_text(kept) + " bytes (allocated minus freed) outliving the step");
    exec_ = fk::cuda::end_capture(device_);
  } catch (const std::exception& e) {
    fk::cuda::abort_capture(device_);
    refusal_ = std::string("capture failed: ") + e.what();
    enqueue();  // nothing ran while capturing: the step runs now, eagerly
    ++eager_;
    return;
  }
  ++captures_;
  captured_nodes_ = exec_.nodes;
  shape_ = shape;
  // A step that kept a block (a new tensor swapped for an older one of the
  // same size passes the byte count above) holds graph memory after the
  // launch: the graph may run once (graph.h), so it runs this step and the
  // later ones run eagerly, the reason in the note.
  const int64_t kept = fk::cuda::kept_blocks(exec_);
  fk::cuda::launch_graph(exec_);
  fk::profile::count_launch();
  ++launched_;
  if (kept > 0) {
    refusal_ = "the captured step keeps " + std::to_string(kept) +
               " block(s) it allocated past its end (a graph keeping memory launches once)";
    invalidate();
  }
}

std::string StepGraph::note() const {
  if (refused())
    return "CUDA graph off: " + refusal_ + " (" + std::to_string(eager_) + " eager steps)";
  return "CUDA graph: " + std::to_string(launched_) + " of " + std::to_string(launched_ + eager_) +
         " steps replayed, " + std::to_string(captures_) + " capture(s), " +
         std::to_string(captured_nodes_) + " nodes";
}

}  // namespace nefi
