#pragma once
// Which x86 vector instruction set the hand-written CPU kernels may use: the
// best the CPU has, capped by the FK_CPU_ISA knob (auto, avx512, avx2 or
// generic; latched). Kernels compile one variant per level with
// __attribute__((target(...))) and pick one per call, so one binary runs on
// any x86-64 machine. AVX-512 is a flag beside the level, not a level: the
// few kernels that have an AVX-512 variant ask cpu_avx512(), everything else
// keeps comparing against Avx2.
namespace fk {

enum class CpuIsa { Generic = 0, Avx2 = 1 };

// Avx2 means AVX2 + FMA + F16C.
CpuIsa cpu_isa();
// What the CPU has, ignoring the knob.
CpuIsa cpu_isa_detected();
const char* cpu_isa_name(CpuIsa isa);

// AVX-512 F/BW/DQ/VL present and FK_CPU_ISA auto or avx512.
bool cpu_avx512();
// The same plus AVX512_BF16 (vdpbf16ps).
bool cpu_avx512_bf16();

}  // namespace fk
