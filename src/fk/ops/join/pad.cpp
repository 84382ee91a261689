#include "fk/ops/join/pad.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/cpu/copy_bytes.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/index.h"
#include "fk/ops/join/index_maps.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk {

const char* name(PadMode mode) {
  static const char* names[] = {"constant", "reflect", "replicate", "circular"};
  return names[static_cast<int>(mode)];
}

namespace {

using join_detail::DimMaps;
using join_detail::gather_by_maps;
using join_detail::gather_by_maps_cuda;
using join_detail::identity_maps;

// Source coordinate of each of the n + l + r output cells along one dim.
std::vector<int64_t> pad_map(int64_t n, int64_t l, int64_t r, PadMode mode) {
  std::vector<int64_t> m(static_cast<size_t>(n + l + r));
  for (int64_t i = 0; i < n + l + r; ++i) {
    int64_t s = i - l;
    switch (mode) {
      case PadMode::Constant:
        s = (s >= 0 && s < n) ? s : -1;
        break;
      case PadMode::Reflect:
        if (s < 0) s = -s;
        if (s >= n) s = 2 * (n - 1) - s;
        break;
      case PadMode::Replicate:
        s = std::min(std::max<int64_t>(s, 0), n - 1);
        break;
      case PadMode::Circular:
        s = ((s % n) + n) % n;
        break;
    }
    m[i] = s;
  }
  return m;
}

// Validates pads against t's shape; returns the padded shape.
Dims padded_shape(const Dims& in, const std::vector<int64_t>& pads, PadMode mode) {
  const char* op = "pad";
  FK_CHECK(pads.size() % 2 == 0, op, "an even number of pads ((left, right) pairs)",
           fk::to_text(pads.size()) + " pads");
  FK_CHECK(static_cast<int>(pads.size() / 2) <= in.size(), op,
           "at most one (left, right) pair per dimension (" + fk::to_text(in.size()) + " dims)",
           fk::to_text(pads.size() / 2) + " pairs");
  Dims out = in;
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    int d = in.size() - 1 - static_cast<int>(p);
    int64_t l = pads[2 * p], r = pads[2 * p + 1], n = in[d];
    std::string at = " for dim " + std::to_string(d) + " of size " + std::to_string(n);
    std::string given = "pads (" + std::to_string(l) + ", " + std::to_string(r) + ")" + at;
    if (mode == PadMode::Constant) {
      FK_CHECK(n + l + r >= 0, op, "pads leaving a size >= 0", given);
    } else {
      FK_CHECK(l >= 0 && r >= 0, op, std::string("pads >= 0 in ") + name(mode) + " mode", given);
    }
    if (mode == PadMode::Reflect) {
      FK_CHECK((l < n && r < n) || (l == 0 && r == 0), op,
               "reflect pads smaller than the dimension size", given);
    }
    if (mode == PadMode::Replicate) {
      FK_CHECK(n > 0 || (l == 0 && r == 0), op, "a non-empty dimension to replicate", given);
    }
    if (mode == PadMode::Circular) {
      FK_CHECK(l <= n && r <= n, op, "circular pads no larger than the dimension size", given);
    }
    out[d] = n + l + r;
  }
  return out;
}

// CUDA, constant mode: the output filled with `value`, then the part of t
// that survives cropping (negative pads) copied into its place.
Tensor pad_constant_cuda(const Tensor& t, const std::vector<int64_t>& pads, const Dims& shape,
                         double value) {
  Tensor out = full(shape, value, {t.dtype(), t.device()});
  Tensor src = t, dst = out;
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    const int d = t.dim() - 1 - static_cast<int>(p);
    const int64_t l = pads[2 * p], r = pads[2 * p + 1];
    const int64_t len = t.size(d) + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0);
    if (len <= 0) return out;
    src = src.narrow(d, std::max<int64_t>(-l, 0), len);
    dst = dst.narrow(d, std::max<int64_t>(l, 0), len);
  }
  if (dst.numel() > 0) dst.copy_(src);
  return out;
}

Tensor pad_forward(const Tensor& t, const std::vector<int64_t>& pads, PadMode mode, double value) {
  Dims shape = padded_shape(t.shape(), pads, mode);
  if (t.device().is_cuda() && mode == PadMode::Constant) {
    return pad_constant_cuda(t, pads, shape, value);
  }
  DimMaps maps = identity_maps(t.shape());
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    int d = t.dim() - 1 - static_cast<int>(p);
    maps[d] = pad_map(t.size(d), pads[2 * p], pads[2 * p + 1], mode);
  }
  if (t.device().is_cuda()) return gather_by_maps_cuda(t, maps);
  Tensor fill;
  if (mode == PadMode::Constant) fill = full(Dims{}, value, {t.dtype()});
  return gather_by_maps(t, shape, maps, fill);
}

struct PadBackward : autograd::Node {
  Dims in_shape;
  std::vector<int64_t> pads;
  PadMode mode = PadMode::Constant;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {pad_backward(g[0], in_shape, pads, mode)};
  }
  const char* name() const override { return "PadBackward"; }
};

}  // namespace

Tensor pad(const Tensor& t, const std::vector<int64_t>& pads, PadMode mode, double value) {
  profile::OpScope scope("pad");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = pad_forward(t, pads, mode, value);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<PadBackward>();
    node->in_shape = t.shape();
    node->pads = pads;
    node->mode = mode;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor pad_backward(const Tensor& g, const Dims& in_shape, const std::vector<int64_t>& pads,
                    PadMode mode) {
  if (mode == PadMode::Constant) {
    // The adjoint of padding by p (or cropping by -p) is cropping by p (padding by -p with zeros).
    std::vector<int64_t> inverse(pads.size());
    for (size_t i = 0; i < pads.size(); ++i) inverse[i] = -pads[i];
    return pad(g, inverse, PadMode::Constant, 0.0);
  }
  // The padding maps factor over dims, so the adjoint is one index_add per padded dim.
  Tensor r = g;
  for (size_t p = 0; p < pads.size() / 2; ++p) {
    const int d = in_shape.size() - 1 - static_cast<int>(p);
    std::vector<int64_t> m = pad_map(in_shape[d], pads[2 * p], pads[2 * p + 1], mode);
    Dims shape = r.shape();
    shape[d] = in_shape[d];
    r = index_add(zeros(shape, {r.dtype(), r.device()}), d, m, r);  // checked on the host
  }
  return r;
}

}  // namespace fk
