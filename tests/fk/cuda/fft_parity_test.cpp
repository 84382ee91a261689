// cuFFT and the fk FFT ops on the device (see parity.h): cuda::fft_execute's
// c2c (both directions), r2c and c2r against a naive DFT; the fk ops against
// the CPU in every norm, with padding, truncation, odd lengths, strided
// inputs and more than three transformed dims, with gradients; fk::dct (its
// passes around cuFFT's real transform) against the CPU's; the plan cache's
// reuse.
#include "parity.h"

#include <complex>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "fk/cuda/fft.h"
#include "fk/test_util.h"

namespace fk::cuda_parity {
namespace {

// Naive multi-dimensional DFT of a contiguous [batch, n...] complex array.
std::vector<c128> dft(const std::vector<c128>& x, int64_t batch, const std::vector<int64_t>& n,
                      bool inverse) {
  int64_t size = 1;
  for (int64_t s : n) size *= s;
  std::vector<c128> y(x.size());
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t out = 0; out < size; ++out) {
      c128 acc = 0;
      for (int64_t in = 0; in < size; ++in) {
        double phase = 0;
        int64_t ro = out, ri = in;
        for (int d = static_cast<int>(n.size()) - 1; d >= 0; --d) {
          phase += static_cast<double>((ro % n[d]) * (ri % n[d])) / static_cast<double>(n[d]);
          ro /= n[d];
          ri /= n[d];
        }
        acc += x[b * size + in] * std::polar(1.0, sign * 2 * std::numbers::pi * phase);
      }
      y[b * size + out] = acc;
    }
  }
  return y;
}

struct Transform {
  std::vector<int64_t> n;
  int64_t batch;
  int64_t size() const {
    int64_t s = 1;
    for (int64_t v : n) s *= v;
    return s;
  }
  int64_t half_size() const { return size() / n.back() * (n.back() / 2 + 1); }
  std::string tag() const {
    std::string t;
    for (int64_t v : n) {
      if (!t.empty()) t += 'x';
      t += std::to_string(v);
    }
    return t + "_batch" + std::to_string(batch);
  }
  cuda::FftLayout layout() const {
    cuda::FftLayout l;
    l.rank = static_cast<int>(n.size());
    for (int i = 0; i < l.rank; ++i) l.n[i] = n[static_cast<size_t>(i)];
    l.batch = batch;
    return l;
  }
  // The first n/2 + 1 bins of the last dim of the forward DFT of real r.
  Tensor half_spectrum(const Tensor& r) const {
    std::vector<double> rv = r.to_vector<double>();
    std::vector<c128> spectrum = dft(std::vector<c128>(rv.begin(), rv.end()), batch, n, false);
    std::vector<c128> half;
    for (int64_t i = 0; i < batch * size(); ++i) {
      if (i % n.back() < n.back() / 2 + 1) half.push_back(spectrum[static_cast<size_t>(i)]);
    }
    return from_vector(half, {batch, half_size()});
  }
};

// cuda::fft_execute of `kind` from in[0] into an output of `shape` and `dtype`.
Tensor execute(const Transform& t, int kind, bool inverse, const Tensor& in, const Dims& shape,
               DType dtype) {
  Tensor out = device_empty(shape, dtype);
  cuda::fft_execute(kDev, kind, code(in.dtype()), inverse, t.layout(), in.data_ptr(),
                    out.data_ptr(), stream());
  return out;
}

std::vector<OpCase> launch_rows(const Transform& t) {
  auto tol = [t](DType dt) {
    return Tol{tol_for(dt).rtol, (dt == DType::C64 ? 1e-5 : 1e-12) * static_cast<double>(t.size())};
  };
  std::vector<OpCase> r;
  for (bool inverse : {false, true}) {
    r.push_back({
        .name = std::string(inverse ? "launch_ifft_c2c_" : "launch_fft_c2c_") + t.tag(),
        .dtypes = {DType::C64, DType::C128},
        .inputs =
            [t](DType dt) {
              return Inputs{random_of({t.batch, t.size()}, dt, -1, 1, 141)};
            },
        .device =
            [t, inverse](const Inputs& in) {
              return execute(t, cuda::kFftC2C, inverse, in[0], in[0].shape(), in[0].dtype());
            },
        .reference =
            [t, inverse](const Inputs& in) {
              return from_vector(dft(in[0].to_vector<c128>(), t.batch, t.n, inverse),
                                 in[0].shape());
            },
        .tol = tol,
    });
  }
  r.push_back({
      .name = std::string("launch_fft_r2c_") + t.tag(),
      .dtypes = {DType::C64, DType::C128},
      .inputs =
          [t](DType dt) {
            return Inputs{random_of({t.batch, t.size()}, real_type(dt), -1, 1, 142)};
          },
      .device =
          [t](const Inputs& in) {
            return execute(t, cuda::kFftR2C, false, in[0], {t.batch, t.half_size()},
                           complex_type(in[0].dtype()));
          },
      .reference = [t](const Inputs& in) { return t.half_spectrum(in[0]); },
      .tol = tol,
  });
  // c2r of r's half spectrum gives size * r back (unnormalized).
  r.push_back({
      .name = std::string("launch_fft_c2r_") + t.tag(),
      .dtypes = {DType::C64, DType::C128},
      .inputs =
          [t](DType dt) {
            Tensor real = random_of({t.batch, t.size()}, real_type(dt), -1, 1, 142);
            return Inputs{t.half_spectrum(real).to(dt), real};
          },
      .device =
          [t](const Inputs& in) {
            return execute(t, cuda::kFftC2R, true, in[0], in[1].shape(), in[1].dtype());
          },
      .reference =
          [t](const Inputs& in) {
            return mul(in[1].to(DType::F64), static_cast<double>(t.size()));
          },
      .tol = tol,
  });
  return r;
}

Tensor z_4x6() {
  return test::random_complex({4, 6}, 71);
}
Tensor r_4x6() {
  return test::random_tensor({4, 6}, DType::F64, -1, 1, 72);
}

// An fk FFT op in c128 and c64 (its real input in f64 and f32), with gradients.
OpCase op_row(std::string name, bool real_input, Fn f) {
  return {
      .name = std::move(name),
      .dtypes = {DType::C128, DType::C64},
      .inputs =
          [real_input](DType dt) {
            return Inputs{real_input ? r_4x6().to(real_type(dt)) : z_4x6().to(dt)};
          },
      .device = std::move(f),
      .tol = [](DType dt) { return near(dt == DType::C128 ? 1e-11 : 2e-5); },
      .grad = true,
  };
}

void add_op_rows(std::vector<OpCase>& r) {
  const std::pair<const char*, FFTNorm> norms[] = {
      {"backward", FFTNorm::Backward}, {"ortho", FFTNorm::Ortho}, {"forward", FFTNorm::Forward}};
  for (auto [tag, nm] : norms) {
    const std::string suffix = std::string("_norm_") + tag;
    r.push_back(
        op_row("fft" + suffix, false, [nm](const Inputs& in) { return fft(in[0], -1, 1, nm); }));
    r.push_back(
        op_row("ifft" + suffix, false, [nm](const Inputs& in) { return ifft(in[0], -1, 0, nm); }));
    r.push_back(
        op_row("rfft" + suffix, true, [nm](const Inputs& in) { return rfft(in[0], -1, 1, nm); }));
    r.push_back(op_row("rfftn" + suffix, true,
                       [nm](const Inputs& in) { return rfftn(in[0], {}, {}, nm); }));
    // A non-Hermitian spectrum.
    r.push_back(op_row("irfftn" + suffix, false, [nm](const Inputs& in) {
      return irfftn(in[0], {4, 6}, {}, nm);
    }));
  }
  r.push_back(op_row("fftn_truncated_and_padded", false, [](const Inputs& in) {
    return fftn(in[0], {3, 8}, {}, FFTNorm::Ortho);
  }));
  r.push_back(op_row("ifftn_of_transpose", false,
                     [](const Inputs& in) { return ifftn(in[0].t(), {}, {}, FFTNorm::Backward); }));
  // Size-1 leading dims whose stride is not the trailing size (contiguity
  // ignores it): the strided plan took that stride as its batch, leaving
  // output unwritten or writing past its end.
  r.push_back(op_row("fft_along_a_size_one_dim_of_a_transpose", false, [](const Inputs& in) {
    return fft(in[0].reshape({24, 1}).t(), -1, 0, FFTNorm::Backward);
  }));
  r.push_back(op_row("irfftn_of_one_row", false, [](const Inputs& in) {
    return irfftn(in[0].narrow(0, 0, 1), {1, 4}, {}, FFTNorm::Backward);
  }));
  r.push_back(op_row("rfft_odd_length", true,
                     [](const Inputs& in) { return rfft(in[0], 5, 1, FFTNorm::Backward); }));
  r.push_back(op_row("rfft_dim0", true,
                     [](const Inputs& in) { return rfft(in[0], -1, 0, FFTNorm::Backward); }));
  r.push_back(op_row("irfft_odd_length", false,
                     [](const Inputs& in) { return irfft(in[0], 7, 1, FFTNorm::Backward); }));
  r.push_back(op_row("irfft_dim0", false,
                     [](const Inputs& in) { return irfft(in[0], -1, 0, FFTNorm::Ortho); }));
  // More than 3 transformed dims: split into cuFFT-sized parts.
  const Tensor z5 = test::random_complex({2, 3, 2, 2, 3}, 73);
  auto five_d = [z5](std::string name, bool real_input, Fn f) {
    OpCase row = op_row(std::move(name), real_input, std::move(f));
    row.dtypes = {real_input ? DType::F64 : DType::C128};
    row.inputs = [z5, real_input](DType) { return Inputs{real_input ? z5.real() : z5}; };
    row.tol = [](DType) { return near(1e-11); };
    return row;
  };
  r.push_back(five_d("fftn_5d", false,
                     [](const Inputs& in) { return fftn(in[0], {}, {}, FFTNorm::Ortho); }));
  r.push_back(five_d("rfftn_5d", true,
                     [](const Inputs& in) { return rfftn(in[0], {}, {}, FFTNorm::Backward); }));
  r.push_back(five_d("irfftn_5d", false,
                     [](const Inputs& in) { return irfftn(in[0], {}, {}, FFTNorm::Backward); }));
  // The leading three dims of five: one strided plan over the trailing six.
  r.push_back(five_d("fftn_leading_3_of_5d", false, [](const Inputs& in) {
    return fftn(in[0], {}, {0, 1, 2}, FFTNorm::Ortho);
  }));
  // Half inputs compute in f32.
  r.push_back({
      .name = "rfft_half",
      .dtypes = {DType::F16},
      .inputs = [](DType dt) { return Inputs{r_4x6().to(dt)}; },
      .device = [](const Inputs& in) { return rfft(in[0]); },
      .tol = [](DType) { return near(2e-3); },
  });
  // A round trip gives the signal back.
  r.push_back({
      .name = "irfftn_of_rfftn",
      .dtypes = {DType::F64},
      .inputs = [](DType dt) { return Inputs{r_4x6().to(dt)}; },
      .device =
          [](const Inputs& in) {
            return irfftn(rfftn(in[0]), {4, 6});
          },
      .reference = [](const Inputs& in) { return in[0]; },
      .tol = [](DType) { return near(1e-12); },
  });
  // Device gradchecks (f64 input): a complex output, and a complex intermediate.
  auto gradcheck_row = [](std::string name, Fn f) {
    return OpCase{
        .name = std::move(name),
        .dtypes = {DType::F64},
        .inputs =
            [](DType dt) {
              return Inputs{test::random_tensor({3, 4}, dt, -1, 1, 31)};
            },
        .device = std::move(f),
        .tol = [](DType) { return near(1e-11); },
        .grad = true,
        .gradcheck = true,
    };
  };
  r.push_back(gradcheck_row("rfftn_gradcheck", [](const Inputs& in) { return rfftn(in[0]); }));
  r.push_back(gradcheck_row("dct2_gradcheck",
                            [](const Inputs& in) { return dct(in[0], DctType::II, {}, {}); }));
  r.push_back(gradcheck_row("dct3_padded_gradcheck",
                            [](const Inputs& in) { return dct(in[0], DctType::III, {5}, {1}); }));
  r.push_back(gradcheck_row("irfftn_of_scaled_rfftn_gradcheck", [](const Inputs& in) {
    return irfftn(mul(rfftn(in[0]), 0.5), {3, 4});
  }));
}

// fk::dct in f64 and f32 against the CPU's, with gradients: both kinds,
// even and odd lengths (n = 1 too), one dim of three (the middle: outer and
// inner batches), every dim, padded and truncated, of a strided input.
void add_dct_rows(std::vector<OpCase>& r) {
  auto dct_row = [](std::string name, Dims shape, Fn f) {
    return OpCase{
        .name = std::move(name),
        .dtypes = {DType::F64, DType::F32},
        .inputs = [shape](DType dt) { return Inputs{test::random_tensor(shape, dt, -1, 1, 161)}; },
        .device = std::move(f),
        .tol = [](DType dt) { return near(dt == DType::F64 ? 1e-11 : 2e-5); },
        .grad = true,
        .deterministic = true,
    };
  };
  for (auto [tag, type] : {std::pair{"dct2", DctType::II}, std::pair{"dct3", DctType::III}}) {
    const std::string t = tag;
    r.push_back(dct_row(t + "_even", {2, 8},
                        [type](const Inputs& in) { return dct(in[0], type, {}, {1}); }));
    r.push_back(dct_row(t + "_odd_middle_dim", {3, 7, 4},
                        [type](const Inputs& in) { return dct(in[0], type, {}, {1}); }));
    r.push_back(dct_row(t + "_every_dim", {4, 5, 6},
                        [type](const Inputs& in) { return dct(in[0], type); }));
    r.push_back(dct_row(t + "_padded_and_truncated", {6, 5}, [type](const Inputs& in) {
      return dct(in[0], type, {9, 3}, {0, 1});
    }));
    r.push_back(dct_row(t + "_of_transpose", {5, 6},
                        [type](const Inputs& in) { return dct(in[0].t(), type, {}, {0}); }));
    r.push_back(dct_row(t + "_length_one", {3, 1},
                        [type](const Inputs& in) { return dct(in[0], type, {}, {1}); }));
  }
  // III undoes II up to 2 n per dim.
  r.push_back({
      .name = "dct3_of_dct2",
      .dtypes = {DType::F64},
      .inputs =
          [](DType dt) {
            return Inputs{test::random_tensor({6, 5}, dt, -1, 1, 162)};
          },
      .device = [](const Inputs& in) { return dct(dct(in[0], DctType::II), DctType::III); },
      .reference = [](const Inputs& in) { return mul(in[0], 4.0 * 6 * 5); },
      .tol = [](DType) { return near(1e-11); },
  });
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  add_dct_rows(r);
  for (const Transform& t :
       {Transform{{16}, 3}, Transform{{12}, 1}, Transform{{6, 10}, 2}, Transform{{4, 3, 5}, 1}}) {
    for (OpCase& row : launch_rows(t)) r.push_back(std::move(row));
  }
  add_op_rows(r);
  return r;
}

FK_PARITY_TABLE(Fft, rows());

// An image's inverse real transform is three launches: the complex inverse
// along the rows as one strided plan (no transposes), the weights of the half
// spectrum in one pass, and the c2r; the forward is one (the backward norm
// leaves it unscaled).
TEST(CudaFft, AnImagesRoundTripIsFourLaunches) {
  FK_SKIP_WITHOUT_GPU();
  const Tensor x = test::random_tensor({8, 10}, DType::F32, -1, 1, 151);
  const Tensor gx = x.to(kGpu);
  Tensor warm = irfftn(rfftn(gx), {8, 10});  // plans made outside the count
  int64_t before = profile::counters().launches;
  const Tensor spectrum = rfftn(gx);
  EXPECT_EQ(profile::counters().launches - before, 1);
  before = profile::counters().launches;
  const Tensor back = irfftn(spectrum, {8, 10});
  EXPECT_EQ(profile::counters().launches - before, 3);
  const std::vector<float> got = back.to(kCPU).to_vector<float>(), want = x.to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

// Running the same transform again makes no new plan.
TEST(CudaFft, PlansAreReused) {
  FK_SKIP_WITHOUT_GPU();
  cuda::fft_plan_cache_clear();
  const Transform t{{16}, 3};
  Tensor x = random_of({3, 16}, DType::C64, -1, 1, 150).to(kGpu);
  execute(t, cuda::kFftC2C, false, x, x.shape(), DType::C64);
  cuda::synchronize(kDev);
  const int64_t cached = cuda::fft_plan_cache_size();
  EXPECT_GT(cached, 0);
  execute(t, cuda::kFftC2C, false, x, x.shape(), DType::C64);
  cuda::synchronize(kDev);
  EXPECT_EQ(cuda::fft_plan_cache_size(), cached);
}

// A DCT along one dim is three launches (the passes either side of the real
// FFT), and the plans the transform made are reused.
TEST(CudaFft, ADctAlongOneDimIsThreeLaunches) {
  FK_SKIP_WITHOUT_GPU();
  const Tensor x = test::random_tensor({4, 12}, DType::F32, -1, 1, 152).to(kGpu);
  for (DctType type : {DctType::II, DctType::III}) {
    (void)dct(x, type, {}, {1});  // plans made outside the count
    const int64_t plans = cuda::fft_plan_cache_size();
    const int64_t before = profile::counters().launches;
    (void)dct(x, type, {}, {1});
    EXPECT_EQ(profile::counters().launches - before, 3);
    EXPECT_EQ(cuda::fft_plan_cache_size(), plans);
  }
}

}  // namespace
}  // namespace fk::cuda_parity
