#include "fk/print.h"

#include <fmt/format.h>

#include "fk/autograd.h"

namespace fk {
namespace {

std::string format_value(const Tensor& flat, int64_t i) {
  switch (flat.dtype()) {
    case DType::Bool:
      return flat.data<bool>()[i] ? "true" : "false";
    case DType::I32:
      return std::to_string(flat.data<int32_t>()[i]);
    case DType::I64:
      return std::to_string(flat.data<int64_t>()[i]);
    case DType::F64:
      return fmt::format("{:.6g}", flat.data<double>()[i]);
    case DType::C128: {
      c128 v = flat.data<c128>()[i];
      return fmt::format("{:.4g}{:+.4g}i", v.real(), v.imag());
    }
    default:
      return fmt::format("{:.6g}", flat.data<float>()[i]);
  }
}

void render(const Tensor& flat, const Dims& shape, int dim, int64_t offset, int edge,
            std::string& out) {
  if (dim == shape.size()) {
    out += format_value(flat, offset);
    return;
  }
  int64_t n = shape[dim];
  int64_t block = 1;
  for (int d = dim + 1; d < shape.size(); ++d) block *= shape[d];
  out += "[";
  for (int64_t i = 0; i < n; ++i) {
    if (n > 2 * edge && i == edge) {
      out += "..., ";
      i = n - edge - 1;
      continue;
    }
    render(flat, shape, dim + 1, offset + i * block, edge, out);
    if (i + 1 < n) out += dim + 1 == shape.size() ? ", " : ",\n" + std::string(dim + 8, ' ');
  }
  out += "]";
}

}  // namespace

std::string to_string(const Tensor& t, int edge_items) {
  if (!t.defined()) return "tensor(undefined)";
  autograd::NoGradGuard ng;
  DType shown = t.dtype();
  if (is_half(shown) || shown == DType::F32) shown = DType::F32;
  if (shown == DType::C64) shown = DType::C128;
  Tensor flat = t.to(kCPU).to(shown).contiguous();
  std::string body;
  render(flat, t.shape(), 0, 0, edge_items, body);
  std::string s = "tensor(" + body + ", dtype=" + name(t.dtype()) + ", shape=" + t.shape().str();
  if (!t.device().is_cpu()) s += ", device=" + t.device().str();
  if (t.requires_grad())
    s += t.grad_fn() ? std::string(", grad_fn=") + t.grad_fn()->name()
                     : std::string(", requires_grad");
  return s + ")";
}

}  // namespace fk
