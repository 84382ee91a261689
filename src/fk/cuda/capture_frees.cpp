#include "fk/cuda/capture_frees.h"

#include <string>
#include <utility>

#include "fk/error.h"

namespace fk::cuda {

int64_t CaptureFrees::capture_began() {
  running_ = next_id_++;
  captures_[running_] = Capture{};
  return running_;
}

int64_t CaptureFrees::capture_ended(bool made_graph) {
  const int64_t id = std::exchange(running_, 0);
  auto it = captures_.find(id);
  if (id == 0 || it == captures_.end()) return 0;
  Capture& c = it->second;
  if (made_graph) {
    c.state = State::kUnlaunched;
    // Neither freed inside it nor dropped by another thread while it ran
    // (those wait for its first launch): no free node in its graph either way.
    c.kept = c.blocks + static_cast<int64_t>(c.after_launch.size());
    return id;
  }
  c.state = State::kGone;
  c.after_launch.clear();
  release_read(c);
  put_back(c);
  forget_if_gone(id);
  return id;
}

std::vector<void*> CaptureFrees::launched(int64_t id) {
  auto it = captures_.find(id);
  if (it == captures_.end() || it->second.state != State::kUnlaunched) return {};
  Capture& c = it->second;
  c.state = State::kLaunched;
  // Their free nodes ran with it.
  for (const ForeignFree& f : std::exchange(c.foreign, {})) foreign_settled(f.owner);
  return std::exchange(c.after_launch, {});
}

void CaptureFrees::destroyed(int64_t id) {
  auto it = captures_.find(id);
  if (it == captures_.end()) return;
  Capture& c = it->second;
  release_read(c);
  // A graph that ran leaves its live blocks to be freed as asked.
  if (c.state == State::kLaunched) {
    c.state = State::kDestroyed;
    forget_if_gone(id);
    return;
  }
  if (c.state != State::kUnlaunched) return;
  c.state = State::kGone;
  c.after_launch.clear();
  put_back(c);
  forget_if_gone(id);
}

void CaptureFrees::release_read(Capture& c) {
  for (void* p : std::exchange(c.read, {})) held_.push_back(p);
}

void CaptureFrees::put_back(Capture& c) {
  for (const ForeignFree& f : std::exchange(c.foreign, {})) {
    auto owner = captures_.find(f.owner);
    if (owner == captures_.end()) continue;  // gone: nothing to free
    const State state = owner->second.state;
    if (state == State::kLaunched || state == State::kDestroyed) held_.push_back(f.p);
    if (state == State::kUnlaunched) owner->second.after_launch.push_back(f.p);
    foreign_settled(f.owner);
  }
}

void CaptureFrees::foreign_settled(int64_t owner) {
  auto it = captures_.find(owner);
  if (it == captures_.end()) return;
  --it->second.foreign_refs;
  forget_if_gone(owner);
}

void CaptureFrees::forget_if_gone(int64_t id) {
  auto it = captures_.find(id);
  if (id == 0 || it == captures_.end() || it->second.blocks != 0) return;
  // A destroyed graph's blocks a pending free node names are still live
  // (put back, they are freed); a gone one's never were.
  const Capture& c = it->second;
  if (c.state == State::kGone || (c.state == State::kDestroyed && c.foreign_refs == 0))
    captures_.erase(it);
}

void CaptureFrees::allocated(void* p, bool capturing) {
  if (p == nullptr) return;
  // An address handed out again: whatever held it before is no longer asked about.
  if (auto old = captured_.find(p); old != captured_.end()) {
    const int64_t owner = old->second;
    captured_.erase(old);
    --captures_[owner].blocks;
    forget_if_gone(owner);
  }
  if (!capturing) return;
  captured_[p] = running_;
  ++captures_[running_].blocks;
}

CaptureFrees::Free CaptureFrees::free_action(void* p, bool capturing) {
  auto it = captured_.find(p);
  if (it == captured_.end()) {
    // While fk's capture runs, the work it recorded may read p at every
    // launch, whichever thread drops p (threads have streams of their own):
    // held back until its graph is gone.
    if (auto running = captures_.find(running_); running_ != 0 && running != captures_.end()) {
      running->second.read.push_back(p);
      return Free::kHeldBack;
    }
    if (!capturing) return Free::kNow;
    held_.push_back(p);  // a capture begun outside capture_began: no graph to wait for
    return Free::kHeldBack;
  }
  const int64_t id = it->second;
  captured_.erase(it);
  Capture& c = captures_[id];
  --c.blocks;
  switch (c.state) {
    case State::kGone:
      forget_if_gone(id);
      return Free::kDropped;
    case State::kCapturing:
      // Inside its own capture: a free node. Dropped by a thread or stream
      // not capturing while its capture runs: after the graph first runs.
      if (capturing) return Free::kNow;
      c.after_launch.push_back(p);
      return Free::kAfterLaunch;
    case State::kUnlaunched:
      if (!capturing) {
        c.after_launch.push_back(p);
        return Free::kAfterLaunch;
      }
      break;
    case State::kLaunched:
    case State::kDestroyed:
      if (!capturing) {
        forget_if_gone(id);
        return Free::kNow;
      }
      break;
  }
  // An earlier graph's block, freed by a free node of the running capture.
  if (running_ != 0) {
    captures_[running_].foreign.push_back({p, id});
    ++captures_[id].foreign_refs;
  } else {
    forget_if_gone(id);
  }
  return Free::kNow;
}

CaptureFrees::Outliving CaptureFrees::outliving(int64_t id) const {
  auto it = captures_.find(id);
  if (id == 0 || it == captures_.end()) return {};
  const Capture& c = it->second;
  return {c.kept, c.blocks, c.state == State::kLaunched};
}

void check_relaunch(const CaptureFrees::Outliving& o, int device) {
  if (!o.launched || o.kept == 0) return;
  throw Error("CUDA graph launch on cuda:" + fk::to_text(device),
              "a relaunch of a graph whose captured step frees every block it allocates (a "
              "relaunch re-creates the blocks that outlived the capture at the same addresses, "
              "with no tensor left to free them; fk instantiates without "
              "cudaGraphInstantiateFlagAutoFreeOnLaunch)",
              "a relaunch of a graph keeping " + fk::to_text(o.kept) +
                  " block(s) past its capture, " + fk::to_text(o.held) +
                  " of them still held by tensors of its previous launch: drop those tensors "
                  "inside the captured step (copy what must outlive it into a tensor allocated "
                  "before the capture), or capture the step again for each launch");
}

std::vector<void*> CaptureFrees::take_held_back() {
  return std::exchange(held_, {});
}

int64_t CaptureFrees::waiting_for_launch() const {
  int64_t n = 0;
  for (const auto& [id, c] : captures_) n += static_cast<int64_t>(c.after_launch.size());
  return n;
}

}  // namespace fk::cuda
