#pragma once
// What the device pool (runtime.h's pool_deallocate) does with each free
// around stream captures, as plain bookkeeping: no CUDA header, so CPU-only
// builds and host tests use it too. graph.cpp reports each capture's end and
// each graph's launches and destruction (pool_graphs.h); the pool asks
// free_action for every free and makes only the CUDA call it answers.
//
// The CUDA rules this follows (cuda_runtime_api.h, cudaGraphAddMemAllocNode
// and cudaGraphLaunch; CUDA C++ Programming Guide, "Graph Memory Nodes"):
//   - cudaMallocAsync inside a capture records an allocation node; "a graph
//     allocation's lifetime begins when GPU execution reaches the allocating
//     graph node". Until the graph first runs the address names no memory.
//   - A free node takes only graph allocations: "cudaGraphAddMemFreeNode will
//     return cudaErrorInvalidValue if the user attempts to free ... an address
//     that was not returned by an allocation node".
//   - An allocation not freed in its graph "can be accessed ... by stream
//     operations ordered after the graph's execution but before the
//     allocation is freed", and freed by cudaFreeAsync or by a free node of
//     another graph.
//   - "Graph destruction does not automatically free any live graph-allocated
//     memory": a block of a graph that ran stays to be freed.
//   - "If any allocations created by graphExec remain unfreed (from a previous
//     launch) ... the launch will fail with cudaErrorInvalidValue" (fk
//     instantiates without cudaGraphInstantiateFlagAutoFreeOnLaunch).
//   - "The allocation's address remains fixed across instantiations and
//     launches": a relaunch makes the blocks its capture kept live again, at
//     the addresses the capture's tensors held.
// So a free is, by where its block came from:
//   - a block allocated outside any capture: freed now; while a capture runs,
//     held back (a free node would refuse it and fail the capture): the work
//     captured before the free may read it, at its address, in every launch
//     of the graph, so it is freed when the capture fails or is aborted, or
//     when its graph is destroyed (after its last launch), at the first
//     allocation or free made then when no capture runs;
//   - a block of the running capture: freed now (a free node of its graph);
//   - a block of a capture that failed or was aborted, or of a graph
//     destroyed before it ever ran: dropped, with no CUDA call (cudaFreeAsync
//     of it would fail with an invalid value, which the next launch check
//     would then blame on an unrelated kernel);
//   - a block of a graph instantiated but not launched yet: outside a capture
//     it is freed right after the graph's first launch, in stream order (a
//     free now would precede the allocation's lifetime, and dropping it would
//     leave the launched graph with an unfreed allocation that fails its next
//     launch); inside another capture, a free node of that graph, as CUDA allows;
//   - a block of a graph that ran: freed now (a free node when a capture runs).
// A free node that an earlier graph's block got in a capture that then fails,
// or in a graph destroyed before it ran, never runs: the block is put back
// (held back, or freed after its own graph's first launch).
//
// A graph whose capture kept blocks (allocated in it, no free node in it) is
// launched once: its relaunch is refused (check_relaunch). While a tensor of
// the previous launch still holds such a block, CUDA would refuse the launch
// with a bare invalid value; once they are all freed, the relaunch would make
// the blocks live again with no tensor left to free them (one leaked block
// each per launch, and the launch after that refused by CUDA). fk does not
// instantiate with cudaGraphInstantiateFlagAutoFreeOnLaunch instead: it would
// free the previous launch's blocks under the tensors that hold them (their
// addresses come back holding the new launch's values, and a tensor's later
// free would free the new launch's block, which the bookkeeping here cannot
// tell from the old one), and the last launch's blocks would outlive the
// graph all the same. nefi's StepGraph captures only steps that keep nothing.
//
// Limit: the address of a dropped block may be handed out again (by a later
// capture); while a tensor still holds the dropped address, the new block's
// bookkeeping replaces the old one, and whichever of the two is freed first
// is taken for the new block. fk's users drop a failed step's tensors before
// capturing again (nefi's StepGraph: the refused step's tensors are gone).
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace fk::cuda {

class CaptureFrees {
 public:
  // What the pool does with a free it is asked for.
  enum class Free {
    kNow,          // cudaFreeAsync now (inside a capture: a free node of its graph)
    kHeldBack,     // later, once its capture's graph is gone and no capture runs (take_held_back)
    kAfterLaunch,  // after its graph's first launch (returned by launched)
    kDropped,      // never materialised: no CUDA call at all
  };

  // A capture began: blocks handed out while it runs are its. Returns its id (> 0).
  int64_t capture_began();
  // The running capture ended (made_graph: instantiated into a graph that may
  // be launched; else failed or aborted: its blocks never materialise).
  // Returns its id, 0 when none ran. Earlier blocks it took a free node of
  // are put back when it failed.
  int64_t capture_ended(bool made_graph);
  // The graph of capture `id` was launched: the blocks dropped before its
  // first launch, to free now, after it in stream order (emptied).
  std::vector<void*> launched(int64_t id);
  // The graph of capture `id` was destroyed (after its last launch): the
  // earlier blocks dropped in its capture are held back to free now.
  void destroyed(int64_t id);

  // The pool handed out p (capturing: while a capture ran on its stream).
  void allocated(void* p, bool capturing);
  // The pool is asked to free p (not null); `capturing`: by a thread whose
  // stream is being captured. A block from before the running capture is
  // held back whoever frees it.
  Free free_action(void* p, bool capturing);
  // The held-back pointers whose capture's graph is gone, to free now that no
  // capture runs (emptied).
  std::vector<void*> take_held_back();
  int64_t held_back() const { return static_cast<int64_t>(held_.size()); }
  // How many captures' bookkeeping is kept: those whose graph may still run,
  // has blocks not freed yet, or is named by a free node not yet run. A
  // destroyed graph's goes with the last of these.
  int64_t captures_kept() const { return static_cast<int64_t>(captures_.size()) - 1; }

  // What a launch of capture `id`'s graph would do with the blocks that
  // outlive it: `kept` (allocated in the capture with no free node in it),
  // `held` (of those, still held by tensors: not freed since), and whether
  // the graph ran already (a launch now is a relaunch).
  struct Outliving {
    int64_t kept = 0;
    int64_t held = 0;
    bool launched = false;
  };
  Outliving outliving(int64_t id) const;
  // Blocks whose free waits for their graph's first launch.
  int64_t waiting_for_launch() const;

 private:
  // kDestroyed: ran, then destroyed; its live blocks are freed as a
  // launched graph's are.
  enum class State { kCapturing, kUnlaunched, kLaunched, kDestroyed, kGone };
  // A block of an earlier graph freed by a free node of this capture's graph.
  struct ForeignFree {
    void* p;
    int64_t owner;
  };
  struct Capture {
    State state = State::kCapturing;
    int64_t blocks = 0;                // its blocks not yet freed
    int64_t kept = 0;                  // its blocks with no free node in its graph
    std::vector<void*> after_launch;   // dropped before its first launch
    std::vector<ForeignFree> foreign;  // free nodes of earlier graphs' blocks
    std::vector<void*> read;           // blocks from before it, dropped in it (kHeldBack)
    int64_t foreign_refs = 0;          // free nodes of other captures naming its blocks, pending
  };
  // Puts back the blocks whose free nodes c's graph will never run.
  void put_back(Capture& c);
  // c's graph is gone or never will be: the blocks it read are held back to free.
  void release_read(Capture& c);
  // Drops the bookkeeping of capture `id` once nothing can ask about it.
  void forget_if_gone(int64_t id);
  // A pending free node naming a block of capture `owner` ran or was put back.
  void foreign_settled(int64_t owner);

  // Capture 0 stands for blocks handed out while a capture began outside
  // capture_began ran (a host framework's): taken as materialised, as before.
  std::unordered_map<int64_t, Capture> captures_{
      {0, Capture{State::kLaunched, 0, 0, {}, {}, {}, 0}}};
  std::unordered_map<void*, int64_t> captured_;  // block -> its capture, until freed
  std::vector<void*> held_;
  int64_t running_ = 0, next_id_ = 1;
};

// Throws fk::Error when a launch of a graph on cuda:`device` with `o` is a
// relaunch of one whose capture kept blocks, naming how many it keeps, how
// many tensors still hold and what to do; returns otherwise.
void check_relaunch(const CaptureFrees::Outliving& o, int device);

}  // namespace fk::cuda
