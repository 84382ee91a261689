#include "fk/tensor.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "fk/autograd.h"
#include "fk/half.h"
#include "fk/ops/cpu/loops.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "fk/thread_count.h"

#include "scratch_dir.h"
#include "test_util.h"

namespace fk {
namespace {

TEST(Tensor, FactoriesShapesAndStrides) {
  Tensor t = zeros({2, 3, 4});
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.strides(), (Dims{12, 4, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(sum(t).item(), 0.0);
  EXPECT_EQ(sum(ones({5, 5})).item(), 25.0);
  EXPECT_EQ(full({2}, 3.5, {DType::F64}).to_vector<double>(), (std::vector<double>{3.5, 3.5}));
  EXPECT_EQ(arange(5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  auto ls = linspace(0, 1, 5, {DType::F64}).to_vector<double>();
  EXPECT_EQ(ls, (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  EXPECT_EQ(eye(2).to_vector<float>(), (std::vector<float>{1, 0, 0, 1}));
}

TEST(Tensor, ViewsShareStorageAndVersion) {
  Tensor t = arange(0, 12, 1, {DType::F32}).reshape({3, 4});
  Tensor tt = t.t();
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.shape(), (Dims{4, 3}));
  EXPECT_EQ(tt.contiguous().to_vector<float>(),
            (std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  // t() of a vector or a scalar is itself, a view (as torch's); of more than
  // two dims it is refused (it swapped dims 0 and 1; a vector's was an error).
  Tensor v = arange(0, 3, 1, {DType::F32});
  Tensor vt = v.t();
  EXPECT_EQ(vt.shape(), (Dims{3}));
  mul_(vt, 2.0);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{0, 2, 4}));
  EXPECT_EQ(full({}, 7.0).t().item(), 7.0);
  EXPECT_THROW((void)zeros({2, 3, 4}).t(), Error);
  Tensor col = t.select(1, 2);
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{2, 6, 10}));
  Tensor s = t.slice(1, 1, 4, 2);
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(t.narrow(0, 1, 2).to_vector<float>()[0], 4.0f);
  // An out-of-range start is named as given (-5), not as wrapped (-2).
  try {
    (void)t.narrow(0, -5, 1);
    ADD_FAILURE() << "narrow accepted start -5 of 3";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("got start -5, length 1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(t.unsqueeze(0).shape(), (Dims{1, 3, 4}));
  EXPECT_EQ(t.unsqueeze(-1).shape(), (Dims{3, 4, 1}));
  EXPECT_EQ(t.unsqueeze(0).squeeze().shape(), (Dims{3, 4}));
  EXPECT_EQ(t.permute({1, 0}).shape(), (Dims{4, 3}));
  EXPECT_EQ(t.reshape({-1}).shape(), (Dims{12}));
  Tensor e = ones({3, 1}).expand({3, 5});
  EXPECT_EQ(e.strides()[1], 0);
  EXPECT_EQ(sum(e).item(), 15.0);
  // Writing through a view bumps the shared version and is visible in the base.
  uint32_t v0 = t.version();
  Tensor row = t.select(0, 0);
  fill_(row, -1.0);
  EXPECT_GT(t.version(), v0);
  EXPECT_EQ(t.to_vector<float>()[3], -1.0f);
  EXPECT_TRUE(t.storage() == row.storage());
}

TEST(Tensor, DTypeConversionsAndHalfRoundTrip) {
  Tensor x = from_vector(std::vector<double>{1.0, -2.5, 65504.0, 1e-3, 3.14159});
  Tensor h = x.to(DType::F16);
  EXPECT_EQ(h.itemsize(), 2u);
  auto back = h.to_vector<double>();
  EXPECT_EQ(back[0], 1.0);
  EXPECT_EQ(back[1], -2.5);
  EXPECT_EQ(back[2], 65504.0);
  EXPECT_NEAR(back[3], 1e-3, 1e-6);
  EXPECT_NEAR(back[4], 3.14159, 2e-3);
  auto bf = x.to(DType::BF16).to_vector<double>();
  EXPECT_NEAR(bf[4], 3.14159, 2e-2);
  EXPECT_EQ(bf[0], 1.0);
  EXPECT_EQ(from_vector(std::vector<double>{2.7}).to(DType::I32).to_vector<int32_t>()[0], 2);
  Tensor c = x.to(DType::C64);
  EXPECT_EQ(c.real().to_vector<double>()[1], -2.5);
  EXPECT_EQ(c.imag().to_vector<double>()[1], 0.0);
  // A strided half conversion goes element by element.
  Tensor m = arange(0, 6, 1, {DType::F32}).reshape({2, 3}).t();
  EXPECT_EQ(m.to(DType::BF16).to(DType::F32).contiguous().to_vector<float>(),
            (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Tensor, Promotion) {
  EXPECT_EQ(promote(DType::I32, DType::F16), DType::F16);
  EXPECT_EQ(promote(DType::F16, DType::BF16), DType::F32);
  EXPECT_EQ(promote(DType::F64, DType::C64), DType::C128);
  EXPECT_EQ(promote(DType::Bool, DType::I32), DType::I32);
  EXPECT_EQ(promote(DType::I32, DType::I64), DType::I64);
  EXPECT_EQ((ones({2}, {DType::I32}) + ones({2}, {DType::F64})).dtype(), DType::F64);
  EXPECT_EQ((ones({2}, {DType::I32}) / ones({2}, {DType::I32})).dtype(), DType::F32);
  EXPECT_EQ((ones({2}, {DType::F16}) * 2.0).dtype(), DType::F16);
}

TEST(Tensor, PrintingIsReadable) {
  std::string s = arange(0, 4, 1, {DType::F32}).reshape({2, 2}).str();
  EXPECT_NE(s.find("dtype=f32"), std::string::npos);
  EXPECT_NE(s.find("shape=[2, 2]"), std::string::npos);
  EXPECT_NE(s.find("[[0, 1]"), std::string::npos);
  std::string longs = arange(100).str();
  EXPECT_NE(longs.find("..."), std::string::npos);
}

TEST(Tensor, ErrorsNameExpectedAndGiven) {
  Tensor t = zeros({2, 3});
  try {
    t.view({4, 2});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a shape with 6 elements"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(t.t().view({6}), Error);  // non-contiguous view
  EXPECT_THROW(t.select(0, 2), Error);
  EXPECT_THROW(t.size(2), Error);
  EXPECT_THROW(scalar_tensor(1.0).size(0), Error);  // a 0-d tensor has no dim 0
  EXPECT_THROW(scalar_tensor(1.0).stride(-1), Error);
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_THROW(add(zeros({2, 3}), zeros({3, 2})), Error);
  EXPECT_THROW(zeros({2}).item(), Error);
  EXPECT_THROW(zeros({1}, {DType::I32}).set_requires_grad(true), Error);
  EXPECT_THROW(parse_device("gpu"), Error);
  EXPECT_THROW(dtype_from_name("float8"), Error);
  EXPECT_EQ(dtype_from_name("int64"), DType::I64);  // numpy's and torch's names too
  EXPECT_EQ(dtype_from_name("long"), DType::I64);
  EXPECT_EQ(dtype_from_name("int32"), DType::I32);
  EXPECT_EQ(dtype_from_name("complex128"), DType::C128);
  EXPECT_THROW(zeros({2}, {DType::F32, cuda_device(0)}), Error);  // no GPU here
  EXPECT_THROW(zeros({1, 2, 3, 4, 5, 6, 7, 8, 9}), Error);
}

TEST(Memory, CachingAllocatorReusesBlocksAndReports) {
  empty_cache();
  MemoryStats s0 = memory_stats();
  { Tensor t = empty({1000}); }
  MemoryStats s1 = memory_stats();
  EXPECT_EQ(s1.allocated, s0.allocated);
  EXPECT_GE(s1.reserved, s0.reserved + 4000);
  { Tensor t = empty({1000}); }
  MemoryStats s2 = memory_stats();
  EXPECT_EQ(s2.cache_hits, s1.cache_hits + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(empty({3}).data_ptr()) % 64, 0u);
  reset_peak_memory();
  { Tensor big = empty({1 << 20}); }
  EXPECT_GE(memory_stats().peak, memory_stats().allocated + (4 << 20));
  empty_cache();
  EXPECT_LT(memory_stats().reserved, s2.reserved);
}

// Large blocks: a request reuses a free block up to a quarter larger, a
// loop of fixed sizes keeps all its blocks (however reset_peak_memory moves),
// and a loop whose sizes all differ keeps no more free bytes than it ever
// had live (it kept one block of every size: 1 GiB here, where 64 MiB were
// live at most).
TEST(Memory, LargeBlocksAreReusedByBestFitAndTheirCacheIsBounded) {
  empty_cache();
  const int64_t base = memory_stats().reserved;
  const MemoryStats start = memory_stats();
  for (int step = 0; step < 5; ++step) {
    reset_peak_memory();
    Tensor a = empty({int64_t{25'000'000}}), b = empty({int64_t{7'500'000}}),
           c = empty({int64_t{7'500'000}});  // 100 MB and two of 30 MB
  }
  EXPECT_EQ(memory_stats().num_allocs - start.num_allocs, 15);
  EXPECT_EQ(memory_stats().cache_hits - start.cache_hits, 12);  // all but the first step's
  empty_cache();
  { Tensor t = empty({int64_t{10} << 20}); }  // 40 MiB
  const MemoryStats one = memory_stats();
  { Tensor t = empty({int64_t{9} << 20}); }  // 36 MiB fits it
  EXPECT_EQ(memory_stats().cache_hits, one.cache_hits + 1);
  EXPECT_EQ(memory_stats().reserved, one.reserved);
  { Tensor t = empty({int64_t{3} << 20}); }  // 12 MiB would waste too much of it
  EXPECT_EQ(memory_stats().cache_hits, one.cache_hits + 1);
  for (int64_t mib = 6; mib <= 64; mib += 2) Tensor t = empty({mib << 18});
  EXPECT_LE(memory_stats().reserved - base, int64_t{64} << 20);
  empty_cache();
  EXPECT_EQ(memory_stats().reserved, base);
}

// Over the bound, the block freed longest ago goes back to the system: two
// one-off buffers freed once stay out of a loop's way. Returning the
// largest first unmapped one of the loop's two blocks on every step (each
// step a fresh allocation), while the one-off blocks stayed cached.
TEST(Memory, TheBlockFreedLongestAgoIsReleasedFirst) {
  empty_cache();
  {  // 2 x 36 MiB live once: the bound is 72 MiB
    Tensor a = empty({int64_t{9} << 20}), b = empty({int64_t{9} << 20});
  }
  { Tensor a = empty({int64_t{7} << 19}), b = empty({int64_t{7} << 19}); }  // 2 x 14 MiB, once
  // The first step may miss once (a 36 MiB block was older than the 14s);
  // after it the one-off blocks are the oldest, and every step hits both.
  { Tensor a = empty({int64_t{9} << 20}), b = empty({int64_t{9} << 20}); }
  const MemoryStats before = memory_stats();
  for (int step = 0; step < 4; ++step) {
    Tensor a = empty({int64_t{9} << 20}), b = empty({int64_t{9} << 20});
  }
  EXPECT_EQ(memory_stats().cache_hits - before.cache_hits, 8);
  EXPECT_EQ(memory_stats().reserved, before.reserved);
  empty_cache();
}

TEST(Knobs, RegistryParsesAndRejects) {
  static Knob k("FK_TEST_KNOB", KnobType::Int, "3", "a knob for tests", KnobRead::PerCall);
  EXPECT_EQ(k.as_int(), 3);
  setenv("FK_TEST_KNOB", "12", 1);
  EXPECT_EQ(k.as_int(), 12);
  setenv("FK_TEST_KNOB", "twelve", 1);
  try {
    (void)k.as_int();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("knob FK_TEST_KNOB: expected an integer, got 'twelve'"),
              std::string::npos)
        << e.what();
  }
  for (const char* bad : {" 12", "12 ", "+12", "0x10", "1.0", "99999999999999999999"}) {
    setenv("FK_TEST_KNOB", bad, 1);
    EXPECT_THROW((void)k.as_int(), Error) << bad;
  }
  setenv("FK_TEST_KNOB", "-4", 1);
  EXPECT_EQ(k.as_int(), -4);
  unsetenv("FK_TEST_KNOB");
  static Knob latched("FK_TEST_LATCHED", KnobType::Bool, "0", "latched", KnobRead::Latched);
  EXPECT_FALSE(latched.as_bool());
  setenv("FK_TEST_LATCHED", "1", 1);
  EXPECT_FALSE(latched.as_bool());  // latched at first use
  latched.set_override("on");
  EXPECT_TRUE(latched.as_bool());
  unsetenv("FK_TEST_LATCHED");
  bool found = false;
  for (const Knob* kn : knobs()) found = found || std::string(kn->name()) == "FK_TEST_KNOB";
  EXPECT_TRUE(found);
  EXPECT_THROW(knob("NO_SUCH_KNOB"), Error);
}

// The error for a malformed value names the knob, the form it accepts and the
// text given.
void expect_knob_error(Knob& k, const std::string& value, const std::string& expected) {
  try {
    k.set_override(value);
    ADD_FAILURE() << k.name() << " accepted '" << value << "'";
  } catch (const Error& e) {
    const std::string want =
        std::string("knob ") + k.name() + ": expected " + expected + ", got '" + value + "'";
    EXPECT_EQ(std::string(e.what()), want);
  }
}

TEST(Knobs, FloatKnobsAcceptFiniteValuesInTheirRangeOnly) {
  static Knob size("FK_TEST_FLOAT", KnobType::Float, "2048", "a size knob for tests",
                   KnobRead::PerCall);
  EXPECT_EQ(size.range().lo, 0.0);
  EXPECT_EQ(size.range().hi, 1e9);
  EXPECT_EQ(size.as_float(), 2048.0);
  const std::string form = "a finite number in [0, 1e+09]";
  // and text the word knobs refuse: a blank, a '+', hexadecimal (0x10 was 16)
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "1e400", "-1", "-0.5", "1e30", "1000000001",
                          "abc", "3x", "", " 5", "5 ", "+5", "0x10"}) {
    expect_knob_error(size, bad, form);
  }
  EXPECT_EQ(size.as_float(), 2048.0);  // a refused override leaves the value in force
  // The same values from the environment are refused when read.
  for (const char* bad : {"nan", "inf", "-1", "1e30"}) {
    setenv("FK_TEST_FLOAT", bad, 1);
    EXPECT_THROW(size.validate(), Error) << bad;
    EXPECT_THROW((void)size.as_float(), Error) << bad;
  }
  unsetenv("FK_TEST_FLOAT");
  for (double good : {0.0, 0.25, 1e9}) {
    size.set_override(std::to_string(good));
    EXPECT_EQ(size.as_float(), good);
  }
  size.set_override(std::nullopt);
  // A knob with its own range.
  static Knob signed_knob("FK_TEST_SIGNED_FLOAT", KnobType::Float, "0", "a signed knob",
                          KnobRead::Latched, KnobRange{-1.0, 1.0});
  signed_knob.set_override("-0.75");
  EXPECT_EQ(signed_knob.as_float(), -0.75);
  expect_knob_error(signed_knob, "1.5", "a finite number in [-1, 1]");
  expect_knob_error(signed_knob, "-inf", "a finite number in [-1, 1]");
  EXPECT_EQ(signed_knob.as_float(), -0.75);
  signed_knob.set_override(std::nullopt);
}

TEST(Knobs, BoolKnobsRejectOtherWords) {
  static Knob flag("FK_TEST_BOOL", KnobType::Bool, "0", "a flag for tests", KnobRead::PerCall);
  for (const char* bad : {"2", "maybe", "-1", "nan", "tru"}) {
    expect_knob_error(flag, bad, "0, 1, true, false, on, off, yes or no");
  }
  for (const char* on : {"1", "TRUE", "On", "yes"}) {
    flag.set_override(on);
    EXPECT_TRUE(flag.as_bool()) << on;
  }
  flag.set_override("off");
  EXPECT_FALSE(flag.as_bool());
  flag.set_override(std::nullopt);
  // An empty environment value is unset: a default-on flag stays on (the
  // shell's `VAR= cmd`), and an empty override is refused as malformed.
  static Knob on_flag("FK_TEST_BOOL_ON", KnobType::Bool, "1", "a flag on by default",
                      KnobRead::PerCall);
  setenv("FK_TEST_BOOL_ON", "", 1);
  EXPECT_TRUE(on_flag.as_bool());
  EXPECT_EQ(on_flag.raw(), "1");
  unsetenv("FK_TEST_BOOL_ON");
  expect_knob_error(flag, "", "0, 1, true, false, on, off, yes or no");
}

// A String knob with choices refuses any other word, read or validated (so
// fk-info's validation vouches for it), and never latches one.
TEST(Knobs, ChoiceKnobsRefuseOtherWordsWhereverTheyAreRead) {
  static Knob mode("FK_TEST_CHOICE", KnobChoices{{"off", "warn", "error"}}, "off", "a choice knob",
                   KnobRead::Latched);
  EXPECT_EQ(mode.choices().size(), 3u);
  expect_knob_error(mode, "loud", "one of off, warn or error");
  setenv("FK_TEST_CHOICE", "loud", 1);
  EXPECT_THROW(mode.validate(), Error);
  EXPECT_THROW((void)mode.as_string(), Error);
  setenv("FK_TEST_CHOICE", "warn", 1);  // corrected: read now, nothing bad was latched
  EXPECT_EQ(mode.as_string(), "warn");
  unsetenv("FK_TEST_CHOICE");
}

// A scoped override puts back what it replaced, nested or not, also when the
// scope is left by an exception; a malformed value is refused and changes
// nothing.
TEST(Knobs, KnobOverrideRestoresWhatItReplaced) {
  static Knob k("FK_TEST_SCOPED", KnobType::Int, "3", "a scoped knob", KnobRead::Latched);
  EXPECT_EQ(k.as_int(), 3);
  {
    KnobOverride outer("FK_TEST_SCOPED", "5");
    EXPECT_EQ(k.as_int(), 5);
    try {
      KnobOverride inner("FK_TEST_SCOPED", "7");
      EXPECT_EQ(k.as_int(), 7);
      EXPECT_EQ(k.override_value(), std::optional<std::string>("7"));
      throw Error("the test", "nothing", "an exception leaving the scope");
    } catch (const Error&) {
    }
    EXPECT_EQ(k.as_int(), 5);  // the latch re-read the outer override
    EXPECT_THROW(KnobOverride("FK_TEST_SCOPED", "seven"), Error);
    EXPECT_EQ(k.as_int(), 5);
    {
      KnobOverride cleared("FK_TEST_SCOPED", std::nullopt);
      EXPECT_EQ(k.as_int(), 3);
    }
    EXPECT_EQ(k.as_int(), 5);
  }
  EXPECT_EQ(k.override_value(), std::nullopt);
  EXPECT_EQ(k.as_int(), 3);
  EXPECT_THROW(KnobOverride("NO_SUCH_KNOB", "1"), Error);
}

// Every knob's default must parse (a bad default would only fail at first use).
TEST(Knobs, EveryRegisteredDefaultIsValid) {
  for (const Knob* k : knobs()) {
    Knob& m = mutable_knob(k->name());
    EXPECT_NO_THROW(m.set_override(std::string(k->default_value()))) << k->name();
    m.set_override(std::nullopt);
  }
}

TEST(CpuIsa, KnobCapsTheLevelAndGenericHalfConversionMatches) {
  Knob& k = mutable_knob("FK_CPU_ISA");
  std::vector<float> in;
  for (int i = -3000; i <= 3000; ++i) in.push_back(static_cast<float>(i) * 37.3f + 0.1f * i);
  in.push_back(1e-7f);    // subnormal in f16
  in.push_back(70000.f);  // overflows f16
  const int64_t n = static_cast<int64_t>(in.size());
  std::vector<Half> h_auto(in.size()), h_gen(in.size());
  std::vector<BFloat16> b_auto(in.size()), b_gen(in.size());
  std::vector<float> back_auto(in.size()), back_gen(in.size());
  k.set_override("auto");
  EXPECT_EQ(cpu_isa(), cpu_isa_detected());
  float_to_half(in.data(), h_auto.data(), n);
  half_to_float(h_auto.data(), back_auto.data(), n);
  float_to_bf16(in.data(), b_auto.data(), n);
  k.set_override("generic");
  EXPECT_EQ(cpu_isa(), CpuIsa::Generic);
  EXPECT_STREQ(cpu_isa_name(cpu_isa()), "generic");
  float_to_half(in.data(), h_gen.data(), n);
  half_to_float(h_gen.data(), back_gen.data(), n);
  float_to_bf16(in.data(), b_gen.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(h_auto[i].bits, h_gen[i].bits) << in[i];
    ASSERT_EQ(b_auto[i].bits, b_gen[i].bits) << in[i];
    ASSERT_EQ(back_auto[i], back_gen[i]) << in[i];
  }
  EXPECT_FALSE(cpu_avx512());  // generic caps the AVX-512 kernels too
  // avx2 caps an AVX-512 CPU at AVX2 and leaves a lesser one as it is.
  k.set_override("avx2");
  EXPECT_EQ(cpu_isa(), std::min(CpuIsa::Avx2, cpu_isa_detected()));
  EXPECT_FALSE(cpu_avx512());
  EXPECT_FALSE(cpu_avx512_bf16());
  k.set_override("avx512");  // the same as auto
  EXPECT_EQ(cpu_isa(), cpu_isa_detected());
  EXPECT_EQ(cpu_avx512(), cpu_isa_detected() == CpuIsa::Avx512);
  EXPECT_TRUE(!cpu_avx512_bf16() || cpu_avx512());
  // An unknown ISA is refused by the knob itself (so fk-info refuses it too).
  expect_knob_error(k, "avx1024", "one of auto, avx512, avx2 or generic");
  EXPECT_EQ(cpu_isa(), cpu_isa_detected());  // the refused value changed nothing
  k.set_override(std::nullopt);
}

TEST(Profile, CountsOpsViewsAndTime) {
  Tensor a = ones({4}), b = ones({4});
  profile::ProfileScope scope;
  Tensor c = add(a, b);
  Tensor d = mul(sub(c, a), div(c, b));  // three more ops
  Tensor v = d.reshape({2, 2}).t();
  // sleep_for waits at least this long on the steady clock the scope reads.
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  auto r = scope.report();
  EXPECT_EQ(r.counts.ops, 4);
  EXPECT_EQ(r.counts.view_ops, 2);
  EXPECT_EQ(r.counts.launches, 0);  // every op is below the elementwise grain
  EXPECT_GE(r.wall_ms, 3.0);
  EXPECT_NE(r.str().find("4 ops, 2 view ops, 0 launches"), std::string::npos) << r.str();
}

// A launch is a parallel region or a BLAS call: an elementwise op above the
// grain is one launch with two threads and none with one; a GEMM is one.
TEST(Profile, CountsLaunches) {
  Tensor big = ones({2 * cpu::kElementwiseGrain});
  for (int threads : {1, 2}) {
    const test::ThreadCount count(threads);
    profile::ProfileScope scope;
    Tensor c = add(big, big);
    EXPECT_EQ(scope.report().counts.launches, threads == 1 ? 0 : 1) << threads << " threads";
    EXPECT_EQ(scope.report().counts.ops, 1);
  }
  Tensor m = ones({4, 4});
  profile::ProfileScope scope;
  Tensor p = matmul(m, m);
  EXPECT_EQ(scope.report().counts.launches, 1);
  // Above the grain but below two of it, the loop runs on one thread: no
  // launch (one was counted).
  Tensor mid = ones({cpu::kElementwiseGrain + cpu::kElementwiseGrain / 2});
  const test::ThreadCount two(2);
  profile::ProfileScope serial;
  Tensor d = add(mid, mid);
  EXPECT_EQ(serial.report().counts.launches, 0);
}

// What a parallel region's worker threads count joins the opening thread's:
// each thread keeps its own counters, and ops and launches made on workers
// were lost (eight ops in a two-thread region counted four).
TEST(Profile, WorkerThreadsCountForTheCaller) {
  std::vector<Tensor> small(8, ones({4, 4}));
  std::vector<Tensor> out(8);
  profile::Counters seen[2];
  for (int threads : {1, 2}) {
    const test::ThreadCount count(threads);
    profile::ProfileScope scope;
    parallel_for(0, 8, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) out[i] = matmul(small[i], small[i]);
    });
    seen[threads - 1] = scope.report().counts;
  }
  EXPECT_GE(seen[0].ops, 8);
  EXPECT_EQ(seen[1].ops, seen[0].ops);
  EXPECT_GE(seen[0].launches, 8);                     // a GEMM each
  EXPECT_EQ(seen[1].launches, seen[0].launches + 1);  // and the region
}

// The scope's peak is the most memory in use since it began: at least what was
// in use then plus a tensor allocated (and freed) inside it.
TEST(Profile, PeakMemoryOfTheScope) {
  Tensor keep = ones({1000});
  const int64_t before = memory_stats().allocated;
  {
    profile::ProfileScope scope;
    Tensor v = keep.reshape({10, 100}).t();  // views allocate nothing
    EXPECT_EQ(scope.report().peak_bytes, before);
  }
  profile::ProfileScope scope;
  const int64_t bytes = int64_t{1} << 22;
  {
    Tensor t = empty({bytes / 4}, {DType::F32});
    EXPECT_EQ(t.nbytes(), bytes);
  }
  EXPECT_EQ(memory_stats().allocated, before);
  const auto r = scope.report();
  EXPECT_GE(r.peak_bytes, before + bytes);
  EXPECT_LT(r.peak_bytes, before + 2 * bytes);  // one tensor, not two
  EXPECT_NE(r.str().find("peak 4.0"), std::string::npos) << r.str();
}

// A scope opened inside another keeps the outer's peak: its reset of the
// allocator's one peak wiped what the outer had seen (100 MiB read as 0).
TEST(Profile, ANestedScopeKeepsTheOutersPeak) {
  const int64_t before = memory_stats().allocated;
  const int64_t bytes = int64_t{100} << 20;
  profile::ProfileScope outer;
  { Tensor t = empty({bytes / 4}, {DType::F32}); }
  int64_t inner_peak = 0;
  {
    profile::ProfileScope inner;
    Tensor small = empty({1024}, {DType::F32});
    inner_peak = inner.report().peak_bytes;
  }
  EXPECT_LT(inner_peak, before + bytes);  // the inner scope's own peak: not the outer's
  EXPECT_GE(outer.report().peak_bytes, before + bytes);
  profile::ProfileScope later;  // a scope opened after both reads only its own
  EXPECT_LT(later.report().peak_bytes, before + bytes);
}

// Event totals: calls and total time by name, and self time with the events
// nested in an event (on its thread) taken out; a TraceScope is recorded
// without counting an op.
TEST(Profile, EventTotalsSplitSelfFromNestedTime) {
  profile::clear_trace();
  profile::record_event("outer", 1000000, 10000000);  // 1 ms .. 11 ms
  profile::record_event("inner", 2000000, 3000000);   // 2 .. 5 ms, inside outer
  profile::record_event("inner", 6000000, 1000000);   // 6 .. 7 ms, inside outer
  profile::record_event("after", 12000000, 500000);   // 12 .. 12.5 ms, after outer
  const std::vector<profile::EventTotal> t = profile::event_totals();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].name, "outer");  // largest self time first
  EXPECT_EQ(t[0].calls, 1);
  EXPECT_NEAR(t[0].total_ms, 10.0, 1e-9);
  EXPECT_NEAR(t[0].self_ms, 6.0, 1e-9);
  EXPECT_EQ(t[1].name, "inner");
  EXPECT_EQ(t[1].calls, 2);
  EXPECT_NEAR(t[1].total_ms, 4.0, 1e-9);
  EXPECT_NEAR(t[1].self_ms, 4.0, 1e-9);
  EXPECT_EQ(t[2].name, "after");
  EXPECT_NEAR(t[2].self_ms, 0.5, 1e-9);
  profile::clear_trace();
  EXPECT_TRUE(profile::event_totals().empty());

  const Tensor a = ones({4});
  const int64_t ops = profile::counters().ops;
  profile::set_tracing(true);
  {
    const profile::TraceScope scope("scope");
    Tensor c = add(a, a);
  }
  profile::set_tracing(false);
  EXPECT_EQ(profile::counters().ops - ops, 1);  // the add; the scope is no op
  const std::vector<profile::EventTotal> s = profile::event_totals();
  const auto find = [&](const std::string& name) {
    return std::find_if(s.begin(), s.end(), [&](const auto& e) { return e.name == name; });
  };
  ASSERT_NE(find("scope"), s.end());
  ASSERT_NE(find("add"), s.end());
  EXPECT_GE(find("scope")->total_ms, find("add")->total_ms);
  EXPECT_LE(find("scope")->self_ms, find("scope")->total_ms - find("add")->total_ms + 1e-9);
  profile::clear_trace();
}

// fk::synchronize: nothing to wait for on the CPU; a device fk cannot use is
// refused by name.
TEST(Profile, SynchronizeRefusesADeviceItCannotUse) {
  const int64_t syncs = profile::counters().syncs;
  synchronize(kCPU);
  EXPECT_EQ(profile::counters().syncs, syncs);
  try {
    synchronize(cuda_device(100));
    FAIL() << "cuda:100 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:100"), std::string::npos) << e.what();
  }
}

TEST(Profile, ChromeTrace) {
  profile::clear_trace();
  profile::set_tracing(true);
  Tensor c = add(ones({4}), ones({4}));
  // A name with a quote, a backslash and a tab is escaped (it ended the
  // JSON string early: the trace was unreadable).
  profile::record_event("quote\"back\\tab\t", profile::now_ns(), 1000);
  profile::set_tracing(false);
  const std::string path = (fieldkit_test::scratch_dir() / "trace.json").string();
  profile::export_chrome_trace(path);
  FILE* f = std::fopen(path.c_str(), "r");
  ASSERT_TRUE(f);
  char buf[4096] = {};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string s(buf, n);
  EXPECT_NE(s.find("\"name\":\"add\""), std::string::npos) << s;
  EXPECT_NE(s.find("\"name\":\"quote\\\"back\\\\tab\\u0009\""), std::string::npos) << s;
  profile::clear_trace();
  EXPECT_THROW(profile::export_chrome_trace("/nonexistent/dir/t.json"), Error);
}

}  // namespace
}  // namespace fk

namespace fk {
namespace {

TEST(Copy, TiledTransposeMatchesElementwise) {
  // Shapes around the tile size, batched, and a sliced source.
  for (auto shape : {Dims{37, 70}, Dims{3, 40, 33}, Dims{64, 64}}) {
    Tensor x = test::random_tensor(shape, DType::F32);
    Tensor xt = x.transpose(-1, -2);
    Tensor c = xt.contiguous();
    auto xv = x.to_vector<float>();
    int64_t r = shape[shape.size() - 2], k = shape[shape.size() - 1];
    int64_t batch = x.numel() / (r * k);
    auto cv = c.to_vector<float>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < r; ++j) ASSERT_EQ(cv[(b * k + i) * r + j], xv[(b * r + j) * k + i]);
  }
  Tensor y = test::random_tensor({50, 60}, DType::F64);
  Tensor ys = y.slice(1, 5, 55).t();  // [50 cols, 50 rows], source rows strided by 60
  auto yv = y.to_vector<double>(), sv = ys.contiguous().to_vector<double>();
  for (int64_t i = 0; i < 50; ++i)
    for (int64_t j = 0; j < 50; ++j) ASSERT_EQ(sv[i * 50 + j], yv[j * 60 + 5 + i]);
}

// An integer tensor holds a fill value truncated (torch's); a NaN, an
// infinity or a value past its range is refused (the cast wrote INT_MIN).
TEST(Tensor, IntegerFillRefusesValuesTheTypeCannotHold) {
  EXPECT_EQ(full({2}, 2.7, {DType::I32}).to_vector<int32_t>(), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(full({1}, -2147483648.0, {DType::I32}).to_vector<int32_t>()[0], INT32_MIN);
  EXPECT_EQ(full({1}, -9223372036854775808.0, {DType::I64}).to_vector<int64_t>()[0], INT64_MIN);
  for (double v : {double(NAN), double(INFINITY), 1e20, 2147483648.0}) {
    EXPECT_NE(test::error_of([&] { full({2}, v, {DType::I32}); }).find("a value i32 holds"),
              std::string::npos)
        << v;
  }
  EXPECT_THROW(full({2}, 9.3e18, {DType::I64}), Error);
  // A real tensor holds no imaginary part (it was dropped without a word).
  for (DType d : {DType::F32, DType::F64, DType::I64}) {
    EXPECT_NE(test::error_of([&] { full({2}, c128(1, 2), {d}); }).find("a real value"),
              std::string::npos)
        << name(d);
    EXPECT_EQ(full({1}, c128(3, 0), {d}).to(DType::F64).item(), 3.0);
  }
  const Tensor i = from_vector(std::vector<int32_t>{1, 2});
  EXPECT_THROW(masked_fill(i, gt(i, scalar_tensor(1.5)), NAN), Error);
  // f16 holds up to 65504 (and the infinities): 1e6 became inf silently.
  EXPECT_THROW(full({2}, 1e6, {DType::F16}), Error);
  EXPECT_EQ(full({1}, 65504.0, {DType::F16}).to_vector<double>()[0], 65504.0);
  EXPECT_TRUE(std::isinf(full({1}, -INFINITY, {DType::F16}).to_vector<double>()[0]));
  EXPECT_EQ(full({1}, 1e6, {DType::BF16}).dtype(), DType::BF16);
  EXPECT_THROW(full({1}, 1e39, {DType::F32}), Error);
  EXPECT_THROW(full({1}, -1e39, {DType::BF16}), Error);
  // A c64 holds two f32s: either part past f32's range was stored as inf.
  EXPECT_THROW(full({1}, c128(1e39, 0), {DType::C64}), Error);
  EXPECT_THROW(full({1}, c128(0, -1e39), {DType::C64}), Error);
  EXPECT_EQ(full({1}, c128(1e39, -1e300), {DType::C128}).dtype(), DType::C128);
  // Arithmetic with such a scalar is not a fill: the scalar is the dtype's
  // value (inf past f16's range, 65504 just past it), as torch's x * 1e5.
  const Tensor h = from_vector(std::vector<double>{0, 1, -2}).to(DType::F16);
  const auto prod = mul(h, 1e5).to_vector<double>();
  EXPECT_TRUE(std::isnan(prod[0]));
  EXPECT_EQ(prod[1], INFINITY);
  EXPECT_EQ(prod[2], -INFINITY);
  EXPECT_EQ(mul(h, 65504.5).to_vector<double>()[1], 65504.0);
  EXPECT_EQ(add(h, 7e4).dtype(), DType::F16);
  EXPECT_EQ(mul(from_vector(std::vector<double>{1}).to(DType::F32), 1e39).to_vector<double>()[0],
            INFINITY);
}

// Factories at their edges, as torch: one linspace point is start (it was
// end); an eye whose n * n passes int64 is refused (it wrote out of bounds);
// an arange to NaN, inf or past 2^63 steps is refused (it was empty).
TEST(Tensor, FactoriesAtTheirEdges) {
  EXPECT_EQ(linspace(0, 1, 1).to_vector<double>(), std::vector<double>{0});
  EXPECT_EQ(linspace(5, -3, 1, {DType::F64}).to_vector<double>(), std::vector<double>{5});
  EXPECT_EQ(linspace(0, 1, 3, {DType::F64}).to_vector<double>(), (std::vector<double>{0, 0.5, 1}));
  EXPECT_THROW(eye(int64_t{1} << 32), Error);
  EXPECT_THROW(eye(-2), Error);
  EXPECT_EQ(eye(2).to_vector<double>(), (std::vector<double>{1, 0, 0, 1}));
  for (double end : {double(NAN), double(INFINITY), 1e20})
    EXPECT_NE(test::error_of([&] { arange(0.0, end, 1.0); }).find("arange"), std::string::npos)
        << end;
}

// A NaN, an infinity or a value out of an integer's range converts to the
// type's lowest value (x86's and torch's CPU result), defined, not UB.
TEST(Tensor, FloatToIntegerConversionOutOfRangeIsDefined) {
  const Tensor x = from_vector(std::vector<double>{NAN, INFINITY, -1e30, 3e9, -2.7, 2.7});
  EXPECT_EQ(x.to(DType::I32).to_vector<int32_t>(),
            (std::vector<int32_t>{INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, -2, 2}));
  EXPECT_EQ(x.to(DType::I64).to_vector<int64_t>()[3], 3000000000LL);
  EXPECT_EQ(x.to(DType::I64).to_vector<int64_t>()[0], INT64_MIN);
  EXPECT_EQ(x.to(DType::F32).to(DType::I32).to_vector<int32_t>()[1], INT32_MIN);
}

// fill_ is in place: refused on a tensor that requires grad under grad mode
// (autograd would not see it), allowed under no_grad (initialising a parameter).
TEST(Tensor, FillInPlaceRefusesATensorNeedingGrad) {
  Tensor p = zeros({4}, {DType::F64}).set_requires_grad(true);
  try {
    fill_(p, 1.5);
    ADD_FAILURE() << "fill_ of a tensor requiring grad was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fill_"), std::string::npos) << e.what();
  }
  EXPECT_EQ(p.to_vector<double>(), std::vector<double>(4, 0.0));
  {
    autograd::NoGradGuard ng;
    fill_(p, 1.5);
  }
  EXPECT_EQ(p.to_vector<double>(), std::vector<double>(4, 1.5));
}

}  // namespace
}  // namespace fk
