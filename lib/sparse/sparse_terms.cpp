// The sparse terms' names, BART's `-R` syntax and the geometry of their transforms (axes,
// stacked gradients, wavelet levels): mri/sparse.hpp.
#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "mri/detail/sparse_stencil.hpp"
#include "mri/error.hpp"
#include "mri/sparse.hpp"

namespace mri {
namespace {

constexpr unsigned kImageAxesMask = 0x7; // bit 0 x, bit 1 y, bit 2 z
constexpr const char *kAxisNames[3] = {"x", "y", "z"};

std::string grid_text(const Grid &grid) {
  std::ostringstream os;
  os << grid.nx() << "x" << grid.ny() << "x" << grid.nz();
  return os.str();
}

// The shortest text that reads back as the same double (std::to_chars without a precision).
std::string number_text(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::vector<std::string_view> split_fields(std::string_view spec) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  for (;;) {
    const std::size_t colon = spec.find(':', start);
    fields.push_back(spec.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
    if (colon == std::string_view::npos) return fields;
    start = colon + 1;
  }
}

[[noreturn]] void bad_term(std::string_view spec, std::string_view why) {
  detail::invalid_argument("regularisation term", spec, why);
}

// A whole field as a non-negative integer (BART's flags are written in decimal).
unsigned parse_flags(std::string_view spec, std::string_view field, const char *what) {
  unsigned value = 0;
  const auto result = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || result.ec != std::errc() || result.ptr != field.data() + field.size())
    bad_term(spec, std::string(what) + " must be a non-negative integer (bit flags), got \"" + std::string(field) + "\"");
  return value;
}

// A whole field as a finite lambda >= 0.
double parse_lambda(std::string_view spec, std::string_view field) {
  double value = 0;
  const auto result = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || result.ec != std::errc() || result.ptr != field.data() + field.size())
    bad_term(spec, "LAMBDA must be a number, got \"" + std::string(field) + "\"");
  if (!std::isfinite(value) || value < 0) bad_term(spec, "LAMBDA must be finite and >= 0");
  return value;
}

SparsePenalty penalty_of_letter(std::string_view spec, std::string_view letter) {
  if (letter == "W") return SparsePenalty::L1Wavelet;
  if (letter == "T") return SparsePenalty::TotalVariation;
  if (letter == "I") return SparsePenalty::L1Image;
  if (letter == "Q") return SparsePenalty::L2;
  if (letter == "L") return SparsePenalty::LocallyLowRank;
  bad_term(spec, "unknown regulariser \"" + std::string(letter) +
                     "\" (W: l1-wavelet, T: total variation, I: l1 of the image, L: locally low rank, Q: l2)");
}

char letter_of(SparsePenalty p) {
  switch (p) {
  case SparsePenalty::L1Wavelet: return 'W';
  case SparsePenalty::TotalVariation: return 'T';
  case SparsePenalty::L1Image: return 'I';
  case SparsePenalty::L2: return 'Q';
  case SparsePenalty::LocallyLowRank: return 'L';
  }
  return '?';
}

} // namespace

const char *to_string(Wavelet w) {
  switch (w) {
  case Wavelet::Haar: return "haar";
  case Wavelet::Daubechies2: return "daubechies2";
  case Wavelet::Daubechies4: return "daubechies4";
  }
  return "?";
}

const char *to_string(SparsePenalty p) {
  switch (p) {
  case SparsePenalty::L1Wavelet: return "l1-wavelet";
  case SparsePenalty::TotalVariation: return "total-variation";
  case SparsePenalty::L1Image: return "l1-image";
  case SparsePenalty::L2: return "l2";
  case SparsePenalty::LocallyLowRank: return "locally-low-rank";
  }
  return "?";
}

// BART's text of the term, then what BART's letters leave implicit: "W:3:0:0.001 (l1-wavelet,
// daubechies2)", "T:3:0:0.002 (total-variation, isotropic)", "Q:0.01 (l2)".
std::string to_string(const SparseTerm &term) {
  std::ostringstream os;
  os << letter_of(term.penalty) << ':';
  if (term.penalty != SparsePenalty::L2) os << term.axes << ':' << term.joint << ':';
  os << number_text(term.lambda) << " (" << to_string(term.penalty);
  if (term.penalty == SparsePenalty::L1Wavelet) os << ", " << to_string(term.wavelet);
  if (term.penalty == SparsePenalty::TotalVariation) os << ", " << (term.isotropic ? "isotropic" : "anisotropic");
  if (term.penalty == SparsePenalty::LocallyLowRank) os << ", block " << term.block;
  if (is_temporal(term)) os << ", along the frames";
  os << ')';
  return os.str();
}

// "W|T|I:DIMS:JOINT:LAMBDA" or "Q:LAMBDA", each field whole (no trailing text). DIMS 0 keeps
// SparseTerm's meaning: every axis of extent > 1.
SparseTerm parse_bart_term(std::string_view spec) {
  const std::vector<std::string_view> fields = split_fields(spec);
  SparseTerm term;
  term.penalty = penalty_of_letter(spec, fields[0]);
  if (term.penalty == SparsePenalty::L2) {
    if (fields.size() != 2) bad_term(spec, "expected Q:LAMBDA");
    term.lambda = parse_lambda(spec, fields[1]);
    return term;
  }
  if (fields.size() != 4) bad_term(spec, "expected TYPE:DIMS:JOINT:LAMBDA");
  term.axes = parse_flags(spec, fields[1], "DIMS");
  if ((term.axes & ~(kImageAxesMask | kFrameAxis)) != 0)
    bad_term(spec, "DIMS has bits beyond the image axes (bit 0 x, bit 1 y, bit 2 z) and the frames (bit 10, 1024)");
  term.joint = parse_flags(spec, fields[2], "JOINT");
  const bool llr_blocks = term.penalty == SparsePenalty::LocallyLowRank && term.joint == term.axes;
  if (term.joint != 0 && !llr_blocks)
    bad_term(spec, "joint thresholding is supported only as locally low rank's block axes (L:DIMS:DIMS:LAMBDA)");
  term.joint = 0;
  term.lambda = parse_lambda(spec, fields[3]);
  return term;
}

int axis_count(unsigned axes) { return std::popcount(axes); }

unsigned resolve_axes(const Grid &grid, unsigned axes) {
  if ((axes & ~kImageAxesMask) != 0)
    detail::invalid_argument("axes", axes, "bits beyond the image axes (bit 0 x, bit 1 y, bit 2 z)");
  if (axes == 0) {
    for (int a = 0; a < 3; ++a)
      if (grid.extent(a) > 1) axes |= 1u << a;
    if (axes == 0) detail::invalid_argument("grid", grid_text(grid), "no axis of extent > 1 to act along");
    return axes;
  }
  for (int a = 0; a < 3; ++a)
    if ((axes >> a & 1u) != 0 && grid.extent(a) == 1)
      detail::invalid_argument("axes", axes,
                               std::string("axis ") + kAxisNames[a] + " has extent 1 on grid " + grid_text(grid) +
                                   ": a wavelet or a difference along it is undefined");
  return axes;
}

// The stack is a grid of nz * count planes for 2D grids too (nz = 1: count planes): the blocks lie
// one after the other in memory, block c at offset c * grid.voxels().
bool is_temporal(const SparseTerm &t) { return t.axes == kFrameAxis; }

void validate(const SparseTerm &t, const Grid &grid, const std::string &name) {
  if (is_temporal(t) || t.penalty == SparsePenalty::LocallyLowRank)
    detail::invalid_argument(name, to_string(t), "needs a stack of frames (reconstruct_frames, mri/dynamic.hpp)");
  validate(t, grid, 1, name);
}

void validate(const SparseTerm &t, const Grid &grid, int frames, const std::string &name) {
  if (frames < 1) detail::invalid_argument("frames", frames, "a stack holds at least one image");
  if (!(t.lambda >= 0) || !std::isfinite(t.lambda)) detail::invalid_argument(name + ".lambda", t.lambda, "must be finite and >= 0");
  if (t.joint != 0)
    detail::invalid_argument(name + ".joint", t.joint, "joint thresholding needs a dimension beyond the image (coils, frames)");
  if (t.penalty == SparsePenalty::L2)
    detail::invalid_argument(name, "l2", "is quadratic: give it as solver.lambda with Regularizer::Tikhonov");
  if ((t.axes & kFrameAxis) != 0) {
    if (!is_temporal(t))
      detail::invalid_argument(name + ".axes", t.axes,
                               "mixes the frame axis (1024) with image axes: give a spatial and a temporal term");
    if (t.penalty != SparsePenalty::TotalVariation)
      detail::invalid_argument(name, to_string(t), "along the frames only total variation (T:1024:0:LAMBDA)");
    if (frames < 2) detail::invalid_argument("frames", frames, "a term along the frames needs at least 2");
    return;
  }
  const unsigned axes = resolve_axes(grid, t.axes);
  if (t.penalty == SparsePenalty::L1Wavelet) wavelet_levels(grid, axes, t.wavelet);
  if (t.penalty == SparsePenalty::LocallyLowRank)
    for (int a = 0; a < 3; ++a)
      if ((axes >> a & 1u) != 0 && !(t.block >= 1 && t.block <= grid.extent(a)))
        detail::invalid_argument(name + ".block", t.block,
                                 "must be in [1, " + std::to_string(grid.extent(a)) + "] (the image's extent along " +
                                     kAxisNames[a] + ")");
}

Grid stacked_grid(const Grid &grid, int count) {
  if (count < 1) detail::invalid_argument("count", count, "a stack holds at least one image");
  return Grid(grid.nx(), grid.ny(), grid.nz() * count);
}

int WaveletLevels::max_levels() const { return *std::max_element(levels.begin(), levels.end()); }

// Per axis of `axes`, split the approximation extent n -> wavelet_approximation_extent(n) while
// n >= kWaveletMinSplitExtent; the other axes are not transformed (levels 0, coarse = extent).
WaveletLevels wavelet_levels(const Grid &grid, unsigned axes, Wavelet wavelet) {
  WaveletLevels out;
  out.grid = grid;
  out.axes = resolve_axes(grid, axes);
  out.wavelet = wavelet;
  for (int a = 0; a < 3; ++a) {
    const auto i = static_cast<std::size_t>(a);
    std::int64_t n = grid.extent(a);
    if ((out.axes >> a & 1u) != 0)
      while (n >= detail::kWaveletMinSplitExtent) {
        n = detail::wavelet_approximation_extent(n);
        ++out.levels[i];
      }
    out.coarse[i] = n;
  }
  if (out.max_levels() == 0)
    detail::invalid_argument("grid", grid_text(grid),
                             "no wavelet axis is long enough for one level (extent >= " +
                                 std::to_string(detail::kWaveletMinSplitExtent) + ")");
  return out;
}

} // namespace mri
