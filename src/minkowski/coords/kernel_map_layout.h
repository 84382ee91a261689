#pragma once
// The kernel-map build's packed keys: the layout that packs a coordinate row
// into one integer key, both maps' rows sorted by it, and the kernel's offsets
// grouped into lines of consecutive keys (what the merge search walks).
// Internal to build_kernel_map (kernel_map_build.cpp, kernel_map_search.h)
// and to the device build from device coordinates (device_coordinates.cpp).
#include <cstdint>
#include <utility>
#include <vector>

#include "minkowski/coords/coordinate_map.h"
#include "minkowski/coords/large_array.h"

namespace minkowski::kernel_map_build {

// The kernel-map build's own key layout: the batch index on top, below it the
// spatial axes from the one that changes least often between consecutive
// output rows to the one that changes most often (`line_axis`, lowest bits):
// for rows stored in coordinate order (as scenes and strided maps usually
// are) the key order is then the row order, so the writes of the build and
// the reads of a convolution run through memory sequentially. Every axis is
// padded by the kernel's reach on it, so out_key + delta(offset) is exactly
// the key of out_coord + offset (no carries, no bounds checks), and
// neighbours along line_axis have consecutive keys.
struct BuildLayout {
  std::vector<int64_t> lo;
  std::vector<int> shift;
  int bits = 0;
  int line_axis = 1;  // column
  // Axes in the order of the coordinate maps' own keys (batch, x_1, .., x_D),
  // whose sorted row lists then give this layout's sorted order.
  bool lexicographic = false;
};

BuildLayout make_layout(const CoordinateMap& in, const CoordinateMap& out,
                        const std::vector<int32_t>& offsets);

// What a layout is made of, per column c (0 = the batch): both maps' bounds
// (0 and 0 for an empty map, as its packer has them) and how often column c
// changes between consecutive output rows (entry 0 unused). The device build
// measures these on the device and gets the CPU's layout from them.
struct LayoutInputs {
  std::vector<int64_t> in_lo, in_hi, out_lo, out_hi, out_changes;
};
BuildLayout make_layout(const LayoutInputs& maps, const std::vector<int32_t>& offsets);

// Sentinel keys after the last real key: the search reads up to this many
// keys past a pointer without bounds checks.
constexpr int64_t kKeyPad = 16;

// (key, row) of every map row in ascending key order: the map's own sorted
// row list when the layout orders axes as the map's keys do, else an LSD
// radix sort, 11-bit digits over the layout's bits (stable, so
// deterministic). keys gets kKeyPad sentinels above every key from index n on
// (and rows a -1 at n). Returns whether row i is at position i.
// Defined for uint32_t, uint64_t and Key128 keys.
template <typename Key>
bool sorted_keys(const CoordinateMap& m, const BuildLayout& l, LargeArray<Key>& keys,
                 LargeArray<int32_t>& rows);

// Offsets that differ only along the line axis form a line: one merge pointer per line
// finds all of them, as their keys are consecutive.
struct Line {
  Key128 delta;  // key offset of the line at dx = 0 (two's complement)
  std::vector<std::pair<int32_t, int32_t>> dx;  // (dx, k), ascending
};

// The lines of `offsets` (K x d) along l.line_axis, in order of first
// appearance, each line's dx ascending.
std::vector<Line> make_lines(const std::vector<int32_t>& offsets, int d, const BuildLayout& l);

}  // namespace minkowski::kernel_map_build

namespace minkowski {

// kernel_map_key_layout (kernel_map.h) from the layout's inputs alone.
struct KernelMapKeyLayout;
KernelMapKeyLayout kernel_map_key_layout(const kernel_map_build::LayoutInputs& maps,
                                         const std::vector<int32_t>& offsets);

}  // namespace minkowski
