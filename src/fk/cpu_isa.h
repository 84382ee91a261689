#pragma once
// Which x86 vector instruction set the hand-written CPU kernels may use: the
// best the CPU has, capped by the FK_CPU_ISA knob (auto, avx512, avx2 or
// generic; latched). Kernels compile one variant per level with
// __attribute__((target(...))) and pick one per call, so one binary runs on
// any x86-64 machine. Levels are ordered: a kernel written for AVX2 runs
// wherever cpu_isa() >= Avx2. Few kernels have an AVX-512 variant (the sparse
// convolution tiles, nefi's dense-layer GEMM); their tests skip where the
// CPU lacks it.
namespace fk {

enum class CpuIsa { Generic = 0, Avx2 = 1, Avx512 = 2 };

// Avx2 means AVX2 + FMA + F16C; Avx512 adds AVX-512 F, BW, DQ and VL.
CpuIsa cpu_isa();
// What the CPU has, ignoring the knob.
CpuIsa cpu_isa_detected();
const char* cpu_isa_name(CpuIsa isa);

// AVX-512 F/BW/DQ/VL present and FK_CPU_ISA auto or avx512.
bool cpu_avx512();
// The same plus AVX512_BF16 (vdpbf16ps).
bool cpu_avx512_bf16();

}  // namespace fk
