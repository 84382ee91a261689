#include "nefi/byop/matrix_model.h"

#include <string>

#include "fk/error.h"
#include "fk/ops/linalg.h"

namespace nefi {

std::shared_ptr<FunctionOperator> matrix_operator(const fk::Tensor& a, const fk::Dims& shape,
                                                  const fk::Dims& out_shape,
                                                  const std::string& name) {
  const std::string where = "forward matrix '" + name + "'";
  FK_CHECK(a.defined() && a.dim() == 2 && fk::is_floating(a.dtype()), where,
           "a real 2-D matrix (measurements, cells)",
           a.defined() ? std::string(fk::name(a.dtype())) + " " + a.shape().str() : "none");
  FK_CHECK(a.size(1) == shape.numel(), where,
           fk::to_text(a.size(1)) + " cells (its columns) in the field shape",
           shape.str() + " (" + fk::to_text(shape.numel()) + " cells)");
  FK_CHECK(a.size(0) == out_shape.numel(), where,
           fk::to_text(a.size(0)) + " measurements (its rows) in the data",
           out_shape.str() + " (" + fk::to_text(out_shape.numel()) + " values)");
  const fk::Tensor A = a.to(fk::kCPU).to(fk::DType::F64).contiguous();
  const fk::Tensor At = A.t().contiguous();
  const int64_t m = A.size(0), n = A.size(1);
  ForwardModel f;
  // The rows are the measurement's cells in C order, the columns the field's.
  f.forward = [A, n, out_shape](const std::vector<fk::Tensor>& xs) {
    return fk::matmul(A, xs[0].reshape({n, 1})).reshape(out_shape);
  };
  f.vjp = [At, m, shape](const std::vector<fk::Tensor>&, const fk::Tensor& g) {
    return std::vector<fk::Tensor>{fk::matmul(At, g.reshape({m, 1})).reshape(shape)};
  };
  return std::make_shared<FunctionOperator>(shape, out_shape, std::move(f), 1.0, name);
}

}  // namespace nefi
