#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "nefi/io/png_panel.h"

#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/error.h"

namespace nefi {
namespace {

struct Canvas {
  int w, h;
  std::vector<unsigned char> px;  // RGB
  Canvas(int w_, int h_) : w(w_), h(h_), px(static_cast<size_t>(w_) * h_ * 3, 255) {}
  void set(int x, int y, unsigned char r, unsigned char g, unsigned char b) {
    if (x < 0 || y < 0 || x >= w || y >= h) return;
    unsigned char* p = &px[(static_cast<size_t>(y) * w + x) * 3];
    p[0] = r;
    p[1] = g;
    p[2] = b;
  }
};

void draw_line(Canvas& c, int x0, int y0, int x1, int y1, unsigned char v) {
  const int n = std::max({std::abs(x1 - x0), std::abs(y1 - y0), 1});
  for (int i = 0; i <= n; ++i) c.set(x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n, v, v, v);
}

void plot(Canvas& c, int ox, int pw, const std::vector<double>& v, double lo, double hi,
          unsigned char shade) {
  const int ph = c.h - 8;
  auto Y = [&](double x) { return 4 + static_cast<int>((1 - (x - lo) / (hi - lo)) * (ph - 1)); };
  for (size_t i = 1; i < v.size(); ++i) {
    const int x0 = ox + static_cast<int>((i - 1) * (pw - 1) / std::max<size_t>(1, v.size() - 1));
    const int x1 = ox + static_cast<int>(i * (pw - 1) / std::max<size_t>(1, v.size() - 1));
    draw_line(c, x0, Y(v[i - 1]), x1, Y(v[i]), shade);
  }
}

}  // namespace

void write_panel_png(const std::string& path, const fk::Tensor& gt, const fk::Tensor& meas,
                     const fk::Tensor& rec, const fk::Tensor& prediction) {
  if (gt.dim() == 3 && meas.shape() == gt.shape()) {
    // A measured volume (a z-stack): its z slices stand in for the frames.
    const fk::Dims zxy{2, 0, 1};
    return write_volume_panel_png(
        path, gt, rec, meas.permute(zxy).contiguous(),
        prediction.defined() ? prediction.permute(zxy).contiguous() : fk::Tensor());
  }
  if (gt.dim() == 3) return write_volume_panel_png(path, gt, rec, meas, prediction);
  write_panel_png(path, gt, meas, rec);
}

void write_volume_panel_png(const std::string& path, const fk::Tensor& gt, const fk::Tensor& rec,
                            const fk::Tensor& obs, const fk::Tensor& pred) {
  FK_CHECK(
      gt.dim() == 3 && rec.shape() == gt.shape() && obs.dim() == 3 && obs.size(1) == gt.size(0) &&
          obs.size(2) == gt.size(1) && (!pred.defined() || pred.shape() == obs.shape()),
      "nefi::write_volume_panel_png", "volumes (nx, ny, nz) and surface frames (n_obs, nx, ny)",
      gt.shape().str() + ", " + rec.shape().str() + ", " + obs.shape().str());
  const int nx = static_cast<int>(gt.size(0)), ny = static_cast<int>(gt.size(1)),
            nz = static_cast<int>(gt.size(2)), nt = static_cast<int>(obs.size(0));
  auto spread = [](int n, int k) {
    std::vector<int> idx;
    for (int i = 0; i < std::min(n, k); ++i) {
      const int v = std::min(n, k) == 1 ? 0 : i * (n - 1) / (std::min(n, k) - 1);
      if (idx.empty() || idx.back() != v) idx.push_back(v);
    }
    return idx;
  };
  const std::vector<int> slices = spread(nz, 8);
  // Early frames change fastest: the first, ~10 %, ~33 % and the last.
  std::vector<int> frames;
  for (int f : {0, nt / 10, nt / 3, nt - 1})
    if (frames.empty() || f > frames.back()) frames.push_back(f);
  const int s = std::max(1, 96 / std::max(nx, ny)), gap = 4;
  const int tw = ny * s, th = nx * s;
  const int ncols = static_cast<int>(std::max(slices.size(), frames.size()));
  Canvas c(ncols * (tw + gap) - gap, 4 * th + 3 * gap);
  // Blue gaps: grey tiles stay distinguishable where a tile is white.
  for (size_t p = 0; p < c.px.size(); p += 3) {
    c.px[p] = 90;
    c.px[p + 1] = 120;
    c.px[p + 2] = 200;
  }
  const std::vector<double> g = gt.to_vector<double>(), r = rec.to_vector<double>(),
                            o = obs.to_vector<double>();
  const std::vector<double> q = pred.defined() ? pred.to_vector<double>() : std::vector<double>{};
  auto [glo, ghi] = std::minmax_element(g.begin(), g.end());
  const double lo = *glo, hi = *ghi > *glo ? *ghi : *glo + 1;
  // value(i, j) -> grey on [l, h], tile at column col of row `row`.
  auto tile = [&](int row, int col, double l, double h, auto value) {
    for (int i = 0; i < th; ++i)
      for (int j = 0; j < tw; ++j) {
        const double t = std::clamp((value(i / s, j / s) - l) / (h - l), 0.0, 1.0);
        const auto v = static_cast<unsigned char>(std::lround(255 * t));
        c.set(col * (tw + gap) + j, row * (th + gap) + i, v, v, v);
      }
  };
  for (size_t k = 0; k < slices.size(); ++k) {
    const int z = slices[k];
    tile(0, k, lo, hi, [&](int i, int j) { return g[(i * ny + j) * nz + z]; });
    tile(1, k, lo, hi, [&](int i, int j) { return r[(i * ny + j) * nz + z]; });
  }
  for (size_t k = 0; k < frames.size(); ++k) {
    const size_t off = static_cast<size_t>(frames[k]) * nx * ny;
    auto [flo, fhi] = std::minmax_element(o.begin() + off, o.begin() + off + nx * ny);
    const double l = *flo, h = *fhi > *flo ? *fhi : *flo + 1;
    tile(2, k, l, h, [&](int i, int j) { return o[off + i * ny + j]; });
    if (!q.empty()) tile(3, k, l, h, [&](int i, int j) { return q[off + i * ny + j]; });
  }
  FK_CHECK(stbi_write_png(path.c_str(), c.w, c.h, 3, c.px.data(), c.w * 3) != 0,
           "nefi::write_volume_panel_png", "a writable path", path);
}

void write_panel_png(const std::string& path, const fk::Tensor& gt, const fk::Tensor& stack,
                     const fk::Tensor& rec) {
  if (gt.dim() == 3) return write_volume_panel_png(path, gt, rec, stack, fk::Tensor());
  // A stack of 2-D measurements (holograms at several distances): the first.
  const fk::Tensor meas =
      gt.dim() == 2 && stack.dim() == 3 ? stack.select(0, 0).contiguous() : stack;
  // A 2-D measurement of another shape (a sinogram, a hologram stack's first
  // plane) is drawn stretched onto the truth's tile.
  const bool same = gt.shape() == meas.shape();
  FK_CHECK(gt.shape() == rec.shape() && gt.dim() >= 1 && gt.dim() <= 2 &&
               (same || (gt.dim() == 2 && meas.dim() == 2)),
           "nefi::write_panel_png", "1-D or 2-D fields of one shape",
           gt.shape().str() + " and a measurement " + meas.shape().str());
  const std::vector<double> g = gt.to_vector<double>(), m = meas.to_vector<double>(),
                            r = rec.to_vector<double>();
  auto [glo, ghi] = std::minmax_element(g.begin(), g.end());
  auto [mlo, mhi] = std::minmax_element(m.begin(), m.end());
  double lo = *glo, hi = *ghi > *glo ? *ghi : *glo + 1;
  const int gap = 6;
  if (gt.dim() == 1) {
    const int pw = 320, ph = 200;
    Canvas c(3 * pw + 2 * gap, ph);
    const double pad = 0.1 * (hi - lo);
    plot(c, 0, pw, g, lo - pad, hi + pad, 0);
    plot(c, pw + gap, pw, m, std::min(lo, *mlo) - pad, std::max(hi, *mhi) + pad, 0);
    plot(c, 2 * (pw + gap), pw, g, lo - pad, hi + pad, 170);
    plot(c, 2 * (pw + gap), pw, r, lo - pad, hi + pad, 0);
    FK_CHECK(stbi_write_png(path.c_str(), c.w, c.h, 3, c.px.data(), c.w * 3) != 0,
             "nefi::write_panel_png", "a writable path", path);
    return;
  }
  const int rows = static_cast<int>(gt.size(0)), cols = static_cast<int>(gt.size(1));
  const int s = std::max(1, 256 / std::max(rows, cols));
  Canvas c(3 * cols * s + 2 * gap, rows * s);
  auto image = [&](int ox, const std::vector<double>& v, double l, double h) {
    for (int i = 0; i < rows * s; ++i)
      for (int j = 0; j < cols * s; ++j) {
        const double t = std::clamp((v[(i / s) * cols + j / s] - l) / (h - l), 0.0, 1.0);
        const auto q = static_cast<unsigned char>(std::lround(255 * t));
        c.set(ox + j, i, q, q, q);
      }
  };
  image(0, g, lo, hi);
  if (same) {
    image(cols * s + gap, m, *mlo, *mhi > *mlo ? *mhi : *mlo + 1);
  } else {
    const int64_t mr = meas.size(0), mc = meas.size(1);
    std::vector<double> st(g.size());
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) st[i * cols + j] = m[(i * mr / rows) * mc + j * mc / cols];
    image(cols * s + gap, st, *mlo, *mhi > *mlo ? *mhi : *mlo + 1);
  }
  image(2 * (cols * s + gap), r, lo, hi);
  FK_CHECK(stbi_write_png(path.c_str(), c.w, c.h, 3, c.px.data(), c.w * 3) != 0,
           "nefi::write_panel_png", "a writable path", path);
}

}  // namespace nefi
