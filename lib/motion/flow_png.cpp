// The picture of a displacement field (examples/motion_3d): the central z slice of the frame in
// gray with the in-plane (u, v) drawn as arrows, beside the flow in the usual colour code (hue =
// in-plane direction, brightness = magnitude relative to the slice's largest).
#include <algorithm>
#include <array>
#include <cmath>

#include "mri/error.hpp"
#include "mri/motion.hpp"
#include "../png_writer.hpp"

namespace mri {
namespace {

using Rgb = std::array<unsigned char, 3>;

struct Canvas {
  std::int64_t width, height, scale;
  std::vector<Rgb> px;
  void set(std::int64_t x, std::int64_t y, Rgb c) {
    if (x >= 0 && y >= 0 && x < width && y < height)
      px[(height - 1 - y) * width + x] = c; // +y drawn up
  }
  void line(double x0, double y0, double x1, double y1, Rgb c) {
    const int steps = int(std::ceil(std::max(std::abs(x1 - x0), std::abs(y1 - y0)))) + 1;
    for (int s = 0; s <= steps; ++s) {
      const double t = double(s) / steps;
      set(std::llround(x0 + t * (x1 - x0)), std::llround(y0 + t * (y1 - y0)), c);
    }
  }
};

Rgb hsv(double h, double s, double v) { // h in [0, 1)
  const double i = std::floor(h * 6), f = h * 6 - i, p = v * (1 - s), q = v * (1 - f * s),
               t = v * (1 - (1 - f) * s);
  double r, g, b;
  switch (int(i) % 6) {
  case 0:
    r = v, g = t, b = p;
    break;
  case 1:
    r = q, g = v, b = p;
    break;
  case 2:
    r = p, g = v, b = t;
    break;
  case 3:
    r = p, g = q, b = v;
    break;
  case 4:
    r = t, g = p, b = v;
    break;
  default:
    r = v, g = p, b = q;
    break;
  }
  return {static_cast<unsigned char>(255 * r), static_cast<unsigned char>(255 * g), static_cast<unsigned char>(255 * b)};
}

void write_rgb(const std::filesystem::path &path, const Canvas &c) {
  static_assert(sizeof(Rgb) == 3, "Rgb is three bytes, the PNG's RGB pixel");
  detail::write_png_8bit(path, c.width, c.height, 3, reinterpret_cast<const unsigned char *>(c.px.data()));
}

} // namespace

void write_motion_png(const std::filesystem::path &path, const RealVolume &frame,
                      const DisplacementField &w, int scale, int arrow_step) {
  if (!(frame.grid() == w.grid()))
    detail::invalid_argument("w.grid().voxels()", w.grid().voxels(),
                             "differs from the frame's grid");
  if (scale < 1 || scale > 16)
    detail::invalid_argument("scale", scale, "must be 1..16");
  if (arrow_step < 1)
    detail::invalid_argument("arrow_step", arrow_step, "must be >= 1");
  const Grid &g = frame.grid();
  const std::int64_t z = g.nz() / 2, nx = g.nx() * scale, ny = g.ny() * scale, gap = 4;
  Canvas c{2 * nx + gap, ny, scale,
           std::vector<Rgb>(std::size_t((2 * nx + gap) * ny), Rgb{0, 0, 0})};
  float lo = frame.at(0, 0, z), hi = lo, peak = 1e-6f;
  for (std::int64_t y = 0; y < g.ny(); ++y)
    for (std::int64_t x = 0; x < g.nx(); ++x) {
      lo = std::min(lo, frame.at(x, y, z)), hi = std::max(hi, frame.at(x, y, z));
      peak = std::max(peak, std::hypot(w.u.at(x, y, z), w.v.at(x, y, z)));
    }
  for (std::int64_t y = 0; y < ny; ++y)
    for (std::int64_t x = 0; x < nx; ++x) {
      const std::int64_t vx = x / scale, vy = y / scale;
      const auto gray = static_cast<unsigned char>(255 * (frame.at(vx, vy, z) - lo) / std::max(hi - lo, 1e-6f));
      c.set(x, y, {gray, gray, gray});
      const double u = w.u.at(vx, vy, z), v = w.v.at(vx, vy, z);
      const double hue = (std::atan2(v, u) + M_PI) / (2 * M_PI);
      c.set(nx + gap + x, y,
            hsv(std::min(hue, 0.999), 1.0, std::min(1.0, std::hypot(u, v) / peak)));
    }
  // Arrows at every arrow_step-th voxel, lengths scaled so the longest spans arrow_step voxels.
  const double k = arrow_step / peak * scale;
  for (std::int64_t y = arrow_step / 2; y < g.ny(); y += arrow_step)
    for (std::int64_t x = arrow_step / 2; x < g.nx(); x += arrow_step) {
      const double x0 = (x + 0.5) * scale, y0 = (y + 0.5) * scale;
      const double x1 = x0 + k * w.u.at(x, y, z), y1 = y0 + k * w.v.at(x, y, z);
      const Rgb yellow{255, 220, 0};
      c.line(x0, y0, x1, y1, yellow);
      const double a = std::atan2(y1 - y0, x1 - x0), head = 0.35 * std::hypot(x1 - x0, y1 - y0);
      c.line(x1, y1, x1 - head * std::cos(a - 0.5), y1 - head * std::sin(a - 0.5), yellow);
      c.line(x1, y1, x1 - head * std::cos(a + 0.5), y1 - head * std::sin(a + 0.5), yellow);
    }
  write_rgb(path, c);
}

} // namespace mri
