// BART .cfl/.hdr reading and writing, and the array <-> SDK conversions.
#include "catch.hpp"
#include "mri/bart.hpp"
#include "mri/error.hpp"
#include "test_support.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <unistd.h>

using namespace mri;
namespace fs = std::filesystem;

namespace {


std::string read_text(const fs::path &p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const fs::path &p, const std::string &s) {
  std::ofstream out(p, std::ios::trunc);
  out << s;
}

fs::path ext(const fs::path &base, const char *e) {
  fs::path p = base;
  p += e;
  return p;
}

bool bart_on_path() { return std::system("command -v bart > /dev/null 2>&1") == 0; }

std::string quoted(const fs::path &p) { return "'" + p.string() + "'"; }

} // namespace

TEST_CASE("cfl: round trip of random data with odd dims", "[cfl]") {
  test::TempDir dir("cfl");
  const std::vector<std::vector<std::int64_t>> shapes = {
      {5, 3, 7}, {1}, {7, 1, 1, 3}, {3, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}};
  std::uint64_t seed = 11;
  for (const auto &dims : shapes) {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    const auto data = test::random_complex(static_cast<std::size_t>(n), seed++);
    const fs::path base = dir / "a";
    bart::write_cfl(base, dims, data);
    CHECK(fs::file_size(ext(base, ".cfl")) == static_cast<std::uintmax_t>(n) * 8);
    const auto back = bart::read_cfl(base);
    // BART writes (and we write) 16 dims, padded with 1s.
    REQUIRE(back.dims.size() == 16);
    for (std::size_t i = 0; i < 16; ++i) CHECK(back.dims[i] == (i < dims.size() ? dims[i] : 1));
    REQUIRE(back.data.size() == data.size());
    CHECK(back.data == data); // bit-exact
  }
}

TEST_CASE("cfl: header text and memory order are BART's", "[cfl]") {
  test::TempDir dir("cfl");
  const fs::path base = dir / "h";
  // Element (i, j) of a 3 x 2 array lives at i + 3 j; the file is little-endian float pairs.
  std::vector<cfloat> data(6);
  for (int j = 0; j < 2; ++j)
    for (int i = 0; i < 3; ++i) data[static_cast<std::size_t>(i + 3 * j)] = cfloat(float(i), float(10 * j));
  bart::write_cfl(base, {3, 2}, data);
  CHECK(read_text(ext(base, ".hdr")) == "# Dimensions\n3 2 1 1 1 1 1 1 1 1 1 1 1 1 1 1 \n");
  std::ifstream in(ext(base, ".cfl"), std::ios::binary);
  unsigned char bytes[48];
  in.read(reinterpret_cast<char *>(bytes), 48);
  REQUIRE(in.gcount() == 48);
  // element 4 = (1, 10): real 1.0f = 0x3f800000, imag 10.0f = 0x41200000, little-endian.
  const unsigned char expect[8] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0x41};
  for (int b = 0; b < 8; ++b) CHECK(bytes[32 + b] == expect[b]);
}

TEST_CASE("cfl: reads headers with BART's extra sections and no trailing space", "[cfl]") {
  test::TempDir dir("cfl");
  const fs::path base = dir / "x";
  write_text(ext(base, ".hdr"), "# Dimensions\n2 3\n# Command\ntraj -x 2 -y 3 x \n# Files\n >x\n"
                                "# Creator\nBART v0.8.00\n");
  const auto data = test::random_complex(6, 3);
  {
    std::ofstream out(ext(base, ".cfl"), std::ios::binary);
    out.write(reinterpret_cast<const char *>(data.data()), 48);
  }
  const auto a = bart::read_cfl(base);
  CHECK(a.dims == std::vector<std::int64_t>{2, 3});
  CHECK(a.data == data);
}

TEST_CASE("cfl: files we write are read by the real bart, and bart's by us", "[cfl]") {
  if (!bart_on_path())
    FAIL("`bart` is not on PATH: install the Debian package `bart` (0.8; CI installs it)");
  test::TempDir dir("cfl");
  const std::vector<std::int64_t> dims = {5, 3, 7};
  const auto data = test::random_complex(105, 21);
  bart::write_cfl(dir / "in", dims, data);
  // Scaling by 2 is exact in float, so the round trip through bart must be bit-exact.
  const std::string cmd = "bart scale 2 " + quoted(dir / "in") + " " + quoted(dir / "out") +
                          " > " + quoted(dir / "log") + " 2>&1";
  INFO(cmd << "\n" << read_text(dir / "log"));
  REQUIRE(std::system(cmd.c_str()) == 0);
  const auto out = bart::read_cfl(dir / "out");
  REQUIRE(out.dims.size() >= 3);
  CHECK(out.dims[0] == 5);
  CHECK(out.dims[1] == 3);
  CHECK(out.dims[2] == 7);
  REQUIRE(out.data.size() == data.size());
  for (std::size_t i = 0; i < data.size(); ++i) CHECK(out.data[i] == 2.0f * data[i]);

  // bart reads our element order: `bart slice 1 2` keeps index 2 of dim 1, which must be our
  // elements i + 5 (2 + 3 k).
  const std::string slice = "bart slice 1 2 " + quoted(dir / "in") + " " + quoted(dir / "s") +
                            " > " + quoted(dir / "log") + " 2>&1";
  INFO(slice);
  REQUIRE(std::system(slice.c_str()) == 0);
  const auto s = bart::read_cfl(dir / "s");
  REQUIRE(s.data.size() == 35);
  for (int k = 0; k < 7; ++k)
    for (int i = 0; i < 5; ++i)
      CHECK(s.data[static_cast<std::size_t>(i + 5 * k)] == data[static_cast<std::size_t>(i + 5 * (2 + 3 * k))]);
}

TEST_CASE("cfl: missing files are IoErrors naming the path", "[cfl][bad-input]") {
  test::TempDir dir("cfl");
  const fs::path base = dir / "nothing_here";
  CHECK_THROWS_AS(bart::read_cfl(base), IoError);
  CHECK_THROWS_WITH(bart::read_cfl(base), test::contains("nothing_here.hdr") && test::contains("does not exist"));
  // Header present, data missing.
  write_text(ext(base, ".hdr"), "# Dimensions\n2 2\n");
  CHECK_THROWS_WITH(bart::read_cfl(base), test::contains("nothing_here.cfl") && test::contains("does not exist"));
  // A directory where the header should be.
  fs::create_directory(dir / "d.hdr");
  CHECK_THROWS_AS(bart::read_cfl(dir / "d"), IoError);
}

TEST_CASE("cfl: truncated data is an IoError naming the path and sizes", "[cfl][bad-input]") {
  test::TempDir dir("cfl");
  const fs::path base = dir / "t";
  bart::write_cfl(base, {4, 5}, test::random_complex(20, 1));
  fs::resize_file(ext(base, ".cfl"), 20 * 8 - 3);
  CHECK_THROWS_AS(bart::read_cfl(base), IoError);
  CHECK_THROWS_WITH(bart::read_cfl(base), test::contains("t.cfl") && test::contains("truncated") &&
                                              test::contains("157") && test::contains("160"));
  fs::resize_file(ext(base, ".cfl"), 0);
  CHECK_THROWS_WITH(bart::read_cfl(base), test::contains("truncated"));
  // Extra bytes mean the header and data disagree, too.
  fs::resize_file(ext(base, ".cfl"), 20 * 8 + 8);
  CHECK_THROWS_WITH(bart::read_cfl(base), test::contains("size mismatch"));
}

TEST_CASE("cfl: malformed headers are IoErrors saying what is wrong", "[cfl][bad-input]") {
  test::TempDir dir("cfl");
  const fs::path base = dir / "m";
  bart::write_cfl(base, {2, 2}, test::random_complex(4, 2)); // a valid .cfl of 4 elements
  const auto hdr = ext(base, ".hdr");
  struct Case {
    const char *text;
    const char *message;
  };
  const Case cases[] = {
      {"# Dimensions\n2 x 1\n", "\"x\""},
      {"# Dimensions\n2 2.5\n", "\"2.5\""},
      {"# Dimensions\n2 0 1\n", "must be positive"},
      {"# Dimensions\n-4 1\n", "must be positive"},
      {"# Dimensions\n\n", "lists no dimensions"},
      {"# Dimensions\n", "nothing after"},
      {"2 2\n", "no \"# Dimensions\""},
      {"", "no \"# Dimensions\""},
      {"# Dimensions\n99999999999 99999999999 99999999999\n", "too large"},
  };
  for (const auto &c : cases) {
    write_text(hdr, c.text);
    INFO("header: " << c.text);
    CHECK_THROWS_AS(bart::read_cfl(base), IoError);
    CHECK_THROWS_WITH(bart::read_cfl(base), test::contains("m.hdr") && test::contains(c.message));
  }
}

TEST_CASE("cfl: write_cfl rejects dims that do not match the data", "[cfl][bad-input]") {
  test::TempDir dir("cfl");
  CHECK_THROWS_AS(bart::write_cfl(dir / "w", {3, 3}, std::vector<cfloat>(8)), InvalidArgument);
  CHECK_THROWS_WITH(bart::write_cfl(dir / "w", {3, 3}, std::vector<cfloat>(8)),
                    test::contains("data.size() = 8") && test::contains("9"));
  CHECK_THROWS_AS(bart::write_cfl(dir / "w", {3, 0}, std::vector<cfloat>()), InvalidArgument);
  CHECK_THROWS_AS(bart::write_cfl(dir / "w", {}, std::vector<cfloat>(1)), InvalidArgument);
  CHECK_THROWS_AS(bart::write_cfl(dir / "w", std::vector<std::int64_t>(17, 1), std::vector<cfloat>(1)),
                  InvalidArgument);
  CHECK_FALSE(fs::exists(dir / "w.hdr"));
  // An unwritable location is an IoError.
  CHECK_THROWS_AS(bart::write_cfl(dir / "no_such_dir" / "w", {1}, std::vector<cfloat>(1)), IoError);
}

TEST_CASE("cfl: trajectory conversion", "[cfl]") {
  // BART layout [3, samples, spokes]: coordinate fastest.
  bart::CflArray a{{3, 2, 2}, {}};
  for (int m = 0; m < 4; ++m) {
    a.data.push_back(cfloat(float(m), 0.0f));         // kx
    a.data.push_back(cfloat(float(m) + 0.25f, 0.0f)); // ky
    a.data.push_back(cfloat(0.0f, 0.0f));             // kz
  }
  const Trajectory t = bart::to_trajectory(a, 2);
  REQUIRE(t.size() == 4);
  CHECK(t.dims() == 2);
  CHECK(t[3].kx == 3.0f);
  CHECK(t[3].ky == 3.25f);
  CHECK(t[3].kz == 0.0f);
  const auto back = bart::from_trajectory(t);
  CHECK(back.dims == std::vector<std::int64_t>{3, 4});
  CHECK(back.data == a.data);

  bart::CflArray a3{{3, 2}, {{1, 0}, {2, 0}, {3, 0}, {-1, 0}, {-2, 0}, {-3, 0}}};
  const Trajectory t3 = bart::to_trajectory(a3, 3);
  CHECK(t3.dims() == 3);
  CHECK(t3[1].kz == -3.0f);
  CHECK(bart::from_trajectory(t3).data == a3.data);
}

TEST_CASE("cfl: trajectory conversion rejects bad arrays", "[cfl][bad-input]") {
  bart::CflArray kz{{3, 3}, {{0, 0}, {0, 0}, {0, 0}, {1, 0}, {2, 0}, {0.5f, 0}, {0, 0}, {0, 0}, {0, 0}}};
  CHECK_THROWS_AS(bart::to_trajectory(kz, 2), InvalidArgument);
  CHECK_THROWS_WITH(bart::to_trajectory(kz, 2), test::contains("sample 1") && test::contains("kz"));
  CHECK_NOTHROW(bart::to_trajectory(kz, 3));
  CHECK_THROWS_AS(bart::to_trajectory(kz, 4), InvalidArgument);
  bart::CflArray two{{2, 3}, std::vector<cfloat>(6)};
  CHECK_THROWS_WITH(bart::to_trajectory(two, 2), test::contains("traj.dims[0] = 2"));
  bart::CflArray short_data{{3, 3}, std::vector<cfloat>(8)};
  CHECK_THROWS_AS(bart::to_trajectory(short_data, 2), InvalidArgument);
  bart::CflArray complex_k{{3, 1}, {{1, 0.5f}, {0, 0}, {0, 0}}};
  CHECK_THROWS_WITH(bart::to_trajectory(complex_k, 2), test::contains("sample 0"));
}

TEST_CASE("cfl: image conversion", "[cfl]") {
  const Image img = test::random_image(Grid(5, 3, 2), 4);
  const auto a = bart::from_image(img);
  CHECK(a.dims == std::vector<std::int64_t>{5, 3, 2});
  const Image back = bart::to_image(a);
  CHECK(back.grid() == img.grid());
  CHECK(back.values() == img.values());
  // Trailing 1s (BART's 16 dims) and short dims are fine.
  bart::CflArray a16{{5, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, std::vector<cfloat>(15)};
  CHECK(bart::to_image(a16).grid() == Grid(5, 3));
  CHECK(bart::to_image(bart::CflArray{{7}, std::vector<cfloat>(7)}).grid() == Grid(7, 1));
}

TEST_CASE("cfl: image conversion rejects extra dims", "[cfl][bad-input]") {
  bart::CflArray coils{{4, 4, 1, 2}, std::vector<cfloat>(32)};
  CHECK_THROWS_AS(bart::to_image(coils), InvalidArgument);
  CHECK_THROWS_WITH(bart::to_image(coils), test::contains("a.dims[3] = 2"));
  CHECK_THROWS_AS(bart::to_image(bart::CflArray{{4, 4}, std::vector<cfloat>(15)}), InvalidArgument);
  CHECK_THROWS_AS(bart::to_image(bart::CflArray{{}, {}}), InvalidArgument);
}

TEST_CASE("cfl: nufft_scale is 1/sqrt(voxels)", "[cfl]") {
  CHECK(std::abs(bart::nufft_scale(Grid(64, 64)) - 1.0 / 64) < 1e-15);
  CHECK(std::abs(bart::nufft_scale(Grid(16, 16, 16)) - 1.0 / 64) < 1e-15);
  CHECK(std::abs(bart::nufft_scale(Grid(6, 24)) - 1.0 / 12) < 1e-15);
}
