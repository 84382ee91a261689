#pragma once
// Which x86 vector instruction set the hand-written CPU kernels may use: the
// best the CPU has, capped by the FK_CPU_ISA knob (auto, avx2 or generic;
// latched). Kernels compile one variant per level with
// __attribute__((target(...))) and pick one per call, so one binary runs on
// any x86-64 machine. (No AVX-512 level: the machines this is built and
// tested on do not all have it, and an untested kernel is not shipped.)
namespace fk {

enum class CpuIsa { Generic = 0, Avx2 = 1 };

// Avx2 means AVX2 + FMA + F16C.
CpuIsa cpu_isa();
// What the CPU has, ignoring the knob.
CpuIsa cpu_isa_detected();
const char* cpu_isa_name(CpuIsa isa);

}  // namespace fk
