#pragma once
// Reductions over chosen dimensions (keepdim keeps them as size 1) and the
// softmax family, all differentiable except argmax/argmin. An empty `dims`
// reduces over every dimension. Each output element is accumulated in a fixed
// order (fixed-size blocks combined in block order), so results do not depend
// on the thread count. f16/bf16 inputs are reduced in f32.
#include <utility>

#include "fk/tensor.h"

namespace fk {

Tensor sum(const Tensor& t, const Dims& dims = {}, bool keepdim = false);
Tensor mean(const Tensor& t, const Dims& dims = {}, bool keepdim = false);
Tensor prod(const Tensor& t, const Dims& dims = {}, bool keepdim = false);
// Largest / smallest values (ties: the gradient is split evenly among them).
Tensor amax(const Tensor& t, const Dims& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& t, const Dims& dims = {}, bool keepdim = false);
// Values and i64 indices (first occurrence) along one dimension.
std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& t, int64_t dim, bool keepdim = false);
// p-norm (p = 2 by default; p = inf for the max-abs norm). Complex inputs give real norms.
Tensor norm(const Tensor& t, double p = 2.0, const Dims& dims = {}, bool keepdim = false);
// Variance with Bessel's correction by default (correction = 1).
Tensor var(const Tensor& t, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor std(const Tensor& t, const Dims& dims = {}, int64_t correction = 1, bool keepdim = false);
Tensor logsumexp(const Tensor& t, const Dims& dims, bool keepdim = false);
Tensor softmax(const Tensor& t, int64_t dim);
Tensor log_softmax(const Tensor& t, int64_t dim);

}  // namespace fk
