// NIfTI output read back by libnifti itself (nifti_image_read): shape, voxel sizes, values.
#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/io/nifti.hpp"
#include "test_support.hpp"

#include <nifti2_io.h>

#include <fstream>
#include <memory>

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
