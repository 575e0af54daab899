// .nii.gz written by gzip on every core (lib/io/gzip_parallel.cpp): valid gzip whatever the
// size, and the same bytes, once decompressed, as the .nii and as libnifti's own (serial) gzip.
#include "catch.hpp"
#include "mri/io/nifti.hpp"
#include "test_support.hpp"

#include "../../lib/io/gzip_parallel.hpp"

#include <nifti2_io.h>
#include <zlib.h>

#include <fstream>
#include <iterator>

using namespace mri;

namespace {

std::vector<unsigned char> gunzip(const std::filesystem::path &path) {
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::vector<unsigned char> out;
  unsigned char buffer[1 << 16];
  for (int n; (n = gzread(f, buffer, sizeof buffer)) > 0;) out.insert(out.end(), buffer, buffer + n);
  gzclose(f);
  return out;
}

std::vector<unsigned char> slurp(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Float-like bytes: compressible in places, not in others.
std::vector<unsigned char> sample_bytes(std::size_t n) {
  std::vector<unsigned char> v(n);
  std::uint32_t x = 12345;
  for (std::size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = static_cast<unsigned char>(i % 4096 < 2048 ? i / 7 : x >> 24);
  }
  return v;
}

} // namespace

TEST_CASE("nifti gzip: parallel gzip decompresses to its input, every size", "[nifti]") {
  test::TempDir dir("gzip");
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1} << 20, (std::size_t{1} << 20) + 1,
                              std::size_t{3500000}}) {
    const std::vector<unsigned char> data = sample_bytes(n);
    const std::vector<unsigned char> packed = detail::gzip_parallel(data, Z_DEFAULT_COMPRESSION);
    REQUIRE(packed.size() > 18);
    CHECK(packed[0] == 0x1f);
    CHECK(packed[1] == 0x8b);
    std::ofstream(dir / "x.gz", std::ios::binary).write(reinterpret_cast<const char *>(packed.data()),
                                                       static_cast<std::streamsize>(packed.size()));
    INFO(n << " bytes");
    CHECK(gunzip(dir / "x.gz") == data); // zlib checks the CRC-32 and length of the trailer
  }
}

TEST_CASE("nifti gzip: .nii.gz holds the bytes of the .nii and of libnifti's own .nii.gz", "[nifti]") {
  test::TempDir dir("gzip");
  const Grid g(64, 48, 5);
  std::vector<Image> images(3, Image(g));
  for (std::size_t t = 0; t < images.size(); ++t)
    for (std::size_t i = 0; i < images[t].size(); ++i)
      images[t][i] = cfloat(std::sin(0.01f * static_cast<float>(i * (t + 1))), static_cast<float>(t));
  write_nifti(dir / "a.nii", images, {1, 1.5, 3});
  write_nifti(dir / "a.nii.gz", images, {1, 1.5, 3});
  const std::vector<unsigned char> plain = slurp(dir / "a.nii");
  CHECK(gunzip(dir / "a.nii.gz") == plain);
  // libnifti's serial gzip of the same image: the same bytes once decompressed.
  nifti_image *nim = nifti_image_read((dir / "a.nii").c_str(), 1);
  REQUIRE(nim != nullptr);
  REQUIRE(nifti_set_filenames(nim, (dir / "serial.nii.gz").c_str(), 0, 1) == 0);
  nifti_image_write(nim);
  nifti_image_free(nim);
  CHECK(gunzip(dir / "serial.nii.gz") == plain);
  const NiftiVolume v = read_nifti(dir / "a.nii.gz"), w = read_nifti(dir / "a.nii");
  CHECK(v.dims == w.dims);
  CHECK(v.data == w.data);
  std::vector<std::string> left; // the temporaries are gone
  for (const auto &e : std::filesystem::directory_iterator(dir.path())) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"a.nii", "a.nii.gz", "serial.nii.gz"});
}
