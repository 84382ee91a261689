#pragma once
// The from_forward problem as the Python module holds it (ForwardProblem),
// and the binding of its studies (nefi_byop_studies.cpp): diagnose,
// hessian_spectrum, refine_edges and autotune.
#include <nanobind/nanobind.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "fk/error.h"
#include "nefi/byop/auto_problem.h"

namespace fkpy {

namespace nb = nanobind;

// One solve at a time per problem: its solves share the field object (its
// parameters and coordinate caches), so a second thread waits here. The
// lock is taken with the GIL released (the solving thread needs the GIL for
// the model's calls). The thread that holds it is kept: a solve's callback
// or model calling back into its own problem from the solving thread would
// wait on itself forever, and gets an fk::Error naming the call instead (a
// callback that hands the call to another thread and waits for it still
// waits forever: the lock cannot tell).
struct SolvingLock {
  std::mutex mutex;
  std::atomic<std::thread::id> owner{};
};

class OneSolveAtATime {
 public:
  OneSolveAtATime(SolvingLock& lock, const std::string& what) : lock_(lock) {
    FK_CHECK(lock.owner.load() != std::this_thread::get_id(), what,
             "a problem this thread is not already solving",
             "a call from inside its own solve, diagnose or batch on the solving thread (a "
             "callback or model calling back into its problem)");
    lock.mutex.lock();
    lock.owner = std::this_thread::get_id();
  }
  ~OneSolveAtATime() {
    lock_.owner = std::thread::id();
    lock_.mutex.unlock();
  }
  OneSolveAtATime(const OneSolveAtATime&) = delete;
  OneSolveAtATime& operator=(const OneSolveAtATime&) = delete;

 private:
  SolvingLock& lock_;
};

// What built it is kept so that autotune can rebuild it with other values.
struct ForwardProblem {
  nefi::AutoProblem ap;
  nefi::OperatorPtr op;
  fk::Dims shape;
  nefi::Measurement measurement;
  nefi::AutoOptions options;
  std::shared_ptr<SolvingLock> solving = std::make_shared<SolvingLock>();
};

void bind_forward_problem_studies(nb::class_<ForwardProblem>& problem);

}  // namespace fkpy
