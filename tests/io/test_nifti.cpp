// NIfTI output read back by libnifti itself (nifti_image_read): shape, voxel sizes, values.
#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/io/nifti.hpp"
#include "test_support.hpp"

#include <nifti2_io.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <tuple>

using namespace mri;

namespace {

struct Free {
  void operator()(nifti_image *p) const { nifti_image_free(p); }
};
using Nim = std::unique_ptr<nifti_image, Free>;

std::vector<Image> two_images() {
  const Grid g(6, 5, 4);
  return {test::random_image(g, 1), test::random_image(g, 2)};
}

} // namespace

TEST_CASE("nifti: magnitude series, read back by libnifti", "[nifti]") {
  test::TempDir dir("nifti");
  const auto images = two_images();
  for (const char *name : {"m.nii", "m.nii.gz"}) {
    write_nifti(dir / name, images, {1.5, 2.0, 3.0});
    const Nim nim(nifti_image_read((dir / name).c_str(), 1));
    REQUIRE(nim);
    CHECK(nim->ndim == 4);
    CHECK(nim->nx == 6);
    CHECK(nim->ny == 5);
    CHECK(nim->nz == 4);
    CHECK(nim->nt == 2);
    CHECK(nim->datatype == DT_FLOAT32);
    CHECK(nim->pixdim[1] == Approx(1.5));
    CHECK(nim->pixdim[2] == Approx(2.0));
    CHECK(nim->pixdim[3] == Approx(3.0));
    CHECK(nim->xyz_units == NIFTI_UNITS_MM);
    const auto *v = static_cast<const float *>(nim->data);
    for (std::size_t t = 0; t < 2; ++t)
      for (std::size_t i = 0; i < images[t].size(); ++i) REQUIRE(v[t * images[t].size() + i] == std::abs(images[t][i]));
  }
}

TEST_CASE("nifti: complex64 values and read_nifti", "[nifti]") {
  test::TempDir dir("nifti");
  const auto images = two_images();
  const std::vector<Image> one{images[0]};
  write_nifti(dir / "c.nii", one, {1, 1, 2}, NiftiValues::Complex);
  const Nim nim(nifti_image_read((dir / "c.nii").c_str(), 1));
  REQUIRE(nim);
  CHECK(nim->ndim == 3);
  CHECK(nim->datatype == DT_COMPLEX64);
  const auto *v = static_cast<const cfloat *>(nim->data);
  for (std::size_t i = 0; i < one[0].size(); ++i) REQUIRE(v[i] == one[0][i]);
  const NiftiVolume back = read_nifti(dir / "c.nii");
  CHECK(back.dims == std::array<std::int64_t, 4>{6, 5, 4, 1});
  // Non-finite values reach the caller (libnifti's own loader would turn them into 0).
  std::vector<Image> nan{images[0]};
  nan[0][7] = cfloat(std::nanf(""), 1);
  write_nifti(dir / "nan.nii", nan, {1, 1, 1}, NiftiValues::Complex);
  CHECK(std::isnan(read_nifti(dir / "nan.nii").data[7].real()));
  CHECK(back.voxel_mm[2] == Approx(2));
  CHECK(back.data == one[0].values());
}

TEST_CASE("nifti: bad arguments and unwritable paths", "[nifti]") {
  test::TempDir dir("nifti");
  const auto images = two_images();
  CHECK_THROWS_AS(write_nifti(dir / "x.img", images, {1, 1, 1}), InvalidArgument);
  CHECK_THROWS_AS(write_nifti(dir / "x.nii", {}, {1, 1, 1}), InvalidArgument);
  CHECK_THROWS_AS(write_nifti(dir / "x.nii", images, {1, 0, 1}), InvalidArgument);
  CHECK_THROWS_AS(write_nifti(dir / "x.nii", {images[0], test::random_image(Grid(4, 4), 3)}, {1, 1, 1}), InvalidArgument);
  CHECK_THROWS_AS(write_nifti(dir / "no-dir" / "x.nii", images, {1, 1, 1}), IoError);
  CHECK_THROWS_AS(read_nifti(dir / "missing.nii"), IoError);
  CHECK(std::filesystem::is_empty(dir.path())); // nothing half-written
  write_nifti(dir / "t.nii", images, {1, 1, 1});
  std::filesystem::resize_file(dir / "t.nii", 600); // the header and part of the data
  CHECK_THROWS_WITH(read_nifti(dir / "t.nii"), Catch::Contains("needs 960 bytes, the file holds 248"));
}

namespace {

// An oblique orientation: read and phase rotated about z by 30 degrees then tilted about x.
ScannerGeometry oblique(const std::array<double, 3> &position) {
  const double c = std::cos(0.5236), s = std::sin(0.5236), ct = std::cos(0.3), st = std::sin(0.3);
  ScannerGeometry g;
  g.read_dir = {c, s * ct, s * st};
  g.phase_dir = {-s, c * ct, c * st};
  g.slice_dir = {0, -st, ct}; // read x phase
  g.position = position;
  return g;
}

// Where the affine (rows of voxel -> RAS mm) puts voxel (i, j, k).
std::array<double, 3> apply(const std::array<std::array<double, 4>, 3> &m, double i, double j, double k) {
  std::array<double, 3> x{};
  for (int r = 0; r < 3; ++r) x[r] = m[r][0] * i + m[r][1] * j + m[r][2] * k + m[r][3];
  return x;
}

} // namespace

TEST_CASE("nifti: slices at their scanner positions: stacked along z, sorted, LPS -> RAS", "[nifti]") {
  test::TempDir dir("nifti");
  const Grid g(8, 6);
  const std::array<double, 3> voxel{1.5, 2.0, 4.0}, centre{12.0, -30.0, 45.0};
  ScannerGeometry base = oblique(centre);
  // Three slices written in the order 2, 0, 1 (positions 2 x 5 mm, 0, 5 mm along slice_dir), two
  // repetitions each: the file holds them sorted along slice_dir, then by repetition.
  const int slice_of[6] = {2, 0, 1, 2, 0, 1};
  std::vector<Image> images;
  std::vector<ScannerGeometry> geo;
  for (int n = 0; n < 6; ++n) {
    images.push_back(test::random_image(g, static_cast<std::uint64_t>(10 + n)));
    ScannerGeometry s = base;
    for (int a = 0; a < 3; ++a) s.position[a] += 5.0 * slice_of[n] * base.slice_dir[a];
    geo.push_back(s);
  }
  write_nifti(dir / "s.nii.gz", images, voxel, NiftiValues::Complex, geo);
  const NiftiVolume v = read_nifti(dir / "s.nii.gz");
  CHECK(v.dims == std::array<std::int64_t, 4>{8, 6, 3, 2});
  CHECK(v.voxel_mm[2] == Approx(5.0)); // the slice spacing, not the thickness
  for (int n = 0; n < 6; ++n) { // image n is slice slice_of[n], repetition n / 3
    const std::size_t at = (static_cast<std::size_t>(n / 3) * 3 + static_cast<std::size_t>(slice_of[n])) * g.voxels();
    REQUIRE(std::equal(images[n].values().begin(), images[n].values().end(), v.data.begin() + static_cast<std::ptrdiff_t>(at)));
  }
  for (const auto &m : {v.qform, v.sform})
    for (const auto &[i, j, k] : {std::array<int, 3>{0, 0, 0}, {7, 5, 2}, {4, 3, 1}, {1, 4, 0}}) {
      std::array<double, 3> want = centre; // LPS
      for (int a = 0; a < 3; ++a)
        want[a] += (i - 4) * voxel[0] * base.read_dir[a] + (j - 3) * voxel[1] * base.phase_dir[a] + 5.0 * k * base.slice_dir[a];
      const std::array<double, 3> got = apply(m, i, j, k);
      CHECK(got[0] == Approx(-want[0]).margin(1e-3)); // RAS: x and y negated
      CHECK(got[1] == Approx(-want[1]).margin(1e-3));
      CHECK(got[2] == Approx(want[2]).margin(1e-3));
    }
}

TEST_CASE("nifti: without geometry the identity; geometries one affine cannot hold are refused", "[nifti]") {
  test::TempDir dir("nifti");
  const auto images = two_images(); // 6 x 5 x 4
  write_nifti(dir / "i.nii", images, {1.5, 2.0, 3.0});
  const NiftiVolume v = read_nifti(dir / "i.nii");
  const std::array<std::array<double, 4>, 3> identity{{{1.5, 0, 0, -4.5}, {0, 2.0, 0, -4.0}, {0, 0, 3.0, -6.0}}};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) CHECK((v.qform[r][c] == Approx(identity[r][c]).margin(1e-6) && v.sform[r][c] == Approx(identity[r][c]).margin(1e-6)));
  const ScannerGeometry a = oblique({0, 0, 0});
  ScannerGeometry skew = a, rotated = a, beside = a;
  skew.phase_dir = a.read_dir; // not orthogonal
  rotated.read_dir = {a.phase_dir[0], a.phase_dir[1], a.phase_dir[2]}, rotated.phase_dir = a.read_dir;
  beside.position = {a.read_dir[0] * 3, a.read_dir[1] * 3, a.read_dir[2] * 3}; // in-plane offset
  CHECK_THROWS_AS(write_nifti(dir / "x.nii", images, {1, 1, 1}, NiftiValues::Magnitude, {a}), InvalidArgument);
  CHECK_THROWS_AS(write_nifti(dir / "x.nii", images, {1, 1, 1}, NiftiValues::Magnitude, {skew, skew}), InvalidArgument);
  CHECK_THROWS_AS(write_nifti(dir / "x.nii", images, {1, 1, 1}, NiftiValues::Magnitude, {a, rotated}), InvalidArgument);
  CHECK_THROWS_AS(write_nifti(dir / "x.nii", images, {1, 1, 1}, NiftiValues::Magnitude, {a, beside}), InvalidArgument);
  ScannerGeometry above = a; // 3D volumes at two positions: not stacked
  above.position = {a.slice_dir[0] * 10, a.slice_dir[1] * 10, a.slice_dir[2] * 10};
  CHECK_THROWS_AS(write_nifti(dir / "x.nii", images, {1, 1, 1}, NiftiValues::Magnitude, {a, above}), InvalidArgument);
  CHECK(std::filesystem::directory_iterator(dir.path())->path().filename() == "i.nii"); // nothing else written
}

namespace {

// A copy of `from` with `bytes` written at `offset` (header fields of a valid file).
std::filesystem::path patched(const std::filesystem::path &from, const std::filesystem::path &to, std::size_t offset,
                              const std::vector<char> &bytes) {
  std::filesystem::copy_file(from, to);
  std::fstream f(to, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return to;
}

} // namespace

TEST_CASE("nifti: read_nifti refuses a header the file does not back (fuzzing)", "[nifti]") {
  test::TempDir dir("nifti");
  const std::filesystem::path good = dir / "good.nii";
  write_nifti(good, {test::random_image(Grid(4, 4, 2), 1)}, {1, 1, 1});
  // dim[1..4] = 32767 (NIfTI-1 header offset 42): 2^47 bytes asked of a 480-byte file, which
  // libnifti allocated before reading.
  const std::vector<char> huge{'\xff', '\x7f', '\xff', '\x7f', '\xff', '\x7f', '\xff', '\x7f'};
  CHECK_THROWS_WITH(read_nifti(patched(good, dir / "huge.nii", 42, huge)),
                    Catch::Contains("dim = 32767 x 32767 x 32767 of datatype 16 needs"));
  std::filesystem::copy_file(good, dir / "short.nii");
  std::filesystem::resize_file(dir / "short.nii", 400);
  CHECK_THROWS_WITH(read_nifti(dir / "short.nii"), Catch::Contains("needs 128 bytes"));
}

TEST_CASE("nifti: displacement fields along i, j, k in voxels and mm, and rotated into RAS mm", "[nifti]") {
  test::TempDir dir("nifti");
  const Grid g(4, 3, 2);
  std::vector<DisplacementField> fields(2, DisplacementField(g));
  for (std::size_t f = 0; f < fields.size(); ++f) // field f: (1, 2, 3) voxels times f + 1, varying per voxel
    for (std::size_t i = 0; i < static_cast<std::size_t>(g.voxels()); ++i) {
      const float s = static_cast<float>(f + 1) + 0.01f * static_cast<float>(i);
      fields[f].u[i] = s, fields[f].v[i] = 2 * s, fields[f].w[i] = 3 * s;
    }
  // Voxel axes: i along A (2 mm), j along -R (3 mm), k along S (4 mm).
  const std::array<double, 3> voxel{2, 3, 4};
  const NiftiAffine affine{{{0, -3, 0, 10}, {2, 0, 0, -20}, {0, 0, 4, 5}}};
  const std::array<std::array<double, 3>, 3> ras{{{0, -3, 0}, {2, 0, 0}, {0, 0, 4}}}; // component c = ras[c] . (u, v, w)
  const std::array<std::array<double, 3>, 3> ijk_mm{{{2, 0, 0}, {0, 3, 0}, {0, 0, 4}}};
  const std::array<std::array<double, 3>, 3> voxels{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};
  for (const auto &[units, name, m] : {std::tuple{DisplacementUnits::RasMillimetres, "disp mm RAS", ras},
                                       std::tuple{DisplacementUnits::Millimetres, "disp mm ijk", ijk_mm},
                                       std::tuple{DisplacementUnits::Voxels, "disp voxels ijk", voxels}}) {
    INFO(name);
    write_nifti_displacements(dir / "w.nii", fields, voxel, units, affine);
    const Nim nim(nifti_image_read((dir / "w.nii").c_str(), 1));
    REQUIRE(nim);
    CHECK(std::string(nim->intent_name) == name);
    const auto *w = static_cast<const float *>(nim->data);
    const auto n = static_cast<std::size_t>(g.voxels());
    for (std::size_t f = 0; f < fields.size(); ++f)
      for (std::size_t i = 0; i < n; ++i) {
        const double d[3] = {fields[f].u[i], fields[f].v[i], fields[f].w[i]};
        for (std::size_t c = 0; c < 3; ++c)
          CHECK(w[(c * fields.size() + f) * n + i] == Approx(m[c][0] * d[0] + m[c][1] * d[1] + m[c][2] * d[2]));
      }
  }
}

namespace {

std::vector<char> float_bytes(float v) {
  std::vector<char> b(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}

} // namespace

TEST_CASE("nifti: a .nii vox_offset below 352 reads from byte 352, as the standard says; no position is refused",
          "[nifti]") {
  test::TempDir dir("nifti");
  const Image image = test::random_image(Grid(4, 4, 2), 3);
  const std::filesystem::path good = dir / "good.nii";
  write_nifti(good, {image}, {1, 1, 1});
  const NiftiVolume expected = read_nifti(good);
  // vox_offset is the float at header offset 108. libnifti alone reads 0 as 348: the 4 extension
  // bytes became the first voxel and every voxel moved by one.
  for (const float low : {0.0f, 16.0f, 348.0f, -16.0f}) {
    const std::string name = "low" + std::to_string(static_cast<int>(low)) + ".nii";
    const NiftiVolume v = read_nifti(patched(good, dir / name, 108, float_bytes(low)));
    CHECK(v.data == expected.data);
  }
  CHECK_THROWS_WITH(read_nifti(patched(good, dir / "nan.nii", 108, float_bytes(std::nanf("")))),
                    test::contains("nan.nii: vox_offset = nan: not a position in the file"));
  CHECK_THROWS_AS(read_nifti(patched(good, dir / "inf.nii", 108, float_bytes(-INFINITY))), IoError);
  CHECK_THROWS_WITH(read_nifti(patched(good, dir / "far.nii", 108, float_bytes(1e30f))),
                    test::contains("vox_offset = 1e+30: past the end of any file"));
}
