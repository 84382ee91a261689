// The NV spectra operator on a CUDA device against its CPU path: spectra and
// the gradients of rho and omega_L, F2 and F1, with and without a Larmor
// field. The operator's frequency grid and default Larmor value used to be
// host tensors beside the device convolution (a mixed-device error in the
// detuning's subtraction); the output must now stay on rho's device. Without
// a usable device the tests skip (scripts/gpu-check runs them on one).
//
// Tolerance: the convolution is cuFFT against the CPU FFT, both f64 with
// O(log n) roundings per value, and the Lorentzian is the same f64
// elementwise chain: 1e-12 of the largest value.
#include <gtest/gtest.h>

#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/operators/nv_relaxometry.h"

namespace {

using nefi::cuda_test::expect_close;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;

nefi::NVPhysics physics() {
  nefi::NVPhysics p;
  for (int f = 0; f < 5; ++f) p.freqs.push_back(1.0 + 0.5 * f);
  p.z0 = 25;
  return p;
}

TEST(NefiNVDevice, SpectraAndGradientsMatchTheCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  const nefi::Domain d({9, 12}, {180.0, 240.0});
  fk::Generator gen(11);
  const fk::Tensor rho = fk::uniform({9, 12}, 0.0, 1.0, {fk::DType::F64}, &gen);
  const fk::Tensor wl = fk::uniform({9, 12}, 1.5, 2.5, {fk::DType::F64}, &gen);
  const fk::Tensor g = fk::randn({5, 9, 12}, {fk::DType::F64}, &gen);
  for (nefi::NVMode mode : {nefi::NVMode::kF2, nefi::NVMode::kF1})
    for (bool with_larmor : {false, true}) {
      SCOPED_TRACE(std::string(mode == nefi::NVMode::kF2 ? "F2" : "F1") +
                   (with_larmor ? " with omega_L" : " default Larmor"));
      const nefi::NVOperator op(d, physics(), mode);
      fk::Tensor rc = rho.clone(), rd = rho.to(kGpu), wc = wl.clone(), wd = wl.to(kGpu);
      for (fk::Tensor* t : {&rc, &rd, &wc, &wd}) t->set_requires_grad(true);
      nefi::FieldMap fc{{"rho", rc}}, fd{{"rho", rd}};
      if (with_larmor) {
        fc["omega_L"] = wc;
        fd["omega_L"] = wd;
      }
      const fk::Tensor yc = op.forward(fc), yd = op.forward(fd);
      ASSERT_EQ(yd.device(), kGpu);
      ASSERT_EQ(yd.shape(), yc.shape());
      expect_close(host(yd), host(yc), 1e-12, "spectra");
      yc.backward(g);
      yd.backward(g.to(kGpu));
      ASSERT_EQ(rd.grad().device(), kGpu);
      expect_close(host(rd.grad()), host(rc.grad()), 1e-12, "rho gradient");
      if (with_larmor) {
        ASSERT_EQ(wd.grad().device(), kGpu);
        expect_close(host(wd.grad()), host(wc.grad()), 1e-12, "omega_L gradient");
      }
    }
}

}  // namespace
