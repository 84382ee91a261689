#include "nefi/cuda/device_sweeper.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/operators/heat/flat_stencil.h"
#include "nefi/real_dispatch.h"

namespace nefi::heat {
namespace {

cuda::Grid grid_of(const StepGeometry& g) {
  FK_CHECK(g.numel() < std::numeric_limits<int32_t>::max(), "nefi::heat::DeviceFlatSweeper",
           "a grid of fewer than 2^31 cells", g.shape().str());
  return {g.nx, g.ny, g.nz};
}

// After the launches of one method: counts them, applies fk's sync policy.
void launched(const fk::Device& d, int64_t n) {
  fk::profile::count_launch(n);
  fk::cuda::after_op(d.index);
}

}  // namespace

DeviceFlatSweeper::DeviceFlatSweeper(HeatSystem system, const StepGeometry& g,
                                     const fk::Device& device)
    : system_(std::move(system)),
      grid_(grid_of(g)),
      device_(device),
      dtype_(system_.weights.defined() ? system_.weights.dtype() : fk::DType::F32) {
  FK_CHECK(device_.is_cuda(), "nefi::heat::DeviceFlatSweeper", "a CUDA device", device_.str());
  FK_CHECK(system_.weights.defined() && system_.weights.device().is_cpu(),
           "nefi::heat::DeviceFlatSweeper", "the system on the CPU (build_system)",
           system_.weights.defined() ? system_.weights.device().str() : "an undefined system");
  const SymmetricFaces sym = symmetric_faces(system_, g);
  fk::profile::OpScope scope("heat_device_faces");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  faces_ = sym.faces.to(device_);
  root_d_ = sym.root_d.to(device_);
  for (auto& b : buf_) b = fk::zeros(g.shape(), {dtype_, device_});
  rhs_ = fk::zeros(g.shape(), {dtype_, device_});
  fused_ = cuda::cooperative_launch_supported(device_.index);
}

bool DeviceFlatSweeper::set_fused(bool on) {
  fused_ = on && cuda::cooperative_launch_supported(device_.index);
  return fused_;
}

void* DeviceFlatSweeper::stream() const {
  return fk::cuda::current_stream(device_.index);
}

fk::Tensor DeviceFlatSweeper::operand(const fk::Tensor& x, int64_t numel, const char* where,
                                      const char* what) const {
  FK_CHECK(x.defined() && x.device() == device_, where,
           std::string(what) + " on " + device_.str() + " (the sweeper's device)",
           x.defined() ? x.device().str() : "an undefined tensor");
  FK_CHECK(
      x.numel() == numel && x.dtype() == dtype_, where,
      std::string(what) + " of " + std::to_string(numel) + " " + fk::name(dtype_) + " elements",
      x.shape().str() + " " + fk::name(x.dtype()));
  fk::autograd::NoGradGuard ng;
  return x.is_contiguous() ? x.detach() : x.detach().contiguous();
}

void DeviceFlatSweeper::load(const fk::Tensor& x_in) {
  fk::profile::OpScope scope("heat_device_load");
  const fk::Tensor x = operand(x_in, grid_.numel(), "nefi::heat::DeviceFlatSweeper::load", "x");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_scale<T>(x.data<T>(), root_d_.data<T>(), buf_[cur_].data<T>(), grid_.numel(),
                          stream());
  });
  buf_[cur_].bump_version();
  launched(device_, 1);
}

void DeviceFlatSweeper::store(fk::Tensor& x) const {
  fk::profile::OpScope scope("heat_device_store");
  FK_CHECK(x.is_contiguous(), "nefi::heat::DeviceFlatSweeper::store", "a contiguous x",
           "strides " + x.strides().str());
  operand(x, grid_.numel(), "nefi::heat::DeviceFlatSweeper::store", "x");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_scale<T>(buf_[cur_].data<T>(), root_d_.data<T>() + grid_.numel(), x.data<T>(),
                          grid_.numel(), stream());
  });
  x.bump_version();
  launched(device_, 1);
}

void DeviceFlatSweeper::store_and_set_rhs(fk::Tensor& x) {
  fk::profile::OpScope scope("heat_device_store_rhs");
  const char* where = "nefi::heat::DeviceFlatSweeper::store_and_set_rhs";
  FK_CHECK(x.is_contiguous(), where, "a contiguous x", "strides " + x.strides().str());
  operand(x, grid_.numel(), where, "x");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_scale_twice<T>(buf_[cur_].data<T>(), root_d_.data<T>() + grid_.numel(),
                                x.data<T>(), rhs_.data<T>(), grid_.numel(), stream());
  });
  x.bump_version();
  rhs_.bump_version();
  launched(device_, 1);
}

void DeviceFlatSweeper::set_rhs(const fk::Tensor& b_in, const fk::Tensor& surface) {
  fk::profile::OpScope scope("heat_device_rhs");
  const fk::Tensor b = operand(b_in, grid_.numel(), "nefi::heat::DeviceFlatSweeper::set_rhs", "b");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_scale<T>(b.data<T>(), root_d_.data<T>() + grid_.numel(), rhs_.data<T>(),
                          grid_.numel(), stream());
  });
  rhs_.bump_version();
  launched(device_, 1);
  if (surface.defined()) add_surface(surface);
}

void DeviceFlatSweeper::add_surface(const fk::Tensor& surface) {
  fk::profile::OpScope scope("heat_device_add_surface");
  const fk::Tensor s = operand(surface, grid_.nx * grid_.ny,
                               "nefi::heat::DeviceFlatSweeper::add_surface", "a surface (nx, ny)");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_add_surface<T>(s.data<T>(), root_d_.data<T>() + grid_.numel(), rhs_.data<T>(),
                                grid_, stream());
  });
  rhs_.bump_version();
  launched(device_, 1);
}

void DeviceFlatSweeper::sweep(bool lerp, double omega) {
  const int next = 1 - cur_;
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_face_sweep<T>(buf_[cur_].data<T>(), buf_[next].data<T>(), rhs_.data<T>(),
                               faces_.data<T>(), grid_, static_cast<T>(omega), lerp, stream());
  });
  buf_[next].bump_version();
  cur_ = next;
}

int64_t DeviceFlatSweeper::fused_sweeps(const double* omega, int64_t k, int64_t lerp_from) {
  int64_t launches = 0;
  for (int64_t j0 = 0; j0 < k; j0 += cuda::kMaxFusedSweeps, ++launches) {
    const int m = static_cast<int>(std::min<int64_t>(cuda::kMaxFusedSweeps, k - j0));
    const int from = static_cast<int>(std::clamp<int64_t>(lerp_from - j0, 0, m));
    dispatch_real(dtype_, [&](auto tag) {
      using T = decltype(tag);
      cuda::SweepWeights<T> w;
      for (int j = 0; j < m; ++j) w.omega[j] = omega ? static_cast<T>(omega[j0 + j]) : T(1);
      cuda::launch_fused_sweeps<T>(buf_[0].data<T>(), buf_[1].data<T>(), cur_, rhs_.data<T>(),
                                   faces_.data<T>(), grid_, w, m, from, stream());
    });
    cur_ = (cur_ + m) % 2;
  }
  buf_[0].bump_version();
  buf_[1].bump_version();
  return launches;
}

void DeviceFlatSweeper::jacobi(int64_t iters) {
  fk::profile::OpScope scope("heat_device_jacobi");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  if (fused_) return launched(device_, fused_sweeps(nullptr, iters, iters));
  for (int64_t k = 0; k < iters; ++k) sweep(false, 1.0);
  launched(device_, iters);
}

void DeviceFlatSweeper::chebyshev(const fk::Tensor& omega) {
  FK_CHECK(omega.dim() == 1 && omega.is_contiguous() && omega.dtype() == dtype_ &&
               omega.device().is_cpu(),
           "nefi::heat::DeviceFlatSweeper::chebyshev",
           "contiguous CPU weights (K,) of the system's dtype",
           omega.shape().str() + " " + fk::name(omega.dtype()) + " on " + omega.device().str());
  fk::profile::OpScope scope("heat_device_chebyshev");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  std::vector<double> w(static_cast<size_t>(omega.size(0)));
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    for (size_t k = 0; k < w.size(); ++k) w[k] = static_cast<double>(omega.data<T>()[k]);
  });
  const int64_t k = omega.size(0);
  // Sweep 0 is plain Jacobi (ω₀ = 1); the others step from the iterate before.
  if (fused_) return launched(device_, fused_sweeps(w.data(), k, 1));
  for (int64_t j = 0; j < k; ++j) sweep(j > 0, w[j]);
  launched(device_, k);
}

}  // namespace nefi::heat
