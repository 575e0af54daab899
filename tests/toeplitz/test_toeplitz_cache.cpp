// The Toeplitz spectrum cache (mri/toeplitz_cache.hpp) and the CPU reconstruct options around it:
// round trip, keys that change with every input, stale/corrupt files rejected with a message,
// QOperator from a spectrum, normal = Direct, a non-finite problem stopping with a status.
#include <filesystem>
#include <fstream>
#include <limits>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/metrics.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri/toeplitz.hpp"
#include "mri/toeplitz_cache.hpp"
#include "omp_threads.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

KSpaceData spiral_data(const Grid &grid, std::vector<float> weights = {}) {
  const auto phantom = Phantom::shepp_logan_2d();
  auto t = traj::spiral(grid, 8, 1024);
  auto s = phantom.kspace(t, grid);
  add_noise(s, 50.0, 3);
  if (!weights.empty()) weights.resize(t.size(), 1.0f);
  return KSpaceData(std::move(t), std::move(s), std::move(weights));
}

// Byte `offset` of a file, xor-ed with `mask`.
void flip_byte(const std::filesystem::path &file, std::streamoff offset, unsigned char mask) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c;
  f.get(c);
  c = static_cast<char>(static_cast<unsigned char>(c) ^ mask);
  f.seekp(offset);
  f.put(c);
}

} // namespace

TEST_CASE("toeplitz cache: keys change with trajectory, weights, grid and precision", "[q-cache]") {
  const Grid grid(12, 10);
  const auto t = traj::uniform_random(grid, 200, 5);
  const auto w = test::random_weights(t.size(), 6);
  const auto key = toeplitz_cache_key(t, w, grid, Precision::Float32);
  CHECK(key == toeplitz_cache_key(t, w, grid, Precision::Float32));
  CHECK(key.hex().size() == 32);
  CHECK_FALSE(key == toeplitz_cache_key(t, {}, grid, Precision::Float32));
  CHECK_FALSE(key == toeplitz_cache_key(t, w, Grid(12, 12), Precision::Float32));
  CHECK_FALSE(key == toeplitz_cache_key(t, w, grid, Precision::Float64));
  // Q by NUFFT is another entry than the exact Q, and one per tolerance.
  CHECK(key == toeplitz_cache_key(t, w, grid, Precision::Float32, 0));
  CHECK_FALSE(key == toeplitz_cache_key(t, w, grid, Precision::Float32, 1e-3));
  CHECK_FALSE(toeplitz_cache_key(t, w, grid, Precision::Float32, 1e-4) ==
              toeplitz_cache_key(t, w, grid, Precision::Float32, 1e-3));
  auto w2 = w;
  w2[117] = std::nextafter(w2[117], 3.0f); // one ulp of one weight
  CHECK_FALSE(key == toeplitz_cache_key(t, w2, grid, Precision::Float32));
  auto pts = t.points();
  pts[3].ky = std::nextafter(pts[3].ky, 0.0f); // one ulp of one coordinate
  CHECK_FALSE(key == toeplitz_cache_key(Trajectory(2, pts), w, grid, Precision::Float32));
  std::swap(pts[0], pts[1]); // order matters (samples pair with data)
  CHECK_FALSE(key == toeplitz_cache_key(Trajectory(2, pts), w, grid, Precision::Float32));
  CHECK_THROWS_AS(toeplitz_cache_key(t, std::vector<float>(3, 1.0f), grid, Precision::Float32), InvalidArgument);
}

TEST_CASE("toeplitz cache: round trip, and a QOperator from the spectrum is the same operator", "[q-cache][toeplitz]") {
  const Grid grid = GENERATE(Grid(12, 9), Grid(6, 5, 4));
  const auto t = traj::uniform_random(grid, 300, 7);
  const auto w = test::random_weights(t.size(), 8);
  const QOperator q(t, w, grid, {Backend::Cpu, Precision::Float64});
  const std::vector<float> spectrum = q.spectrum();
  REQUIRE(spectrum.size() == static_cast<std::size_t>(grid.doubled().voxels()));

  test::TempDir dir("qcache");
  const auto key = toeplitz_cache_key(t, w, grid, Precision::Float64);
  const auto file = toeplitz_cache_file(dir.path() / "sub", key);
  save_toeplitz_spectrum(file, key, grid, spectrum);
  const std::vector<float> loaded = load_toeplitz_spectrum(file, key, grid);
  CHECK(loaded == spectrum); // bit for bit

  const QOperator from = QOperator::from_spectrum(grid, loaded);
  CHECK(from.q().size() == 0);
  const Image x = test::random_image(grid, 9);
  CHECK(mri::forward(from, x).values() == mri::forward(q, x).values()); // the same kernel: the same bits
  CHECK_THROWS_AS(QOperator::from_spectrum(grid, std::vector<float>(5)), InvalidArgument);
}

TEST_CASE("toeplitz cache: stale, mismatched and corrupt files are rejected with a message", "[q-cache][bad-input]") {
  const Grid grid(10, 8);
  const auto t = traj::uniform_random(grid, 150, 1);
  const auto key = toeplitz_cache_key(t, {}, grid, Precision::Float32);
  const std::vector<float> spectrum = QOperator(t, {}, grid).spectrum();
  test::TempDir dir("qcache_bad");
  const auto file = toeplitz_cache_file(dir.path(), key);

  CHECK_THROWS_WITH(load_toeplitz_spectrum(file, key, grid), test::contains("not found"));
  save_toeplitz_spectrum(file, key, grid, spectrum);

  // Another trajectory's key on the same file (a stale or renamed entry).
  const auto other = toeplitz_cache_key(traj::uniform_random(grid, 150, 2), {}, grid, Precision::Float32);
  CHECK_THROWS_WITH(load_toeplitz_spectrum(file, other, grid), test::contains("another trajectory"));
  CHECK_THROWS_WITH(load_toeplitz_spectrum(file, key, Grid(10, 10)), test::contains("grid 10x8x1"));

  const auto header = static_cast<std::streamoff>(std::filesystem::file_size(file) - spectrum.size() * sizeof(float));
  std::filesystem::copy_file(file, dir / "good");
  flip_byte(file, header + 40, 0x01); // one payload bit
  CHECK_THROWS_WITH(load_toeplitz_spectrum(file, key, grid), test::contains("checksum"));
  std::filesystem::copy_file(dir / "good", file, std::filesystem::copy_options::overwrite_existing);
  flip_byte(file, 0, 0xff); // the magic
  CHECK_THROWS_WITH(load_toeplitz_spectrum(file, key, grid), test::contains("bad magic"));
  std::filesystem::copy_file(dir / "good", file, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(file, std::filesystem::file_size(file) - 4);
  CHECK_THROWS_WITH(load_toeplitz_spectrum(file, key, grid), test::contains("truncated"));
  std::filesystem::resize_file(file, 10);
  CHECK_THROWS_WITH(load_toeplitz_spectrum(file, key, grid), test::contains("truncated header"));

  CHECK_THROWS_AS(save_toeplitz_spectrum(file, key, grid, std::vector<float>(7)), InvalidArgument);
  auto bad = spectrum;
  bad[3] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(save_toeplitz_spectrum(file, key, grid, bad), InvalidArgument);
}

TEST_CASE("reconstruct (cpu): the Q cache misses, then hits with the same image; a bad entry is replaced",
          "[q-cache][reconstruct]") {
  const test::OmpThreads two(2); // bitwise run to run (docs/reliability.md)
  const Grid grid(24, 24);
  const KSpaceData data = spiral_data(grid, test::random_weights(8 * 1024, 4));
  test::TempDir dir("qcache_recon");
  ReconOptions o;
  o.solver.iterations = 6;
  o.backend = Backend::Cpu;
  o.method = Method::Exact; // then Nufft, below: one entry each
  o.q_cache_dir = dir.path();
  const ReconResult first = reconstruct(data, grid, o);
  CHECK(first.report.q_cache == QCacheStatus::Miss);
  CHECK(first.report.q_cache_message.empty());
  REQUIRE(std::filesystem::exists(first.report.q_cache_file));
  const ReconResult second = reconstruct(data, grid, o);
  CHECK(second.report.q_cache == QCacheStatus::Hit);
  CHECK(second.report.q_cache_file == first.report.q_cache_file);
  // Q computed or loaded: the same kernel bits (QOperator keeps the real part in both), so the
  // same image at a fixed team of at most 2 threads (bitwise run to run: docs/reliability.md).
  CHECK(second.image.values() == first.image.values());

  // Another trajectory never hits this entry.
  const KSpaceData other = spiral_data(grid);
  const ReconResult third = reconstruct(other, grid, o);
  CHECK(third.report.q_cache == QCacheStatus::Miss);
  CHECK(third.report.q_cache_file != first.report.q_cache_file);

  // A corrupt entry is rejected, recomputed and replaced.
  flip_byte(first.report.q_cache_file, 200, 0x10);
  const ReconResult fourth = reconstruct(data, grid, o);
  CHECK(fourth.report.q_cache == QCacheStatus::Rejected);
  CHECK_THAT(fourth.report.q_cache_message, test::contains("checksum"));
  CHECK(test::relative_error(fourth.image, first.image) < 1e-6);
  CHECK(reconstruct(data, grid, o).report.q_cache == QCacheStatus::Hit);

  // method = Nufft never takes the exact entry: its own miss, then its own hit.
  o.method = Method::Nufft;
  const ReconResult nufft_first = reconstruct(data, grid, o);
  CHECK(nufft_first.report.q_cache == QCacheStatus::Miss);
  CHECK(nufft_first.report.q_cache_file != first.report.q_cache_file);
  const ReconResult nufft_second = reconstruct(data, grid, o);
  CHECK(nufft_second.report.q_cache == QCacheStatus::Hit);
  CHECK(nufft_second.image.values() == nufft_first.image.values());
}

TEST_CASE("reconstruct (cpu): normal = direct agrees with toeplitz", "[reconstruct]") {
  const Grid grid(20, 20);
  const KSpaceData data = spiral_data(grid, test::random_weights(8 * 1024, 2));
  ReconOptions o;
  o.solver.iterations = 5;
  o.backend = Backend::Cpu;
  o.solver.lambda = 0.5;
  o.solver.regularizer = Regularizer::FiniteDifference;
  const ReconResult toeplitz = reconstruct(data, grid, o);
  o.solver.normal = Normal::Direct;
  const ReconResult direct = reconstruct(data, grid, o);
  CHECK(direct.report.normal == Normal::Direct);
  CHECK(direct.report.q_seconds == 0);
  REQUIRE(direct.report.residuals.size() == toeplitz.report.residuals.size());
  CHECK(test::relative_error(direct.image, toeplitz.image) < 1e-4);
}

TEST_CASE("reconstruct (cpu): an overflowing problem stops with status non-finite", "[reconstruct][bad-input]") {
  const Grid grid(16, 16);
  const KSpaceData base = spiral_data(grid);
  // Finite data and weights (each w D finite, so the input checks pass) whose sums overflow
  // float: Q(0) = sum w = 8192 * 1e36 is Inf, and CG meets NaN/Inf.
  std::vector<cfloat> samples = base.samples();
  for (auto &s : samples) s *= 1e-3f;
  const KSpaceData data(base.trajectory(), samples, std::vector<float>(samples.size(), 1e36f));
  ReconOptions o;
  o.solver.iterations = 3;
  o.backend = Backend::Cpu;
  o.method = Method::Exact; // the exact Q keeps the Inf for CG to meet (the NUFFT's Q refuses it)
  const ReconResult r = reconstruct(data, grid, o);
  CHECK(r.report.status == CgStatus::NonFinite);
  CHECK(std::string(to_string(r.report.status)) == "non-finite");
}
