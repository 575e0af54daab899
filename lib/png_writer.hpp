#pragma once
// The one libpng writer (png.cpp): 8-bit gray or RGB rows, row 0 at the top of the picture.
#include <cstdint>
#include <filesystem>

namespace mri::detail {

// pixels: height rows of width x channels bytes. Throws IoError when the file cannot be written.
void write_png_8bit(const std::filesystem::path &path, std::int64_t width, std::int64_t height, int channels,
                    const unsigned char *pixels);

} // namespace mri::detail
