#pragma once
// Line buffers of the fused 2D Toeplitz normals (sense_toeplitz_2d.cpp,
// lib/offresonance/segmented_sense_2d.cpp): rows and columns of the doubled grid gathered into
// buffers of lines that FFTW transforms a block at a time.
#include <complex>
#include <cstdint>
#include <cstring>

namespace mri::detail::line_buffers {

// A buffer's distance between lines, in complex floats: whole 64-byte cache lines, an odd number
// of them, so that a block's lines, written element by element, fall in different L1 sets (a
// multiple of 4 KB, the doubled grid's 512 floats, puts them all in one set: grid_fft.cpp).
inline std::int64_t line_distance(std::int64_t length) {
  constexpr std::int64_t per_line = 64 / sizeof(std::complex<float>);
  std::int64_t cache_lines = (length + per_line - 1) / per_line;
  if (cache_lines % 2 == 0) ++cache_lines;
  return cache_lines * per_line;
}

inline std::int64_t round_up(std::int64_t n, std::int64_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// One complex float as 8 bytes (one move; a complex assignment compiles to two).
inline void move_value(const std::complex<float> *from, std::complex<float> *to) {
  std::memcpy(to, from, sizeof(std::complex<float>));
}

} // namespace mri::detail::line_buffers
