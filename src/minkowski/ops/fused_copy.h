#pragma once
// ME_FUSED_COPY, the sparse convolution's copy path: auto (the default), 1
// (fused: every group of offsets gathered, multiplied and scattered at once)
// or 0 (per offset). auto takes the faster one per place, as measured:
//   CPU   fused where it stages nothing (the f32 register tiles' row-
//         stationary path: per-offset was 2-4x slower there), per offset where
//         fused would stage rows (the BLAS dataflows: fused was 1.15-2.3x
//         slower at widths up to 64, the same at 128; docs/performance.md,
//         session 56);
//   CUDA  fused (one launch per group; the same step time on an H200, more
//         staging memory: ME_FUSED_COPY=0 saves it).
// 1/true/on/yes and 0/false/off/no are taken too, in lower case (the
// boolean knob it was also took True or ON; those are now refused by name).
namespace minkowski {

enum class FusedCopy { Auto, On, Off };

// The knob in force; also checks ME_FUSED_COPY_MAX_MB, so a malformed cap is
// refused at the first convolution whichever path it takes.
FusedCopy fused_copy_mode();
// ME_FUSED_COPY_MAX_MB: the fused path's staging cap in MiB (0: 2048).
double fused_copy_cap_mb();

}  // namespace minkowski
