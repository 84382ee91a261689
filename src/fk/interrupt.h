#pragma once
// Interrupting a long C++ loop from its host. The Python module installs a
// check (Ctrl-C: the interpreter's pending signals) and nefi's solver loops
// poll it once a step; a check that says stop makes poll_interrupt throw
// fk::Interrupted. It is no std::exception on purpose: the catches that turn
// an error into a failed run (a benchmark row, a batch member) let it pass,
// so it unwinds to the host, which raises its own exception
// (KeyboardInterrupt). Without an installed check polling costs a load.
namespace fk {

struct Interrupted {};

using InterruptCheck = bool (*)();
// The process's check (nullptr: none). Called from the polling thread.
void set_interrupt_check(InterruptCheck check);
// Runs the check at most every 100 ms of the calling thread's polls and
// throws Interrupted when it returns true.
void poll_interrupt();

}  // namespace fk
