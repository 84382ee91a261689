#pragma once
// Heads map the raw network output to physical fields (the value prior):
//   Identity             h
//   Softplus(beta, v0)   softplus_beta(h), init bias so the start is v0
//   Exp(v0)              exp(h)
//   Bounded(lo, hi, v0)  lo + (hi - lo) sigmoid(h)            (NeFTY Eq. 6)
//   LogBounded(lo, hi)   exp(log lo + (log hi - log lo) sigmoid(h)), log-uniform
//   GatedSoftplus        softplus(h0) sigmoid(h1), two raw channels (NeTMY Eq. 5)
//   LevelSet(lo, hi)     lo + (hi - lo) sigmoid(h / eps(progress)): a two-phase
//                        field whose interface sharpens as the fit goes on,
//                        eps falling geometrically from eps_start to eps_end;
//                        with leak > 0 its backward adds leak / eps to the
//                        sigmoid's slope (a surrogate gradient: cells that
//                        saturated on the wrong side can come back)
//   MultiPhase(v_1..v_K) sum_k v_k softmax(h / eps(progress))_k over K raw
//                        channels: a field of K known values (materials of
//                        known density, tissue classes) whose interfaces
//                        sharpen as LevelSet's do; it starts at v0 as the
//                        most even mix of the values that gives v0 (shares
//                        ~ exp(lambda v_k)); leak > 0 floors each channel's
//                        slope as LevelSet's leak does
// Modifiers wrap another head:
//   SupportMasked(inner, depends_on, tau, fill): inner * 1{rho > tau max rho},
//     rho = an earlier head's field, the mask under stop-gradient (NeTMY Eq. 26)
//   ZeroMean(inner)      inner - mean(inner) (a gauge fix)
//   Affine(inner, a, b)  a * inner + b
//   Masked(inner, m)     inner * m + fill (1 - m): a known support m in [0, 1]
//   MassNormalized(inner, M)  inner * M / sum(inner): the field's sum is M
//                        exactly (inner must stay positive)
//   Symmetric(inner, axes)  inner on the mean of the raw channels and their
//                        mirror images about the middle of each axis:
//                        exactly mirror-symmetric for an elementwise inner
// Heads are resolved in declaration order, so a head may read earlier fields.
#include <memory>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "nefi/field/field.h"

namespace nefi {

class Head {
 public:
  explicit Head(std::string name) : name_(std::move(name)) {}
  virtual ~Head() = default;
  const std::string& name() const { return name_; }
  virtual int n_in() const { return 1; }
  // Output-layer bias that makes a zero-weight network produce the head's
  // initial value (one entry per raw channel).
  virtual std::vector<double> init_bias() const { return std::vector<double>(n_in(), 0.0); }
  // raw: n_in() tensors of shape (*shape); done: the fields of earlier heads;
  // progress in [0, 1], the fit's annealing progress (only heads whose
  // reads_progress() is true look at it).
  virtual fk::Tensor transform(const std::vector<fk::Tensor>& raw, const FieldMap& done,
                               double progress = 1.0) const = 0;
  // The same map on N problems at once (batch_invert): raw and done hold
  // (N, *shape) tensors, problem b in row b, and row b of the result is
  // transform of row b alone. Elementwise heads need nothing more; heads that
  // reduce over the field (zero_mean, support_masked) reduce per row.
  virtual fk::Tensor transform_rows(const std::vector<fk::Tensor>& raw, const FieldMap& done,
                                    double progress = 1.0) const {
    return transform(raw, done, progress);
  }
  // Whether the map changes with progress (a device step then runs eagerly
  // while progress moves, as it does while Fourier bands open).
  virtual bool reads_progress() const { return false; }
  virtual std::string kind() const = 0;
  // kind, name and every constant of the map (modifiers: with the inner
  // head's): two heads with one signature compute one map (batch_invert
  // evaluates problem 0's heads for every problem).
  virtual std::string signature() const;

 private:
  std::string name_;
};

using HeadPtr = std::shared_ptr<Head>;

HeadPtr identity_head(std::string name, double init_value = 0.0);
HeadPtr softplus_head(std::string name, double init_value = 0.1, double beta = 1.0);
HeadPtr exp_head(std::string name, double init_value = 1.0);
HeadPtr bounded_head(std::string name, double lo, double hi, double init_value);
HeadPtr log_bounded_head(std::string name, double lo, double hi, double init_value);
HeadPtr gated_softplus_head(std::string name, double init_value = 0.1, double gate_init = 0.9,
                            double beta = 1.0);
HeadPtr support_masked_head(HeadPtr inner, std::string depends_on, double tau = 0.3,
                            double fill = 0.0);
HeadPtr zero_mean_head(HeadPtr inner);
HeadPtr affine_head(HeadPtr inner, double scale, double shift);
// eps(progress) = eps_start (eps_end / eps_start)^progress; the start value
// init_value in (lo, hi) is reached at progress 0 (a stage without annealing
// runs at progress 1: it starts sharper, at eps_end).
HeadPtr level_set_head(std::string name, double lo, double hi, double init_value,
                       double eps_start = 1.0, double eps_end = 0.05, double leak = 0.0);
// values: 2 or more, ascending and distinct; v_1 < init_value < v_K.
HeadPtr multi_phase_head(std::string name, std::vector<double> values, double init_value,
                         double eps_start = 1.0, double eps_end = 0.05, double leak = 0.0);
// mask: the field's shape, values in [0, 1] (1 inside the support).
HeadPtr masked_head(HeadPtr inner, fk::Tensor mask, double fill = 0.0);
HeadPtr mass_normalized_head(HeadPtr inner, double mass);
HeadPtr symmetric_head(HeadPtr inner, std::vector<int> axes);
bool heads_read_progress(const std::vector<HeadPtr>& heads);
// The output-layer bias that starts every head at its initial value: each
// head's init_bias, in order (one entry per raw channel).
std::vector<double> output_bias(const std::vector<HeadPtr>& heads);
// Splits a raw (N, C) output into the heads' fields of `shape`, in order.
FieldMap apply_heads(const std::vector<HeadPtr>& heads, const fk::Tensor& raw_channels_last,
                     const fk::Dims& shape, double progress = 1.0);
// The same for a block of problems: raw (B cells, C) channels last, problem
// b's cells in rows [b cells, (b + 1) cells); batch_shape is (B, *shape) and
// every head runs transform_rows.
FieldMap apply_heads_rows(const std::vector<HeadPtr>& heads, const fk::Tensor& raw_channels_last,
                          const fk::Dims& batch_shape, double progress = 1.0);
// By kind name: identity, softplus, exp, bounded, log_bounded, gated_softplus
// (modifiers are built with the functions above).
HeadPtr make_head(const std::string& kind, std::string name, double init_value, double lo = 0,
                  double hi = 1);

}  // namespace nefi
