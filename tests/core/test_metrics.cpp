#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/metrics.hpp"
#include "mri/png.hpp"
#include "test_support.hpp"

#include <filesystem>
#include <fstream>

using namespace mri;

TEST_CASE("metrics: PSNR = 20 log10(peak |I0| / RMS error) and relative L2 = ||I - I0|| / ||I0||", "[metrics]") {
  const Grid grid(4, 4);
  Image ref(grid), img(grid);
  ref[0] = 2.0f; // max |I0| = 2
  img = ref;
  img[5] = cfloat(0, 0.5f); // MSE = 0.25 / 16
  CHECK(std::abs(psnr(img, ref) - 20 * std::log10(2.0 / std::sqrt(0.25 / 16))) < 1e-9);
  CHECK(std::abs(relative_l2(img, ref) - 0.25) < 1e-9);
  CHECK(std::isinf(psnr(ref, ref)));
  CHECK_THROWS_AS(psnr(Image(Grid(4, 5)), ref), InvalidArgument);
}

TEST_CASE("metrics: best_scale undoes a complex scale", "[metrics]") {
  const Image ref = test::random_image(Grid(9, 7), 3);
  Image scaled = ref;
  for (auto &v : scaled.values()) v *= cfloat(0.5f, 2.0f);
  const cfloat s = best_scale(scaled, ref);
  CHECK(std::abs(s * cfloat(0.5f, 2.0f) - cfloat(1, 0)) < 1e-5f);
}

TEST_CASE("png: montage is written with the expected size", "[png]") {
  const auto path = std::filesystem::temp_directory_path() / "mri_test_montage.png";
  const Image a = test::random_image(Grid(10, 6), 1);
  const Image b = test::random_image(Grid(5, 8, 3), 2); // central slice of a volume
  write_png_montage(path, {{&a, 0.0f}, {&b, 2.0f}});
  std::ifstream f(path, std::ios::binary);
  unsigned char h[24];
  f.read(reinterpret_cast<char *>(h), 24);
  REQUIRE(f.gcount() == 24);
  CHECK(h[1] == 'P');
  const auto be32 = [&](int o) { return (h[o] << 24) | (h[o + 1] << 16) | (h[o + 2] << 8) | h[o + 3]; };
  CHECK(be32(16) == 10 + 4 + 5); // width: panels + gap
  CHECK(be32(20) == 8);          // height: tallest panel
  std::filesystem::remove(path);
  CHECK_THROWS_AS(write_png_montage("/nonexistent-dir/x.png", {{&a, 1.0f}}), IoError);
  CHECK_THROWS_AS(write_png_montage(path, {}), InvalidArgument);
}
