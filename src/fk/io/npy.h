#pragma once
// NumPy .npy files: fk's one reader and writer of them.
//
// Read: format versions 1.0-3.0, arrays of b1, i4, i8, f2, f4, f8, c8 or c16
// (fk's dtypes; NumPy has no bf16) into a tensor of that dtype, and of the
// integers fk has no dtype for, widened exactly: i1, u1 (a uint8 mask or
// image), i2 and u2 into i32, u4 into i64; in either byte order and either
// memory order (np.save of a transposed array writes Fortran order), at most
// kMaxDims dimensions, into a new C-order CPU tensor.
// The header is not trusted: its length is capped (kMaxNpyHeaderBytes), the
// shape's element count and byte size are overflow-checked products, and the
// claimed size must equal the bytes the file holds after the header before
// anything is allocated. Every refusal is an fk::Error naming the file
// (truncated or oversized data, overflowing shape, absurd header, unsupported
// dtype).
//
// Write: format 1.0 (version 2.0 when the header needs it), C order,
// little-endian, any dtype but bf16; a non-contiguous tensor is written in its
// logical (row-major) order. CPU tensors only.
#include <cstddef>
#include <string>
#include <string_view>

#include "fk/tensor.h"

namespace fk {

// Headers above this are refused: NumPy writes ~128 bytes for any shape that
// fits kMaxDims dimensions.
inline constexpr size_t kMaxNpyHeaderBytes = size_t{1} << 16;

Tensor read_npy(const std::string& path);
// The same from a file's bytes already in memory; `name` stands for the file
// in errors.
Tensor read_npy_bytes(std::string_view bytes, const std::string& name);

void write_npy(const std::string& path, const Tensor& t);

}  // namespace fk
