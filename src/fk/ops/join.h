#pragma once
// Joining, splitting and rearranging whole tensors: cat, stack, split, pad,
// roll, flip; one header per kind under fk/ops/join/ (cat.h, pad.h,
// roll_flip.h, each with its pure backward), all included here. All differentiable (split returns
// narrow views, which already are). Devices: CPU and CUDA (inputs of cat on one device). On CUDA,
// cat is one strided device copy per input, constant pad a fill plus one copy, and roll, flip and
// the other pad modes one index_select per changed dim (index tables built on the host).
//
//   cat(ts, d)    tensors of one rank whose sizes agree outside d; the result
//                 has promote(all dtypes). Contiguous inputs of the result's
//                 dtype are copied as whole rows (cpu::copy_rows: fixed-size
//                 moves for short rows, alignment-proof copy_bytes for long
//                 ones, output rows in L1-sized tiles); anything else
//                 through a strided copy.
//   stack(ts, d)  tensors of one shape, joined along a new dim d (in [-r-1, r]).
//   split         views of consecutive chunks along d: of `size` each (the
//                 last may be shorter), or of the given sizes (summing to the
//                 dim's size).
//   pad           PyTorch's convention: `pads` lists (left, right) pairs
//                 starting from the LAST dimension, so {1, 2} pads the last dim
//                 by 1 before and 2 after, and {1, 2, 3, 4} also pads the dim
//                 before it by 3 and 4. Constant mode fills with `value`
//                 (complex tensors: value + 0i) and accepts negative pads,
//                 which crop. Reflect mirrors without repeating the edge
//                 (needs pad < size), Replicate repeats the edge (needs size
//                 > 0), Circular wraps around (needs pad <= size); these take
//                 pads >= 0. Their backward adds each padded cell's gradient
//                 into its source cell, in a fixed order (deterministic).
//   roll          out[(i + shift) mod n] = t[i] along each listed dim; shifts
//                 may be negative or exceed the size; a dim listed twice
//                 rolls twice. With no dims, rolls the flattened tensor by
//                 shifts[0].
//   flip          reverses the listed dims (each at most once).
//
// Memory: every op but split allocates its result. roll of a contiguous CPU
// tensor is one long shifted copy plus a short wrap-around copy per row (no
// index table); pad, flip, and roll of other layouts or on CUDA read the
// input in place (any layout) through one per-dim index table each.
#include "fk/ops/join/cat.h"
#include "fk/ops/join/pad.h"
#include "fk/ops/join/roll_flip.h"
