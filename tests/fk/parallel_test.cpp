#include "fk/parallel.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "cli_run.h"
#include "fk/blas.h"
#include "scratch_dir.h"

namespace fk {
namespace {

// Every test in fk_tests must leave fk's thread count as it found it (later
// tests assume the count they were started with): checked after each test.
class ThreadCountIsRestored : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override { before_ = get_num_threads(); }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    const int after = get_num_threads();
    if (after != before_) {
      ADD_FAILURE() << info.test_suite_name() << "." << info.name()
                    << " changed fk's thread count from " << before_ << " to " << after
                    << " and did not restore it";
      set_num_threads(before_);
    }
  }
  int before_ = 0;
};
const bool kThreadCountChecked = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new ThreadCountIsRestored);
  return true;
}();

// Restores the thread count on scope exit.
class ThreadCountGuard {
 public:
  ThreadCountGuard() : saved_(get_num_threads()) {}
  ~ThreadCountGuard() { set_num_threads(saved_); }

 private:
  int saved_;
};

// One parallel_for run: which thread ran each index, and the ranges f got.
struct LoopRun {
  std::vector<std::thread::id> owner;
  std::vector<int> visits;
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

LoopRun run_loop(int64_t begin, int64_t end, int64_t grain) {
  LoopRun r;
  const int64_t n = std::max<int64_t>(end - begin, 0);
  r.owner.resize(static_cast<size_t>(n));
  std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
  std::mutex mu;
  parallel_for(begin, end, grain, [&](int64_t lo, int64_t hi) {
    {
      std::lock_guard<std::mutex> lock(mu);
      r.ranges.emplace_back(lo, hi);
    }
    for (int64_t i = lo; i < hi; ++i) {
      visits[static_cast<size_t>(i - begin)].fetch_add(1);
      r.owner[static_cast<size_t>(i - begin)] = std::this_thread::get_id();
    }
  });
  for (auto& v : visits) r.visits.push_back(v.load());
  return r;
}

TEST(Parallel, SetNumThreadsRoundTrips) {
  ThreadCountGuard guard;
  for (int n : {1, 2, 3, 7}) {
    set_num_threads(n);
    EXPECT_EQ(get_num_threads(), n);
  }
  set_num_threads(0);  // clamped: at least one thread
  EXPECT_EQ(get_num_threads(), 1);
  set_num_threads(-4);
  EXPECT_EQ(get_num_threads(), 1);
}

// fk's thread count holds for a GEMM on any thread: OpenBLAS sizes its team
// from the calling thread's OpenMP setting, which a thread other than
// set_num_threads' caller (a std::thread, a Python thread) keeps at the
// environment's. One thread here, two there: the same bits on both.
TEST(Parallel, AGemmOnAnotherThreadRunsAtFksCount) {
  const int before = get_num_threads();
  const int64_t m = 300, k = 200, n = 300;  // above the serial cutoff
  std::vector<double> a(m * k), b(k * n), main_c(m * n), worker_c(m * n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37 * static_cast<double>(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.11 * static_cast<double>(i));
  set_num_threads(1);
  gemm(DType::F64, false, false, m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, main_c.data(), n);
  int worker_setting = 0;
  std::thread([&] {
    omp_set_num_threads(2);  // the thread's own setting, as the environment's default
    gemm(DType::F64, false, false, m, n, k, 1.0, a.data(), k, b.data(), n, 0.0, worker_c.data(), n);
    worker_setting = omp_get_max_threads();
  }).join();
  set_num_threads(before);
  EXPECT_TRUE(main_c == worker_c);
  EXPECT_EQ(worker_setting, 2);  // left as the thread had it
}

// OMP_NUM_THREADS is latched once per process, so each value is read by a
// fresh fk-info (which prints the count, and refuses a bad knob in one line).
// OpenMP's list form ("3,1": one count per nesting level) gives fk the first.
TEST(Parallel, OmpNumThreadsTakesACountOrTheFirstOfAList) {
  const std::filesystem::path scratch = fieldkit_test::scratch_dir();
  const std::filesystem::path out = scratch / "fk_info_threads.txt";
  auto threads_line = [&](const std::string& value) {
    const std::string cmd = "OMP_NUM_THREADS='" + value + "' " +
                            fieldkit_test::sibling_binary("fk-info").string() + " > " +
                            out.string() + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << value;
    std::ifstream f(out);
    for (std::string line; std::getline(f, line);)
      if (line.rfind("threads", 0) == 0) return line;
    return std::string("no threads line");
  };
  EXPECT_EQ(threads_line("3"), "threads    3");
  EXPECT_EQ(threads_line("3,1"), "threads    3");
  EXPECT_EQ(threads_line(" 3 , 1 "), "threads    3");
  for (const std::string bad : {"abc", "3x", ",2", "2,", "2,x", "2,0", "5000", "-1"}) {
    const std::filesystem::path printed = scratch / "fk_info_refused.txt";
    const auto r = fieldkit_test::run_cli(
        "OMP_NUM_THREADS='" + bad + "' " + fieldkit_test::sibling_binary("fk-info").string(), "",
        scratch, printed.string());
    EXPECT_NE(r.status, 0) << bad;
    EXPECT_NE(r.err.find("knob OMP_NUM_THREADS"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("'" + bad + "'"), std::string::npos) << r.err;
    // One line of fk's (libgomp prints its own about a value it cannot read).
    size_t lines = 0;
    for (size_t at = r.err.find("fk-info:"); at != std::string::npos;
         at = r.err.find("fk-info:", at + 1))
      ++lines;
    EXPECT_EQ(lines, 1u) << r.err;
    EXPECT_EQ(std::filesystem::file_size(printed), 0u) << "refused before any line printed";
  }
  // A bad option: one line naming the tool, status 2 (it printed CLI11's two
  // lines without the tool's name and exited 109).
  const auto bogus =
      fieldkit_test::run_cli(fieldkit_test::sibling_binary("fk-info"), "--bogus", scratch);
  EXPECT_EQ(bogus.status, 2);
  EXPECT_EQ(bogus.err, "fk-info: The following argument was not expected: --bogus\n");
}

TEST(Parallel, RangeBelowTheGrainRunsOnTheCallingThread) {
  ThreadCountGuard guard;
  set_num_threads(4);
  const std::thread::id me = std::this_thread::get_id();
  // n < 2 * grain: at most one chunk, so no team.
  for (auto [begin, end, grain] : {std::tuple<int64_t, int64_t, int64_t>{0, 10, 100},
                                   {5, 104, 50},
                                   {-20, 19, 20},
                                   {0, 1, 1}}) {
    LoopRun r = run_loop(begin, end, grain);
    ASSERT_EQ(r.ranges.size(), 1u) << begin << ".." << end << " grain " << grain;
    EXPECT_EQ(r.ranges[0], std::make_pair(begin, end));
    for (size_t i = 0; i < r.owner.size(); ++i) EXPECT_EQ(r.owner[i], me) << "index " << i;
  }
  // With one thread, any range runs on the caller.
  set_num_threads(1);
  LoopRun r = run_loop(0, 100000, 1);
  ASSERT_EQ(r.ranges.size(), 1u);
  for (const auto& id : r.owner) ASSERT_EQ(id, me);
  // Empty and reversed ranges never call f.
  EXPECT_TRUE(run_loop(3, 3, 1).ranges.empty());
  EXPECT_TRUE(run_loop(5, 2, 1).ranges.empty());
}

// Every index exactly once, in contiguous ranges of at least `grain`
// indices, at most one range per thread, for several sizes and counts.
TEST(Parallel, EveryIndexVisitedOnceInRangesOfAtLeastTheGrain) {
  ThreadCountGuard guard;
  for (int threads : {1, 2, 3, 4}) {
    set_num_threads(threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 4099}) {
      for (int64_t grain : {0, 1, 3, 64, 500, 5000}) {
        SCOPED_TRACE("threads " + std::to_string(threads) + " n " + std::to_string(n) + " grain " +
                     std::to_string(grain));
        const int64_t begin = 11;
        LoopRun r = run_loop(begin, begin + n, grain);
        for (size_t i = 0; i < r.visits.size(); ++i) ASSERT_EQ(r.visits[i], 1) << "index " << i;
        EXPECT_LE(r.ranges.size(), static_cast<size_t>(threads));
        if (r.ranges.size() > 1) {
          for (auto [lo, hi] : r.ranges) EXPECT_GE(hi - lo, std::max<int64_t>(grain, 1));
        }
        // Each range ran on one thread, and no thread ran two ranges.
        std::set<std::thread::id> seen;
        for (auto [lo, hi] : r.ranges) {
          const std::thread::id id = r.owner[static_cast<size_t>(lo - begin)];
          for (int64_t i = lo; i < hi; ++i) ASSERT_EQ(r.owner[static_cast<size_t>(i - begin)], id);
          EXPECT_TRUE(seen.insert(id).second) << "a thread ran two ranges";
        }
      }
    }
  }
}

// A big range with two threads asks for a team of two. OpenMP guarantees it
// when dynamic adjustment is off and the thread limit allows two (the default;
// OMP_DYNAMIC=true or OMP_THREAD_LIMIT=1 may legitimately give one).
TEST(Parallel, BigRangeUsesMoreThanOneThread) {
  ThreadCountGuard guard;
  set_num_threads(2);
  LoopRun r = run_loop(0, 100000, 1000);
  std::set<std::thread::id> threads(r.owner.begin(), r.owner.end());
  if (omp_get_dynamic() || omp_get_thread_limit() < 2) {
    EXPECT_GE(threads.size(), 1u);
    GTEST_SKIP() << "OpenMP may shrink the team here (dynamic or thread limit)";
  }
  EXPECT_EQ(threads.size(), 2u);
  EXPECT_EQ(r.ranges.size(), 2u);
}

// Inside a parallel region the loop runs inline on the thread that called it.
TEST(Parallel, NestedCallsRunInline) {
  ThreadCountGuard guard;
  set_num_threads(2);
  std::atomic<int> inline_calls{0}, calls{0};
#pragma omp parallel num_threads(2)
  {
    const std::thread::id me = std::this_thread::get_id();
    parallel_for(0, 10000, 10, [&](int64_t lo, int64_t hi) {
      calls.fetch_add(1);
      if (std::this_thread::get_id() == me && lo == 0 && hi == 10000) inline_calls.fetch_add(1);
    });
  }
  EXPECT_EQ(calls.load(), inline_calls.load());
  EXPECT_GE(calls.load(), 1);
}

}  // namespace
}  // namespace fk
