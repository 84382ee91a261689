// fk::poll_interrupt: the host's check runs at most every 100 ms of polls and
// its "stop" is thrown as fk::Interrupted, no std::exception (so no catch of
// errors takes it for a failed run).
#include "fk/interrupt.h"

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <thread>
#include <type_traits>

namespace fk {
namespace {

int g_calls = 0;
bool g_stop = false;
bool counting_check() {
  ++g_calls;
  return g_stop;
}

TEST(Interrupt, TheHostsCheckIsPolledAtMostTenTimesASecond) {
  static_assert(!std::is_base_of_v<std::exception, Interrupted>);
  poll_interrupt();  // no check installed: nothing
  set_interrupt_check(&counting_check);
  g_calls = 0;
  g_stop = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  for (int i = 0; i < 1000; ++i) poll_interrupt();
  EXPECT_EQ(g_calls, 1);  // the first poll past 100 ms; the others skipped
  g_stop = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  EXPECT_THROW(poll_interrupt(), Interrupted);
  bool caught_as_error = false;
  std::this_thread::sleep_for(std::chrono::milliseconds(110));
  try {
    try {
      poll_interrupt();
    } catch (const std::exception&) {
      caught_as_error = true;  // a failed-run catch must not take it
    }
  } catch (const Interrupted&) {
  }
  EXPECT_FALSE(caught_as_error);
  set_interrupt_check(nullptr);
  poll_interrupt();
}

}  // namespace
}  // namespace fk
