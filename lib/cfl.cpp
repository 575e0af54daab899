// BART .cfl/.hdr files and the conversions between BART's arrays and ours.
//
// Conventions checked against BART 0.8 (tests/io/test_bart.cpp):
//  - .hdr is text: a line "# Dimensions", then the extents on the next line (BART writes 16,
//    first fastest); BART also writes "# Command", "# Files", "# Creator" sections, skipped.
//  - .cfl is raw interleaved complex float32, little-endian, first dimension fastest.
//  - trajectories are [3, samples, spokes, ...] in cycles/FOV, the same unit as ours.
//  - images are [x, y, z, 1, ...], voxel index x + nx*(y + ny*z), centre voxel at index n/2.
//  - `bart nufft` (gridding) = 1/sqrt(voxels) * our unnormalised sums; `bart nufft -s`
//    (BART's own DFT) is unnormalised, equal to our sums.
#include "mri/bart.hpp"

#include <bit>
#include <cerrno>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <system_error>

#include "platform/huge_pages.hpp"
#include "mri/error.hpp"

namespace mri::bart {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kBartDims = 16;

fs::path with_ext(const fs::path &base, const char *ext) {
  fs::path p = base;
  p += ext; // append, not replace: "a.b" -> "a.b.hdr", as BART does
  return p;
}

[[noreturn]] void io_error(const fs::path &path, const std::string &what) {
  throw IoError(path.string() + ": " + what);
}

// Through std::error_code (strerror_r), not strerror, whose buffer POSIX lets calls share.
std::string errno_text() { return std::error_code(errno, std::generic_category()).message(); }

std::string dims_text(const std::vector<std::int64_t> &dims) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < dims.size(); ++i) os << (i ? " " : "") << dims[i];
  os << "]";
  return os.str();
}

// prod(dims); false on overflow of the byte count prod * 8.
bool product(const std::vector<std::int64_t> &dims, std::int64_t &out) {
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / 8;
  std::int64_t p = 1;
  for (std::int64_t d : dims) {
    if (d <= 0) return false;
    if (p > limit / d) return false;
    p *= d;
  }
  out = p;
  return true;
}

std::string trim(const std::string &s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::int64_t> parse_header(const fs::path &hdr) {
  std::error_code ec;
  if (!fs::exists(hdr, ec)) io_error(hdr, "header file does not exist");
  if (fs::is_directory(hdr, ec)) io_error(hdr, "header path is a directory");
  std::ifstream in(hdr);
  if (!in) io_error(hdr, "cannot open header for reading (" + errno_text() + ")");
  std::string line;
  bool found = false;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (trim(line) == "# Dimensions") {
      found = true;
      break;
    }
  }
  if (in.bad()) io_error(hdr, "error while reading the header");
  if (!found) io_error(hdr, "malformed header: no \"# Dimensions\" line");
  if (!std::getline(in, line)) io_error(hdr, "malformed header: nothing after \"# Dimensions\"");
  ++line_no;
  std::vector<std::int64_t> dims;
  std::istringstream tokens(line);
  std::string tok;
  while (tokens >> tok) {
    std::int64_t v = 0;
    const char *first = tok.data(), *last = tok.data() + tok.size();
    auto [ptr, err] = std::from_chars(first, last, v);
    if (err != std::errc() || ptr != last)
      io_error(hdr, "malformed header: dimension " + std::to_string(dims.size()) + " = \"" + tok +
                        "\" on line " + std::to_string(line_no) + " is not an integer");
    if (v <= 0)
      io_error(hdr, "malformed header: dimension " + std::to_string(dims.size()) + " = " +
                        std::to_string(v) + " must be positive");
    dims.push_back(v);
  }
  if (dims.empty()) io_error(hdr, "malformed header: the \"# Dimensions\" line lists no dimensions");
  return dims;
}

void to_little_endian_inplace(float *v, std::size_t n) {
  if constexpr (std::endian::native == std::endian::big) {
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t u;
      std::memcpy(&u, &v[i], 4);
      u = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
      std::memcpy(&v[i], &u, 4);
    }
  } else {
    (void)v;
    (void)n;
  }
}

} // namespace

CflArray read_cfl(const fs::path &base) {
  const fs::path hdr = with_ext(base, ".hdr");
  const fs::path cfl = with_ext(base, ".cfl");
  CflArray a;
  a.dims = parse_header(hdr);
  std::int64_t count = 0;
  if (!product(a.dims, count))
    io_error(hdr, "malformed header: dimensions " + dims_text(a.dims) + " are too large");

  std::error_code ec;
  if (!fs::exists(cfl, ec)) io_error(cfl, "data file does not exist");
  if (fs::is_directory(cfl, ec)) io_error(cfl, "data path is a directory");
  const auto size = fs::file_size(cfl, ec);
  if (ec) io_error(cfl, "cannot stat data file (" + ec.message() + ")");
  const std::uintmax_t expected = static_cast<std::uintmax_t>(count) * 8u;
  if (size < expected)
    io_error(cfl, "truncated: " + std::to_string(size) + " bytes, but the header's dimensions " +
                      dims_text(a.dims) + " need " + std::to_string(expected));
  if (size > expected)
    io_error(cfl, "size mismatch: " + std::to_string(size) + " bytes, but the header's dimensions " +
                      dims_text(a.dims) + " need exactly " + std::to_string(expected));

  std::ifstream in(cfl, std::ios::binary);
  if (!in) io_error(cfl, "cannot open data file for reading (" + errno_text() + ")");
  detail::resize_on_huge_pages(a.data, static_cast<std::size_t>(count)); // first touch: lib/platform/huge_pages.hpp
  in.read(reinterpret_cast<char *>(a.data.data()), static_cast<std::streamsize>(expected));
  if (in.gcount() != static_cast<std::streamsize>(expected))
    io_error(cfl, "truncated: read " + std::to_string(in.gcount()) + " of " +
                      std::to_string(expected) + " bytes");
  to_little_endian_inplace(reinterpret_cast<float *>(a.data.data()), a.data.size() * 2);
  return a;
}

void write_cfl(const fs::path &base, const std::vector<std::int64_t> &dims,
               const std::vector<cfloat> &data) {
  if (dims.empty()) detail::invalid_argument("dims.size()", 0, "needs at least one dimension");
  if (dims.size() > kBartDims)
    detail::invalid_argument("dims.size()", dims.size(), "BART reads at most 16 dimensions");
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] <= 0)
      detail::invalid_argument("dims[" + std::to_string(i) + "]", dims[i], "must be positive");
  std::int64_t count = 0;
  if (!product(dims, count)) detail::invalid_argument("dims", dims_text(dims), "product overflows");
  if (static_cast<std::uint64_t>(count) != data.size())
    detail::invalid_argument("data.size()", data.size(),
                             "must equal prod(dims) = " + std::to_string(count) + " for dims " +
                                 dims_text(dims));

  const fs::path hdr = with_ext(base, ".hdr");
  const fs::path cfl = with_ext(base, ".cfl");
  {
    std::ofstream out(cfl, std::ios::binary | std::ios::trunc);
    if (!out) io_error(cfl, "cannot open for writing (" + errno_text() + ")");
    if constexpr (std::endian::native == std::endian::big) {
      std::vector<cfloat> le = data;
      to_little_endian_inplace(reinterpret_cast<float *>(le.data()), le.size() * 2);
      out.write(reinterpret_cast<const char *>(le.data()), static_cast<std::streamsize>(le.size() * 8));
    } else {
      out.write(reinterpret_cast<const char *>(data.data()),
                static_cast<std::streamsize>(data.size() * 8));
    }
    out.flush();
    if (!out) io_error(cfl, "write failed (" + errno_text() + ")");
  }
  {
    std::ofstream out(hdr, std::ios::trunc);
    if (!out) io_error(hdr, "cannot open for writing (" + errno_text() + ")");
    out << "# Dimensions\n";
    for (std::size_t i = 0; i < kBartDims; ++i) out << (i < dims.size() ? dims[i] : 1) << ' ';
    out << "\n";
    out.flush();
    if (!out) io_error(hdr, "write failed (" + errno_text() + ")");
  }
}

Trajectory to_trajectory(const CflArray &traj, int dims) {
  if (dims != 2 && dims != 3) detail::invalid_argument("dims", dims, "must be 2 or 3");
  if (traj.dims.empty() || traj.dims[0] != 3)
    detail::invalid_argument("traj.dims[0]", traj.dims.empty() ? 0 : traj.dims[0],
                             "a BART trajectory has 3 coordinates in its first dimension");
  std::int64_t count = 0;
  if (!product(traj.dims, count) || static_cast<std::uint64_t>(count) != traj.data.size())
    detail::invalid_argument("traj.data.size()", traj.data.size(),
                             "does not match traj.dims " + dims_text(traj.dims));
  const std::size_t m_total = traj.data.size() / 3;
  std::vector<KPoint> points;
  detail::resize_on_huge_pages(points, m_total);
  for (std::size_t m = 0; m < m_total; ++m) {
    const cfloat *c = &traj.data[3 * m];
    for (int a = 0; a < 3; ++a) {
      if (c[a].imag() != 0.0f || !std::isfinite(c[a].real())) {
        std::ostringstream os;
        os << "traj sample " << m << " coordinate " << a << " = " << c[a]
           << ": must be real and finite";
        throw InvalidArgument(os.str());
      }
    }
    if (dims == 2 && c[2].real() != 0.0f) {
      std::ostringstream os;
      os << "traj sample " << m << " = (" << c[0].real() << ", " << c[1].real() << ", "
         << c[2].real() << "): kz must be 0 for a 2D trajectory";
      throw InvalidArgument(os.str());
    }
    points[m] = {c[0].real(), c[1].real(), dims == 3 ? c[2].real() : 0.0f};
  }
  return Trajectory(dims, std::move(points));
}

CflArray from_trajectory(const Trajectory &t) {
  CflArray a;
  a.dims = {3, static_cast<std::int64_t>(t.size())};
  a.data.resize(3 * t.size());
  for (std::size_t m = 0; m < t.size(); ++m) {
    a.data[3 * m + 0] = {t[m].kx, 0.0f};
    a.data[3 * m + 1] = {t[m].ky, 0.0f};
    a.data[3 * m + 2] = {t[m].kz, 0.0f};
  }
  return a;
}

Image to_image(const CflArray &a) {
  if (a.dims.empty()) detail::invalid_argument("a.dims.size()", 0, "needs at least one dimension");
  for (std::size_t i = 0; i < a.dims.size(); ++i)
    if (a.dims[i] <= 0)
      detail::invalid_argument("a.dims[" + std::to_string(i) + "]", a.dims[i], "must be positive");
  for (std::size_t i = 3; i < a.dims.size(); ++i)
    if (a.dims[i] != 1)
      detail::invalid_argument("a.dims[" + std::to_string(i) + "]", a.dims[i],
                               "an image has only x, y, z; dims " + dims_text(a.dims));
  const std::int64_t nx = a.dims[0];
  const std::int64_t ny = a.dims.size() > 1 ? a.dims[1] : 1;
  const std::int64_t nz = a.dims.size() > 2 ? a.dims[2] : 1;
  const Grid grid(nx, ny, nz);
  if (static_cast<std::uint64_t>(grid.voxels()) != a.data.size())
    detail::invalid_argument("a.data.size()", a.data.size(),
                             "must equal prod(dims) = " + std::to_string(grid.voxels()));
  return Image(grid, a.data);
}

CflArray from_image(const Image &image) {
  const Grid &g = image.grid();
  return CflArray{{g.nx(), g.ny(), g.nz()}, image.values()};
}

double nufft_scale(const Grid &grid) {
  // Checked against BART 0.8 (tests/io/test_bart.cpp): its default (gridding) nufft equals
  // the unnormalised sums times 1/sqrt(voxels), up to its gridding error (a uniform bias
  // of about +0.14% with the default kernel). Its `-s` DFT is unnormalised (factor 1).
  return 1.0 / std::sqrt(static_cast<double>(grid.voxels()));
}

} // namespace mri::bart
