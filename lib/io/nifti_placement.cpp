// The NIfTI file's layout and affine from the images' scanner geometry (LPS) : see
// mri/io/nifti.hpp. Positions are compared to 0.01 mm: ISMRMRD stores them as float32.
#include "nifti_placement.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "mri/error.hpp"

namespace mri::detail {
namespace {

using Vec3 = std::array<double, 3>;
constexpr double kPositionTolerance_mm = 0.01;
constexpr double kDirectionTolerance = 1e-3;

double dot(const Vec3 &a, const Vec3 &b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
Vec3 axpy(double s, const Vec3 &x, const Vec3 &y) { return {s * x[0] + y[0], s * x[1] + y[1], s * x[2] + y[2]}; }
double distance(const Vec3 &a, const Vec3 &b) { const Vec3 d = axpy(-1, b, a); return std::sqrt(dot(d, d)); }

std::string field(std::size_t i, const char *name) { return "write_nifti: geometry[" + std::to_string(i) + "]." + name; }

// Unit, pairwise orthogonal directions (a rotation, possibly with a reflection).
void check_orthonormal(const ScannerGeometry &g) {
  const Vec3 *dirs[3] = {&g.read_dir, &g.phase_dir, &g.slice_dir};
  const char *names[3] = {"read_dir", "phase_dir", "slice_dir"};
  for (int a = 0; a < 3; ++a) {
    const double norm = std::sqrt(dot(*dirs[a], *dirs[a]));
    if (std::abs(norm - 1) > kDirectionTolerance) invalid_argument(field(0, names[a]), norm, "|dir| must be 1");
    for (int b = a + 1; b < 3; ++b)
      if (std::abs(dot(*dirs[a], *dirs[b])) > kDirectionTolerance)
        invalid_argument(field(0, names[a]), dot(*dirs[a], *dirs[b]),
                         std::string("its dot product with ") + names[b] + " must be 0");
  }
}

void check_same_orientation(const std::vector<ScannerGeometry> &geo) {
  for (std::size_t i = 1; i < geo.size(); ++i)
    if (distance(geo[i].read_dir, geo[0].read_dir) > kDirectionTolerance ||
        distance(geo[i].phase_dir, geo[0].phase_dir) > kDirectionTolerance ||
        distance(geo[i].slice_dir, geo[0].slice_dir) > kDirectionTolerance)
      invalid_argument(field(i, "read/phase/slice_dir"), "differ", "from geometry[0]'s: one orientation per file");
}

// Each image's offset from geometry[0].position along slice_dir (mm); in-plane offsets refused.
std::vector<double> offsets_along_slice(const std::vector<ScannerGeometry> &geo) {
  std::vector<double> t;
  for (std::size_t i = 0; i < geo.size(); ++i) {
    const Vec3 d = axpy(-1, geo[0].position, geo[i].position);
    t.push_back(dot(d, geo[0].slice_dir));
    if (distance(d, axpy(t.back(), geo[0].slice_dir, {0, 0, 0})) > kPositionTolerance_mm)
      invalid_argument(field(i, "position"), "off the slice axis",
                       "not on the line through geometry[0].position along slice_dir");
  }
  return t;
}

// The distinct offsets, ascending and evenly spaced (the slices of one stack).
std::vector<double> slice_offsets(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end(), [](double a, double b) { return b - a < kPositionTolerance_mm; }), t.end());
  for (std::size_t s = 2; s < t.size(); ++s)
    if (std::abs((t[s] - t[s - 1]) - (t[1] - t[0])) > kPositionTolerance_mm)
      invalid_argument("write_nifti: slice spacing", t[s] - t[s - 1],
                       "differs from the first spacing " + std::to_string(t[1] - t[0]) + " mm: not one evenly spaced stack");
  return t;
}

// File order: slice fastest, then the k-th image of each slice (series).
std::vector<std::size_t> stack_order(const std::vector<double> &t, const std::vector<double> &slices, std::int64_t series) {
  const auto n = static_cast<std::int64_t>(slices.size());
  std::vector<std::size_t> order(t.size());
  std::vector<std::int64_t> seen(slices.size(), 0);
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto s = std::lower_bound(slices.begin(), slices.end(), t[i] - kPositionTolerance_mm) - slices.begin();
    if (seen[s] >= series)
      invalid_argument(field(i, "position"), t[i], "one slice holds more images than another (series must be equal)");
    order[static_cast<std::size_t>(seen[s]++ * n + s)] = i;
  }
  return order;
}

// LPS columns voxel -> mm, origin at voxel 0, then x and y negated (RAS).
NiftiAffine ras_affine(const ScannerGeometry &g, const Vec3 &first_position, const Grid &grid,
                                                const Vec3 &voxel_mm) {
  const Vec3 *dirs[3] = {&g.read_dir, &g.phase_dir, &g.slice_dir};
  Vec3 origin = first_position;
  for (int a = 0; a < 3; ++a)
    origin = axpy(-static_cast<double>(grid.extent(a) / 2) * voxel_mm[a], *dirs[a], origin);
  NiftiAffine m{};
  for (int r = 0; r < 3; ++r) {
    const double flip = r < 2 ? -1 : 1;
    for (int a = 0; a < 3; ++a) m[r][a] = flip * voxel_mm[a] * (*dirs[a])[r];
    m[r][3] = flip * origin[r];
  }
  return m;
}

} // namespace

NiftiPlacement place_images(const Grid &grid, std::size_t images, const std::array<double, 3> &voxel_mm,
                            const std::vector<ScannerGeometry> &geometry) {
  if (!geometry.empty() && geometry.size() != images)
    invalid_argument("write_nifti: geometry.size()", geometry.size(),
                     "one per image (" + std::to_string(images) + ") or none");
  NiftiPlacement p;
  p.voxel_mm = voxel_mm;
  if (geometry.empty()) { // BART inputs: no scanner frame known
    p.series = static_cast<std::int64_t>(images);
    for (std::size_t i = 0; i < images; ++i) p.order.push_back(i);
    p.affine = nifti_identity_affine(grid, voxel_mm);
    return p;
  }
  const std::vector<ScannerGeometry> &geo = geometry;
  check_orthonormal(geo[0]);
  check_same_orientation(geo);
  const std::vector<double> t = offsets_along_slice(geo), slices = slice_offsets(t);
  p.positions = static_cast<std::int64_t>(slices.size());
  p.series = static_cast<std::int64_t>(images) / p.positions;
  if (p.positions > 1 && grid.nz() > 1)
    invalid_argument("write_nifti: geometry", "3D volumes at " + std::to_string(p.positions) + " positions",
                     "only 2D slices are stacked");
  if (p.series * p.positions != static_cast<std::int64_t>(images))
    invalid_argument("write_nifti: geometry", images, "images are not the same number per slice position");
  p.order = stack_order(t, slices, p.series);
  if (p.positions > 1) p.voxel_mm[2] = slices[1] - slices[0];
  p.affine = ras_affine(geo[0], axpy(slices[0], geo[0].slice_dir, geo[0].position), grid, p.voxel_mm);
  return p;
}

} // namespace mri::detail
