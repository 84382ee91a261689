#include "fk/cpu_isa.h"

#include <cpuid.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>

#include "fk/error.h"
#include "fk/knobs.h"

namespace fk {
namespace {

Knob kCpuIsa("FK_CPU_ISA", KnobChoices{{"auto", "avx512", "avx2", "generic"}}, "auto",
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
    // libgcc also checks that the OS saves the zmm state (XGETBV).
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                        __builtin_cpu_supports("avx512vl");
    return avx512 ? CpuIsa::Avx512 : avx2 ? CpuIsa::Avx2 : CpuIsa::Generic;
  }();
  return isa;
}

CpuIsa cpu_isa() {
  // Called per kernel call (per x-plane of a heat sweep): the answer is cached
  // as (knob version << 2 | isa) and re-derived only after an override.
  static std::atomic<uint64_t> cache{~uint64_t{0}};
  const uint64_t v = kCpuIsa.version();
  const uint64_t c = cache.load(std::memory_order_acquire);
  if (c >> 2 == v) return static_cast<CpuIsa>(c & 3);
  const std::string want = kCpuIsa.as_string();
  const CpuIsa cap = want == "generic" ? CpuIsa::Generic
                     : want == "avx2"  ? CpuIsa::Avx2
                                       : CpuIsa::Avx512;
  const CpuIsa isa = std::min(cap, cpu_isa_detected());
  cache.store(v << 2 | static_cast<uint64_t>(isa), std::memory_order_release);
  return isa;
}

bool cpu_avx512() {
  return cpu_isa() >= CpuIsa::Avx512;
}

bool cpu_avx512_bf16() {
  static const bool bf16 = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;  // AVX512_BF16: CPUID leaf 7 sub-leaf 1, EAX bit 5
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) != 0;
  }();
  return bf16 && cpu_avx512();
}

const char* cpu_isa_name(CpuIsa isa) {
  return isa == CpuIsa::Avx512 ? "avx512" : isa == CpuIsa::Avx2 ? "avx2" : "generic";
}

}  // namespace fk
