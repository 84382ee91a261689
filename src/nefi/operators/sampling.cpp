#include "nefi/operators/sampling.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/fft.h"
#include "fk/ops/index.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"

namespace nefi {
namespace {

// The leading (batch) dims of x, after checking that its last dims are `shape`.
fk::Dims batch_dims(const fk::Tensor& x, const fk::Dims& shape, const char* who) {
  const int lead = x.dim() - shape.size();
  bool fits = lead >= 0;
  for (int a = 0; fits && a < shape.size(); ++a) fits = x.shape()[lead + a] == shape[a];
  FK_CHECK(fits, who, "a field of shape (..., " + shape.str() + ")", x.shape().str());
  FK_CHECK(!fk::is_complex(x.dtype()), who, "a real field", fk::name(x.dtype()));
  fk::Dims out;
  for (int a = 0; a < lead; ++a) out.push_back(x.shape()[a]);
  return out;
}

// x (..., *shape) as (..., cells): the cells counted from x's own trailing
// dims (a -1 is ambiguous in an empty batch).
fk::Tensor flat_cells(const fk::Tensor& x, const fk::Dims& batch) {
  int64_t cells = 1;
  for (int a = batch.size(); a < x.dim(); ++a) cells *= x.shape()[a];
  fk::Dims s = batch;
  s.push_back(cells);
  return fk::reshape(x, s);
}

// The flat C positions where mask > 0, as an (m) i64 tensor.
fk::Tensor kept_positions(const fk::Tensor& mask, const char* who) {
  FK_CHECK(mask.defined() && mask.dim() >= 1 && mask.dim() <= 3, who,
           "a mask of the field's shape (1-3 axes)",
           mask.defined() ? mask.shape().str() : std::string("none"));
  FK_CHECK(!fk::is_complex(mask.dtype()), who, "a real mask", fk::name(mask.dtype()));
  const std::vector<double> v = mask.to(fk::kCPU).to_vector<double>();
  std::vector<int64_t> at;
  for (size_t i = 0; i < v.size(); ++i) {
    FK_CHECK(std::isfinite(v[i]), who, "a finite mask",
             "a non-finite value at cell " + fk::to_text(i));
    if (v[i] > 0) at.push_back(static_cast<int64_t>(i));
  }
  FK_CHECK(!at.empty(), who, "a mask with at least one cell > 0",
           "none of its " + fk::to_text(v.size()) + " cells");
  return fk::from_vector(at, {static_cast<int64_t>(at.size())});
}

}  // namespace

MaskSampled::MaskSampled(const fk::Tensor& mask, const char* who)
    : shape_(mask.defined() ? mask.shape() : fk::Dims{}), index_(kept_positions(mask, who)) {}

fk::Tensor MaskSampled::kept(const fk::Tensor& v, const fk::Dims& batch) const {
  const fk::Tensor at = index_on_->get(index_, fk::DType::I64, v.device());
  return fk::index_select(flat_cells(v, batch), batch.size(), at);
}

void MaskSampled::prepare_tables(fk::Device device, fk::DType) const {
  if (device.is_cuda()) index_on_->get(index_, fk::DType::I64, device);
}

void MaskSampled::check_grid(const fk::Dims& shape, const char* who) const {
  FK_CHECK(shape == shape_, who,
           "the mask's grid " + shape_.str() +
               " (a sampling pattern belongs to one grid: no multiscale curriculum)",
           shape.str());
}

SamplingOperator::SamplingOperator(const fk::Tensor& mask)
    : MaskSampled(mask, "nefi::SamplingOperator") {}

fk::Tensor SamplingOperator::apply(const fk::Tensor& x) const {
  return kept(x, batch_dims(x, shape_, "nefi::SamplingOperator"));
}

std::shared_ptr<Operator> SamplingOperator::at_resolution(const fk::Dims& shape) const {
  check_grid(shape, "nefi::SamplingOperator::at_resolution");
  return std::make_shared<SamplingOperator>(*this);
}

fk::Dims SamplingOperator::output_shape(const fk::Dims& shape) const {
  check_grid(shape, "nefi::SamplingOperator");
  return {samples()};
}

SampledNoise SamplingOperator::estimate_noise(const fk::Tensor& y, const fk::Tensor& mask) const {
  const char* who = "nefi::SamplingOperator::estimate_noise";
  FK_CHECK(y.shape() == fk::Dims({samples()}), who,
           "sampled data of shape (" + fk::to_text(samples()) + ")", y.shape().str());
  FK_CHECK(!mask.defined() || mask.shape() == y.shape(), who, "a mask of the data's shape",
           mask.defined() ? mask.shape().str() : std::string());
  const std::vector<double> v = y.to(fk::kCPU).to_vector<double>();
  const std::vector<double> w =
      mask.defined() ? mask.to(fk::kCPU).to_vector<double>() : std::vector<double>(v.size(), 1);
  // Each kept and observed cell's sample number, -1 where none.
  std::vector<int64_t> at(shape_.numel(), -1);
  const std::vector<int64_t> positions = index_.to_vector<int64_t>();
  for (size_t k = 0; k < positions.size(); ++k)
    if (w[k] > 0) at[positions[k]] = static_cast<int64_t>(k);
  // |y_p - y_q| / sqrt(2) over kept neighbours, and |y_o - 2 y_p + y_q| /
  // sqrt(6) over kept runs of three (a slope cancels there).
  std::vector<double> pairs, runs;
  int64_t stride = 1;
  for (int a = shape_.size() - 1; a >= 0; --a) {
    for (int64_t p : positions) {
      const int64_t i = (p / stride) % shape_[a];
      if (at[p] < 0 || i + 1 >= shape_[a] || at[p + stride] < 0) continue;
      const double here = v[at[p]], next = v[at[p + stride]];
      pairs.push_back(std::abs(here - next) / std::sqrt(2.0));
      if (i >= 1 && at[p - stride] >= 0)
        runs.push_back(std::abs(v[at[p - stride]] - 2 * here + next) / std::sqrt(6.0));
    }
    stride *= shape_[a];
  }
  const bool use_runs = runs.size() >= 32;
  std::vector<double>& d = use_runs ? runs : pairs;
  FK_CHECK(d.size() >= 8, who, "at least 8 pairs of kept cells that are grid neighbours",
           fk::to_text(d.size()) + " (give the noise sigma instead)");
  std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
  return {1.4826 * d[d.size() / 2],
          use_runs ? "estimated: 1.4826 median |second difference| / sqrt(6) over " +
                         std::to_string(d.size()) + " runs of three sampled grid neighbours"
                   : "estimated: 1.4826 median |difference| / sqrt(2) over " +
                         std::to_string(d.size()) + " pairs of sampled grid neighbours"};
}

FourierSamplingOperator::FourierSamplingOperator(const fk::Tensor& mask)
    : MaskSampled(mask, "nefi::FourierSamplingOperator") {
  // Each kept frequency's radius, |f_a| / (n_a / 2) with f_a the signed
  // frequency (numpy.fft.fftfreq times n_a).
  for (int64_t p : index_.to_vector<int64_t>()) {
    double r2 = 0;
    for (int a = shape_.size() - 1; a >= 0; --a) {
      const int64_t n = shape_[a], k = p % n;
      p /= n;
      const double f = static_cast<double>(k <= n / 2 ? k : k - n);
      r2 += n > 1 ? (f / (0.5 * n)) * (f / (0.5 * n)) : 0.0;
    }
    radius_.push_back(std::sqrt(r2));
  }
}

fk::Tensor FourierSamplingOperator::apply(const fk::Tensor& x) const {
  const fk::Dims batch = batch_dims(x, shape_, "nefi::FourierSamplingOperator");
  std::vector<int64_t> axes;
  for (int a = 0; a < shape_.size(); ++a) axes.push_back(batch.size() + a);
  const fk::Tensor spectrum = fk::fftn(x, {}, axes, fk::FFTNorm::Ortho);
  const fk::Tensor at = kept(spectrum, batch);
  return fk::stack({fk::real(at), fk::imag(at)}, batch.size());
}

std::shared_ptr<Operator> FourierSamplingOperator::at_resolution(const fk::Dims& shape) const {
  check_grid(shape, "nefi::FourierSamplingOperator::at_resolution");
  return std::make_shared<FourierSamplingOperator>(*this);
}

fk::Dims FourierSamplingOperator::output_shape(const fk::Dims& shape) const {
  check_grid(shape, "nefi::FourierSamplingOperator");
  return {2, samples()};
}

SampledNoise FourierSamplingOperator::estimate_noise(const fk::Tensor& y,
                                                     const fk::Tensor& mask) const {
  const char* who = "nefi::FourierSamplingOperator::estimate_noise";
  FK_CHECK(y.shape() == fk::Dims({2, samples()}), who,
           "k-space data of shape (2, " + fk::to_text(samples()) + ")", y.shape().str());
  FK_CHECK(!mask.defined() || mask.shape() == y.shape(), who, "a mask of the data's shape",
           mask.defined() ? mask.shape().str() : std::string());
  const std::vector<double> v = y.to(fk::kCPU).to_vector<double>();
  const size_t m = radius_.size();
  std::vector<bool> seen(m, true);
  if (mask.defined()) {
    const std::vector<double> w = mask.to(fk::kCPU).to_vector<double>();
    for (size_t i = 0; i < m; ++i) seen[i] = w[i] > 0 && w[m + i] > 0;
  }
  // A real field's spectrum has y(-k) = conj(y(k)): where both k and -k are
  // sampled, y(k) - conj(y(-k)) is noise alone, 2 sigma^2 per part.
  const std::vector<int64_t> positions = index_.to_vector<int64_t>();
  std::vector<int64_t> at(shape_.numel(), -1);
  for (size_t i = 0; i < m; ++i)
    if (seen[i]) at[positions[i]] = static_cast<int64_t>(i);
  std::vector<double> mags;
  for (size_t i = 0; i < m; ++i) {
    if (!seen[i]) continue;
    int64_t p = positions[i], mirror = 0, scale = 1;
    for (int a = shape_.size() - 1; a >= 0; --a) {
      const int64_t n = shape_[a], k = p % n;
      p /= n;
      mirror += ((n - k) % n) * scale;
      scale *= n;
    }
    const int64_t j = at[mirror];
    if (j < 0 || static_cast<size_t>(j) <= i) continue;  // each pair once; DC and Nyquist skipped
    mags.push_back(std::abs(v[i] - v[j]) / std::sqrt(2.0));
    mags.push_back(std::abs(v[m + i] + v[m + j]) / std::sqrt(2.0));
  }
  std::string why = "too few conjugate pairs";
  if (mags.size() >= 16) {
    std::nth_element(mags.begin(), mags.begin() + mags.size() / 2, mags.end());
    const double sigma = 1.4826 * mags[mags.size() / 2];
    // Pairs that agree to the data's round-off carry no noise: noise added
    // to a real field before its transform is Hermitian too (the usual
    // simulation), and reading it as sigma 0 switched off the stop and the
    // prior. Round-off is eps of the typical sample, not of the largest (DC).
    std::vector<double> size;
    for (size_t i = 0; i < m; ++i)
      if (seen[i]) size.push_back(std::hypot(v[i], v[m + i]));
    std::nth_element(size.begin(), size.begin() + size.size() / 2, size.end());
    const double eps = y.dtype() == fk::DType::F64 ? 2.220446049250313e-16 : 1.1920929e-07;
    if (sigma > 100 * eps * size[size.size() / 2])
      return {sigma, "estimated: 1.4826 median |y(k) - conj y(-k)| / sqrt(2) over " +
                         std::to_string(mags.size() / 2) +
                         " sampled conjugate pairs (exact for a real field)"};
    why = "the conjugate pairs agree to round-off: noise added before the transform";
  }
  // Too few pairs (or none with noise): the outer quarter of the sampled
  // frequencies by radius.
  std::vector<double> sorted;
  for (size_t i = 0; i < m; ++i)
    if (seen[i]) sorted.push_back(radius_[i]);
  FK_CHECK(!sorted.empty(), who, "observed samples", "none");
  std::sort(sorted.begin(), sorted.end());
  const double outer = sorted[(3 * sorted.size()) / 4];
  mags.clear();
  for (size_t i = 0; i < m; ++i)
    if (seen[i] && radius_[i] >= outer && radius_[i] > 0) {
      mags.push_back(std::abs(v[i]));
      mags.push_back(std::abs(v[m + i]));
    }
  FK_CHECK(mags.size() >= 16, who,
           "at least 8 sampled conjugate pairs, or 8 sampled frequencies off DC in the outer "
           "quarter",
           fk::to_text(mags.size() / 2) + " (give the noise sigma instead)");
  std::nth_element(mags.begin(), mags.begin() + mags.size() / 2, mags.end());
  return {1.4826 * mags[mags.size() / 2],
          "estimated: 1.4826 median |y| over the outer quarter of the sampled frequencies (" + why +
              "; edges bias it up)"};
}

std::optional<SampledNoise> sampled_noise(const Operator& op, const fk::Tensor& y,
                                          const fk::Tensor& mask) {
  if (const auto* s = dynamic_cast<const SamplingOperator*>(&op)) return s->estimate_noise(y, mask);
  if (const auto* f = dynamic_cast<const FourierSamplingOperator*>(&op))
    return f->estimate_noise(y, mask);
  return std::nullopt;
}

DownsampleOperator::DownsampleOperator(std::vector<int64_t> factors)
    : factors_(std::move(factors)) {
  FK_CHECK(!factors_.empty() && factors_.size() <= 3, "nefi::DownsampleOperator",
           "one factor per field axis (1-3)", fk::to_text(factors_.size()) + " factors");
  for (int64_t f : factors_)
    FK_CHECK(f >= 1, "nefi::DownsampleOperator", "factors >= 1", fk::to_text(f));
}

fk::Dims DownsampleOperator::output_shape(const fk::Dims& shape) const {
  const auto d = static_cast<int>(factors_.size());
  FK_CHECK(shape.size() == d, "nefi::DownsampleOperator",
           "a field of " + fk::to_text(d) + " axes (one factor each)", shape.str());
  fk::Dims out;
  for (int a = 0; a < d; ++a) {
    FK_CHECK(shape[a] % factors_[a] == 0, "nefi::DownsampleOperator",
             "axis " + fk::to_text(a) + " a multiple of its factor " + fk::to_text(factors_[a]),
             fk::to_text(shape[a]) + " cells");
    out.push_back(shape[a] / factors_[a]);
  }
  return out;
}

fk::Tensor DownsampleOperator::apply(const fk::Tensor& x) const {
  const auto d = static_cast<int>(factors_.size());
  FK_CHECK(x.dim() >= d, "nefi::DownsampleOperator",
           "a field of at least " + fk::to_text(d) + " axes", x.shape().str());
  fk::Dims field;
  for (int a = 0; a < d; ++a) field.push_back(x.shape()[x.dim() - d + a]);
  const fk::Dims out = output_shape(field);
  const fk::Dims batch = batch_dims(x, field, "nefi::DownsampleOperator");
  // (..., n0 / f0, f0, n1 / f1, f1, ...) averaged over every f axis.
  fk::Dims blocks = batch, over;
  for (int a = 0; a < d; ++a) {
    blocks.push_back(out[a]);
    blocks.push_back(factors_[a]);
    over.push_back(batch.size() + 2 * a + 1);
  }
  return fk::mean(fk::reshape(x, blocks), over);
}

}  // namespace nefi
