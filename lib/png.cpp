#include "mri/png.hpp"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "mri/error.hpp"
#include "png_writer.hpp"

namespace mri {
namespace {

constexpr int kGap = 4; // black columns between panels

// The displayed 2D slice: the image itself, or the central z slice of a volume.
std::int64_t slice_offset(const Grid &g) { return g.nx() * g.ny() * (g.nz() / 2); }

float panel_max(const PngPanel &p) {
  if (p.display_max > 0) return p.display_max;
  const Grid &g = p.image->grid();
  float m = 0;
  for (std::int64_t i = 0; i < g.nx() * g.ny(); ++i) m = std::max(m, std::abs((*p.image)[slice_offset(g) + i]));
  return m > 0 ? m : 1.0f;
}

} // namespace

void write_png_montage(const std::filesystem::path &path, const std::vector<PngPanel> &panels) {
  if (panels.empty()) detail::invalid_argument("panels.size()", 0, "nothing to draw");
  std::int64_t width = 0, height = 0;
  for (const PngPanel &p : panels) {
    if (!p.image) detail::invalid_argument("panel.image", "null", "every panel needs an image");
    width += p.image->grid().nx() + (width ? kGap : 0);
    height = std::max(height, p.image->grid().ny());
  }
  std::vector<png_byte> pixels(static_cast<std::size_t>(width * height), 0);
  std::int64_t x0 = 0;
  for (const PngPanel &p : panels) {
    const Grid &g = p.image->grid();
    const float scale = 255.0f / panel_max(p);
    // Row 0 of the PNG is the top: +y is drawn upwards (radiological display of the phantom).
    for (std::int64_t y = 0; y < g.ny(); ++y)
      for (std::int64_t x = 0; x < g.nx(); ++x) {
        const float v = std::abs((*p.image)[slice_offset(g) + g.index(x, y)]) * scale;
        pixels[(height - 1 - y) * width + x0 + x] = static_cast<png_byte>(std::clamp(v, 0.0f, 255.0f) + 0.5f);
      }
    x0 += g.nx() + kGap;
  }

  detail::write_png_8bit(path, width, height, 1, pixels.data());
}

void detail::write_png_8bit(const std::filesystem::path &path, std::int64_t width, std::int64_t height, int channels,
                            const unsigned char *pixels) {
  if (channels != 1 && channels != 3) invalid_argument("channels", channels, "must be 1 (gray) or 3 (RGB)");
  std::unique_ptr<FILE, int (*)(FILE *)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) throw IoError("cannot open " + path.string() + " for writing");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, info ? &info : nullptr);
    throw IoError("libpng failed writing " + path.string());
  }
  png_init_io(png, file.get());
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
               channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (std::int64_t y = 0; y < height; ++y) png_write_row(png, pixels + y * width * channels);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
}

} // namespace mri
