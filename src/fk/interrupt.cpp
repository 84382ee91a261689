#include "fk/interrupt.h"

#include <atomic>
#include <chrono>

namespace fk {
namespace {

std::atomic<InterruptCheck> g_check{nullptr};

}  // namespace

void set_interrupt_check(InterruptCheck check) {
  g_check.store(check, std::memory_order_release);
}

void poll_interrupt() {
  const InterruptCheck check = g_check.load(std::memory_order_acquire);
  if (check == nullptr) return;
  // A solve's steps can take microseconds: the host's check (which may take
  // a lock, Python's GIL) runs ten times a second at most.
  using Clock = std::chrono::steady_clock;
  thread_local Clock::time_point last{};
  const Clock::time_point now = Clock::now();
  if (now - last < std::chrono::milliseconds(100)) return;
  last = now;
  if (check()) throw Interrupted{};
}

}  // namespace fk
