#include "nefi/cuda/device_sweeper.h"

#include <limits>
#include <string>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/real_dispatch.h"

namespace nefi::heat {
namespace {

cuda::Grid grid_of(const StepGeometry& g) {
  const cuda::Grid grid{g.nx, g.ny, g.nz};
  FK_CHECK(grid.indexable(), "nefi::heat::DeviceFlatSweeper",
           "a grid with every axis >= 1 and fewer than 2^31 cells", g.shape().str());
  return grid;
}

// After the launches of one method: counts them, applies fk's sync policy.
void launched(const fk::Device& d, int64_t n) {
  fk::profile::count_launch(n);
  fk::cuda::after_op(d.index);
}

}  // namespace

DeviceFlatSweeper::DeviceFlatSweeper(const fk::Tensor& alpha_in, const StepGeometry& g,
                                     int64_t chebyshev_iters)
    : grid_(grid_of(g)),
      device_(alpha_in.defined() ? alpha_in.device() : fk::kCPU),
      dtype_(alpha_in.defined() ? alpha_in.dtype() : fk::DType::F32) {
  const char* where = "nefi::heat::DeviceFlatSweeper";
  FK_CHECK(device_.is_cuda(), where, "alpha on a CUDA device",
           alpha_in.defined() ? device_.str() : "an undefined tensor");
  FK_CHECK(alpha_in.shape() == g.shape() && (dtype_ == fk::DType::F32 || dtype_ == fk::DType::F64),
           where, "f32 or f64 alpha of shape " + g.shape().str(),
           alpha_in.shape().str() + " " + fk::name(dtype_));
  FK_CHECK(chebyshev_iters >= 0 && chebyshev_iters < std::numeric_limits<int32_t>::max(), where,
           "a Chebyshev K in [0, 2^31)", fk::to_text(chebyshev_iters));
  fk::profile::OpScope scope("heat_device_system");
  fk::autograd::NoGradGuard ng;
  const fk::Tensor alpha = operand(alpha_in, grid_.numel(), where, "alpha");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  const int64_t n = grid_.numel();
  faces_ = fk::empty({3, g.nx, g.ny, g.nz}, {dtype_, device_});
  root_d_ = fk::empty({2, g.nx, g.ny, g.nz}, {dtype_, device_});
  const fk::Tensor row_sums =
      chebyshev_iters > 0 ? fk::empty(g.shape(), {dtype_, device_}) : fk::Tensor();
  if (chebyshev_iters > 0) omega_ = fk::empty({chebyshev_iters}, {dtype_, device_});
  const cuda::HeatCoefficients k = heat_coefficients(g);
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T* sums = row_sums.defined() ? row_sums.data<T>() : nullptr;
    cuda::launch_heat_system<T>(alpha.data<T>(), faces_.data<T>(), root_d_.data<T>(), sums, grid_,
                                k, stream());
    if (sums)
      cuda::launch_chebyshev_weights<T>(sums, n, omega_.data<T>(),
                                        static_cast<int>(chebyshev_iters), stream());
  });
  for (auto& b : buf_) b = fk::zeros(g.shape(), {dtype_, device_});
  rhs_ = fk::zeros(g.shape(), {dtype_, device_});
  fused_ = cuda::cooperative_launch_supported(device_.index);
  launched(device_, chebyshev_iters > 0 ? 3 : 2);
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
  FK_CHECK(x.numel() == numel && x.dtype() == dtype_, where,
           std::string(what) + " of " + fk::to_text(numel) + " " + fk::name(dtype_) + " elements",
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

void DeviceFlatSweeper::sweep(bool lerp, const fk::Tensor& omega, int64_t j) {
  const int next = 1 - cur_;
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_face_sweep<T>(buf_[cur_].data<T>(), buf_[next].data<T>(), rhs_.data<T>(),
                               faces_.data<T>(), grid_, lerp ? omega.data<T>() : nullptr,
                               static_cast<int>(j), lerp, stream());
  });
  buf_[next].bump_version();
  cur_ = next;
}

void DeviceFlatSweeper::jacobi(int64_t iters) {
  fk::profile::OpScope scope("heat_device_jacobi");
  FK_CHECK(iters >= 0 && iters < std::numeric_limits<int32_t>::max(),
           "nefi::heat::DeviceFlatSweeper::jacobi", "a sweep count in [0, 2^31)",
           fk::to_text(iters));
  if (iters == 0) return;
  fk::cuda::detail::DeviceGuard guard(device_.index);
  if (!fused_) {
    for (int64_t k = 0; k < iters; ++k) sweep(false, fk::Tensor(), k);
    return launched(device_, iters);
  }
  const int k = static_cast<int>(iters);
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_fused_sweeps<T>(buf_[0].data<T>(), buf_[1].data<T>(), cur_, rhs_.data<T>(),
                                 faces_.data<T>(), grid_, nullptr, k, k, stream());
  });
  finish_fused(k);
}

void DeviceFlatSweeper::chebyshev(const fk::Tensor& omega) {
  const char* where = "nefi::heat::DeviceFlatSweeper::chebyshev";
  FK_CHECK(omega.defined() && omega.dim() == 1 && omega.is_contiguous() &&
               omega.dtype() == dtype_ && omega.device() == device_ && omega.size(0) >= 1 &&
               omega.size(0) < std::numeric_limits<int32_t>::max(),
           where,
           std::string("contiguous weights (K,), K >= 1, ") + fk::name(dtype_) + " on " +
               device_.str() + " (the sweeper's device)",
           omega.defined()
               ? omega.shape().str() + " " + fk::name(omega.dtype()) + " on " + omega.device().str()
               : "an undefined tensor");
  fk::profile::OpScope scope("heat_device_chebyshev");
  fk::cuda::detail::DeviceGuard guard(device_.index);
  const int64_t k = omega.size(0);
  // Sweep 0 is plain Jacobi (ω₀ = 1); the others step from the iterate before.
  if (!fused_) {
    for (int64_t j = 0; j < k; ++j) sweep(j > 0, omega, j);
    return launched(device_, k);
  }
  dispatch_real(dtype_, [&](auto tag) {
    using T = decltype(tag);
    cuda::launch_fused_sweeps<T>(buf_[0].data<T>(), buf_[1].data<T>(), cur_, rhs_.data<T>(),
                                 faces_.data<T>(), grid_, omega.data<T>(), static_cast<int>(k), 1,
                                 stream());
  });
  finish_fused(k);
}

void DeviceFlatSweeper::finish_fused(int64_t k) {
  cur_ = static_cast<int>((cur_ + k) % 2);
  buf_[0].bump_version();
  buf_[1].bump_version();
  launched(device_, 1);
}

}  // namespace nefi::heat
