#pragma once
// PNG output of image magnitudes (the demo's pictures).
//
// Thread safety: write_png_montage writes the file in place: concurrent calls for different paths
// are safe, two calls for one path race on the file.
#include <filesystem>
#include <vector>

#include "mri/image.hpp"

namespace mri {

struct PngPanel {
  const Image *image;  // 2D image (or the central z slice of a 3D one)
  float display_max;   // magnitude shown as white; <= 0 means the panel's own maximum
};

// Writes the panels side by side as one 8-bit grayscale PNG. Throws IoError on failure.
void write_png_montage(const std::filesystem::path &path, const std::vector<PngPanel> &panels);

} // namespace mri
