// Gather and index_select: pure data movement, so one kernel per element size
// (1, 2, 4, 8, 16 bytes). index_select is a gather with the index broadcast
// over the outer and inner dims.
#include "fk/cuda/common.cuh"

namespace fk::cuda {
namespace {
using namespace detail;

// Geometry operands: out, in (its stride along dim set to 0), index.
template <typename W>
__global__ void gather_kernel(const W* in, int64_t in_dim_stride, int64_t in_dim_size,
                              const int64_t* index, W* out, Geometry g, bool wrap, int64_t* bad) {
  FK_CUDA_LOOP(i, g.numel) {
    int64_t off[3];
    offsets<3>(g, i, off);
    int64_t idx = index[off[2]];
    const int64_t raw = idx;
    if (wrap && idx < 0) idx += in_dim_size;
    if (idx < 0 || idx >= in_dim_size) {
      if (bad) {
        bad[1] = raw;
        bad[2] = in_dim_size;
        bad[0] = 1;
      }
      out[off[0]] = W{};
      continue;
    }
    out[off[0]] = in[off[1] + idx * in_dim_stride];
  }
}

}  // namespace

void launch_gather(int dtype, const void* in, const int64_t* in_strides, int64_t in_dim_size,
                   const int64_t* index, const int64_t* index_strides, void* out,
                   const int64_t* out_strides, int ndim, const int64_t* shape, int dim,
                   IndexCheck check, void* stream) {
  const char* where = "cuda::launch_gather";
  FK_CHECK(dim >= 0 && dim < ndim, where, "dim in [0, " + fk::to_text(ndim) + ")",
           fk::to_text(dim));
  FK_CHECK(in_strides != nullptr, where, "the input's strides", "nullptr");
  int64_t in_st[kMaxDims];
  for (int d = 0; d < ndim; ++d) in_st[d] = d == dim ? 0 : in_strides[d];
  const int64_t* strides[3] = {out_strides, in_st, index_strides};
  Geometry g = make_geometry(ndim, shape, 3, strides, where);
  if (g.numel == 0) return;
  visit_itemsize(dtype, [&](auto tag) {
    using W = typename decltype(tag)::type;
    gather_kernel<W><<<blocks_for(g.numel), kThreads, 0, as_stream(stream)>>>(
        static_cast<const W*>(in), in_strides[dim], in_dim_size, index, static_cast<W*>(out), g,
        check.wrap_negative, check.bad);
  });
  check_launch(where);
}

void launch_index_select(int dtype, const void* in, const int64_t* index, void* out, int64_t outer,
                         int64_t in_dim, int64_t inner, int64_t n_index, IndexCheck check,
                         void* stream) {
  const int64_t shape[3] = {outer, n_index, inner};
  const int64_t in_strides[3] = {in_dim * inner, inner, 1};
  const int64_t index_strides[3] = {0, 1, 0};
  launch_gather(dtype, in, in_strides, in_dim, index, index_strides, out, nullptr, 3, shape, 1,
                check, stream);
}

}  // namespace fk::cuda
