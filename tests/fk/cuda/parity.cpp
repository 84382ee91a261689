// The parity harness's comparisons and its one test body (see parity.h).
#include "parity.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "fk/test_util.h"
#include "fk/testing.h"

namespace fk::cuda_parity {

Tol tol_for(DType t) {
  switch (t) {
    case DType::F64:
    case DType::C128:
      return {1e-12, 1e-13};
    case DType::F32:
    case DType::C64:
      return {2e-5, 2e-6};
    case DType::F16:
      return {2e-3, 2e-3};
    case DType::BF16:
      return {1.6e-2, 1.6e-2};
    default:
      return {0, 0};
  }
}

void expect_close(const Tensor& got, const Tensor& want, Tol tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  if (is_complex(got.dtype()) || is_complex(want.dtype())) {
    Tensor g = (is_complex(got.dtype()) ? got : got.to(DType::C128)).to(kCPU);
    Tensor w = (is_complex(want.dtype()) ? want : want.to(DType::C128)).to(kCPU);
    expect_close(g.real(), w.real(), tol, what + " (real part)");
    expect_close(g.imag(), w.imag(), tol, what + " (imaginary part)");
    return;
  }
  std::vector<double> g = got.to(kCPU).to_vector<double>();
  std::vector<double> w = want.to(kCPU).to_vector<double>();
  int failures = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok = std::isnan(w[i])   ? std::isnan(g[i])
              : std::isinf(w[i]) ? g[i] == w[i]
                                 : std::abs(g[i] - w[i]) <= tol.atol + tol.rtol * std::abs(w[i]);
    if (!ok && failures++ < 5) {
      ADD_FAILURE() << what << " at " << i << ": got " << g[i] << ", want " << w[i];
    }
  }
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  Tensor ac = a.to(kCPU).contiguous(), bc = b.to(kCPU).contiguous();
  return ac.nbytes() == 0 ||
         std::memcmp(ac.data_ptr(), bc.data_ptr(), static_cast<size_t>(ac.nbytes())) == 0;
}

Tensor random_of(const Dims& shape, DType dtype, double lo, double hi, unsigned seed) {
  if (is_complex(dtype)) {
    std::vector<double> r = test::random_values(shape.numel(), lo, hi, seed);
    std::vector<double> i = test::random_values(shape.numel(), lo, hi, seed + 100);
    std::vector<c128> v(r.size());
    for (size_t k = 0; k < v.size(); ++k) v[k] = c128(r[k], i[k]);
    return from_vector(v, shape).to(dtype);
  }
  const Tensor r = test::random_tensor(shape, DType::F64, lo, hi, seed);
  // A bool tensor holds both values: those above the middle of [lo, hi].
  if (dtype == DType::Bool) return gt(r, scalar_tensor((lo + hi) / 2, {DType::F64}));
  return r.to(dtype);
}

std::vector<OpRun> runs(const std::string& family, std::vector<OpCase> rows) {
  std::vector<OpRun> out;
  for (OpCase& row : rows) {
    auto shared = std::make_shared<const OpCase>(std::move(row));
    for (DType dt : shared->dtypes) out.push_back({shared, dt, family});
  }
  return out;
}

void PrintTo(const OpRun& run, std::ostream* os) {
  *os << run.family << " " << run.row->name << " " << name(run.dtype);
}

std::string run_name(const ::testing::TestParamInfo<OpRun>& info) {
  return info.param.row->name + "_" + name(info.param.dtype);
}

namespace {

struct Result {
  Tensor value;
  std::vector<Tensor> grads;  // of the inexact inputs, in order (undefined: no gradient)
};

// f on `host` moved to `device`; with `grad`, backpropagates sum(y * w) with
// fixed weights w (sum(|y| w) for complex y) into the inexact inputs.
Result evaluate(const Fn& f, const Inputs& host, Device device, bool grad) {
  Inputs xs;
  for (const Tensor& h : host) {
    Tensor x = h.to(device).detach();
    if (grad && is_inexact(x.dtype())) x.set_requires_grad(true);
    xs.push_back(x);
  }
  Result r;
  Tensor y = f(xs);
  r.value = y.detach();
  if (!grad) return r;
  Tensor w = test::random_tensor(y.shape(), DType::F64, 0.5, 1.5, 99)
                 .to(real_type(y.dtype()))
                 .to(y.device());
  Tensor loss = is_complex(y.dtype()) ? sum(mul(abs(y), w)) : sum(mul(y, w));
  loss.backward();
  for (const Tensor& x : xs) {
    if (x.requires_grad()) r.grads.push_back(x.grad());
  }
  return r;
}

void expect_match(const OpCase& row, DType dt, const Tensor& got, const Tensor& want,
                  const std::string& what) {
  ASSERT_TRUE(got.device().is_cuda()) << what << ": the device result is on " << got.device().str();
  // The same fk op on both devices must also agree on the result's dtype.
  if (!row.reference) {
    EXPECT_EQ(got.dtype(), want.dtype()) << what;
  }
  if (row.bitwise) {
    EXPECT_TRUE(bitwise_equal(got, want.to(got.dtype()))) << what << ": not bit for bit";
  } else {
    expect_close(got, want, row.tol ? row.tol(dt) : tol_for(dt), what);
  }
}

// fk::testing::gradcheck of the device op, every evaluation on the device.
void gradcheck_on_device(const OpCase& row, const Inputs& host) {
  Inputs xs;
  for (const Tensor& h : host) {
    Tensor x = h.to(kGpu).detach();
    if (is_inexact(x.dtype())) x.set_requires_grad(true);
    xs.push_back(x);
  }
  const Fn& f = row.device;
  auto on_gpu = [&f](const Inputs& in) {
    for (const Tensor& x : in) EXPECT_TRUE(x.device().is_cuda());
    Tensor y = f(in);
    EXPECT_TRUE(y.device().is_cuda());
    return y;
  };
  EXPECT_EQ(testing::gradcheck(on_gpu, xs), "") << row.name << ": gradcheck on the device";
}

}  // namespace

TEST_P(CudaParity, MatchesCpu) {
  FK_SKIP_WITHOUT_GPU();
  const OpCase& row = *GetParam().row;
  const DType dt = GetParam().dtype;
  const std::string what = row.name + " " + name(dt);
  const Inputs host = row.inputs(dt);
  const Fn& reference = row.reference ? row.reference : row.device;
  Result want = evaluate(reference, host, kCPU, row.grad);
  Result got = evaluate(row.device, host, kGpu, row.grad);
  expect_match(row, dt, got.value, want.value, what);
  ASSERT_EQ(got.grads.size(), want.grads.size()) << what;
  for (size_t i = 0; i < got.grads.size(); ++i) {
    const std::string grad_what = what + " grad of input " + std::to_string(i);
    ASSERT_EQ(got.grads[i].defined(), want.grads[i].defined()) << grad_what;
    if (got.grads[i].defined()) expect_match(row, dt, got.grads[i], want.grads[i], grad_what);
  }
  if (row.deterministic) {
    EXPECT_TRUE(bitwise_equal(evaluate(row.device, host, kGpu, false).value, got.value))
        << what << ": a second run gave other bits";
  }
  if (row.gradcheck) gradcheck_on_device(row, host);
}

}  // namespace fk::cuda_parity
