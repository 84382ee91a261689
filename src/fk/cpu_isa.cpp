#include "fk/cpu_isa.h"

#include <cpuid.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "fk/error.h"
#include "fk/knobs.h"

namespace fk {
namespace {

Knob kCpuIsa("FK_CPU_ISA", KnobType::String, "auto",
             "highest x86 vector ISA the CPU kernels may use: auto, avx512, avx2 or generic "
             "(capped by what the CPU has)",
             KnobRead::Latched);

// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
// does not know "f16c" (the fuzz build is clang's).
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}

}  // namespace

CpuIsa cpu_isa_detected() {
  static const CpuIsa isa = [] {
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    return avx2 ? CpuIsa::Avx2 : CpuIsa::Generic;
  }();
  return isa;
}

CpuIsa cpu_isa() {
  // Called per kernel call (per x-plane of a heat sweep): the answer is cached
  // as (knob version << 1 | isa) and re-derived only after an override.
  static std::atomic<uint64_t> cache{~uint64_t{0}};
  const uint64_t v = kCpuIsa.version();
  const uint64_t c = cache.load(std::memory_order_acquire);
  if (c >> 1 == v) return static_cast<CpuIsa>(c & 1);
  const std::string want = kCpuIsa.as_string();
  FK_CHECK(want == "auto" || want == "avx512" || want == "avx2" || want == "generic", "FK_CPU_ISA",
           "one of auto, avx512, avx2, generic", want);
  const CpuIsa isa = want == "generic" ? CpuIsa::Generic : cpu_isa_detected();
  cache.store(v << 1 | static_cast<uint64_t>(isa), std::memory_order_release);
  return isa;
}

namespace {

// Bit 0: AVX-512 F/BW/DQ/VL, bit 1: AVX512_BF16 as well; capped by the knob.
unsigned avx512_bits() {
  static const unsigned detected = [] {
    __builtin_cpu_init();
    const bool f = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    unsigned a = 0, b = 0, c = 0, d = 0;  // AVX512_BF16: CPUID leaf 7 sub-leaf 1, EAX bit 5
    const bool bf16 = f && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) != 0;
    return (f ? 1u : 0u) | (bf16 ? 2u : 0u);
  }();
  static std::atomic<uint64_t> cache{~uint64_t{0}};
  const uint64_t v = kCpuIsa.version();
  const uint64_t c = cache.load(std::memory_order_acquire);
  if (c >> 2 == v) return static_cast<unsigned>(c & 3);
  const bool allowed = cpu_isa() == CpuIsa::Avx2 && kCpuIsa.as_string() != "avx2";
  const unsigned bits = allowed ? detected : 0u;
  cache.store(v << 2 | bits, std::memory_order_release);
  return bits;
}

}  // namespace

bool cpu_avx512() {
  return (avx512_bits() & 1u) != 0;
}

bool cpu_avx512_bf16() {
  return (avx512_bits() & 2u) != 0;
}

const char* cpu_isa_name(CpuIsa isa) {
  return isa == CpuIsa::Avx2 ? "avx2" : "generic";
}

}  // namespace fk
