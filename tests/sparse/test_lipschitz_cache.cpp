// The proximal solvers' L kept beside Q (mri/toeplitz_cache.hpp, ReconOptions::q_cache_dir): a
// second solve on the same trajectory, maps and weights reads it instead of running the power
// iteration and gives the first's image bit for bit; another operator (maps, l2 term, solver's
// power iterations) keys another entry; a damaged entry is ignored; the entry file's checks.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/phantom.hpp"
#include "mri/reconstruct.hpp"
#include "mri/toeplitz_cache.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// 32^2 Shepp-Logan from 16 golden-angle spokes, 2 coils with given maps (1 and 0.5i), SNR 30.
struct Problem {
  Grid grid{32, 32};
  Trajectory trajectory = traj::radial(grid, 16, 64, traj::SpokeOrder::GoldenAngle);
  std::vector<cfloat> samples;
  std::shared_ptr<const CoilSensitivities> maps;
  Problem() {
    samples = Phantom::shepp_logan_2d().kspace(trajectory, grid);
    const std::size_t m = samples.size();
    for (std::size_t i = 0; i < m; ++i) samples.push_back(samples[i] * cfloat(0.0f, 0.5f));
    add_noise(samples, 30.0, 4101);
    std::vector<cfloat> values(static_cast<std::size_t>(grid.voxels()), cfloat(1, 0));
    values.resize(2 * values.size(), cfloat(0.0f, 0.5f));
    maps = std::make_shared<const CoilSensitivities>(grid, 2, std::move(values));
  }
  KSpaceData data() const { return KSpaceData(trajectory, samples, std::vector<float>{}, 2); }
};

ReconOptions options(const Problem &p, const std::filesystem::path &cache, const char *term) {
  ReconOptions o;
  o.backend = Backend::Cpu;
  o.method = Method::Exact;
  o.solver.iterations = 8;
  o.solver.tolerance = 0;
  o.solver.terms = {parse_bart_term(term)};
  o.coils.sensitivities = p.maps;
  o.q_cache_dir = cache;
  return o;
}

bool bitwise_equal(const Image &a, const Image &b) {
  return a.values().size() == b.values().size() &&
         std::memcmp(a.values().data(), b.values().data(), a.values().size() * sizeof(cfloat)) == 0;
}

std::size_t entries(const std::filesystem::path &dir, const char *prefix) {
  std::size_t n = 0;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    n += e.path().filename().string().rfind(prefix, 0) == 0;
  return n;
}

} // namespace

TEST_CASE("lipschitz cache: the second solve reads L and repeats the first bit for bit", "[sparse][cache]") {
  const Problem p;
  test::TempDir dir("lipschitz");
  const ReconOptions o = options(p, dir.path(), "W:3:0:0.005"); // FISTA: 5 power iterations
  const ReconResult first = reconstruct(p.data(), p.grid, o);
  const ReconResult second = reconstruct(p.data(), p.grid, o);
  CHECK_FALSE(first.report.lipschitz_cached);
  CHECK(second.report.lipschitz_cached);
  CHECK(second.report.q_cache == QCacheStatus::Hit);
  CHECK(bitwise_equal(second.image, first.image));
  CHECK(second.report.objective == first.report.objective);
  CHECK(second.report.lipschitz == first.report.lipschitz);
  // TV under FISTA: the same operator and power iterations, so the wavelet solve's entry.
  const ReconResult tv = reconstruct(p.data(), p.grid, options(p, dir.path(), "T:3:0:0.005"));
  CHECK(tv.report.solver == "fista");
  CHECK(tv.report.lipschitz_cached);
  CHECK(entries(dir.path(), "lipschitz-") == 1);
  ReconOptions admm = options(p, dir.path(), "T:3:0:0.005");
  admm.solver.proximal.algorithm = ProximalAlgorithm::Admm; // 20 power iterations: its own entry
  const ReconResult a1 = reconstruct(p.data(), p.grid, admm);
  const ReconResult a2 = reconstruct(p.data(), p.grid, admm);
  CHECK_FALSE(a1.report.lipschitz_cached);
  CHECK(a2.report.lipschitz_cached);
  CHECK(bitwise_equal(a2.image, a1.image));
  CHECK(entries(dir.path(), "lipschitz-") == 2);
}

TEST_CASE("lipschitz cache: another operator keys another entry; a damaged one is ignored", "[sparse][cache]") {
  const Problem p;
  test::TempDir dir("lipschitz");
  const ReconOptions o = options(p, dir.path(), "W:3:0:0.005");
  const ReconResult first = reconstruct(p.data(), p.grid, o);
  ReconOptions l2 = o; // the l2 term is part of N
  l2.solver.lambda = 0.5;
  l2.solver.regularizer = Regularizer::Tikhonov;
  CHECK_FALSE(reconstruct(p.data(), p.grid, l2).report.lipschitz_cached);
  ReconOptions single = o; // other maps
  single.coils.sensitivities = std::make_shared<const CoilSensitivities>(
      p.grid, 2, std::vector<cfloat>(2 * static_cast<std::size_t>(p.grid.voxels()), cfloat(0.7f, 0.0f)));
  CHECK_FALSE(reconstruct(p.data(), p.grid, single).report.lipschitz_cached);
  REQUIRE(entries(dir.path(), "lipschitz-") == 3);

  // Damage every entry: each is rejected, L estimated again, the image unchanged.
  for (const auto &e : std::filesystem::directory_iterator(dir.path()))
    if (e.path().filename().string().rfind("lipschitz-", 0) == 0) {
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(40); // inside the value
      f.put('\x7f');
    }
  const ReconResult again = reconstruct(p.data(), p.grid, o);
  CHECK_FALSE(again.report.lipschitz_cached);
  CHECK(bitwise_equal(again.image, first.image));
  CHECK(reconstruct(p.data(), p.grid, o).report.lipschitz_cached); // rewritten by the previous solve
}

TEST_CASE("lipschitz cache: the entry file keeps L exactly and rejects what is not its own", "[sparse][cache]") {
  test::TempDir dir("lipschitz");
  const Grid grid(16, 16);
  const Trajectory t = traj::radial(grid, 8, 32, traj::SpokeOrder::GoldenAngle);
  const ToeplitzCacheKey q = toeplitz_cache_key(t, {}, grid, Precision::Float32);
  const std::vector<cfloat> maps(static_cast<std::size_t>(grid.voxels()), cfloat(1, 0));
  const ToeplitzCacheKey key = lipschitz_cache_key(q, maps, Regularizer::Tikhonov, 0.0, Backend::Cpu, 5);
  CHECK(lipschitz_cache_key(q, maps, Regularizer::Tikhonov, 0.0, Backend::Cuda, 5) != key);
  CHECK(lipschitz_cache_key(q, maps, Regularizer::Tikhonov, 0.0, Backend::Cpu, 20) != key);
  CHECK(lipschitz_cache_key(q, {}, Regularizer::Tikhonov, 0.0, Backend::Cpu, 5) != key);
  CHECK(lipschitz_cache_key(q, maps, Regularizer::Tikhonov, 1e-3, Backend::Cpu, 5) != key);
  const std::filesystem::path file = lipschitz_cache_file(dir.path(), key);
  const double value = 3.0517578125e-5 * 7.1; // not a round number: every bit must come back
  save_lipschitz(file, key, value);
  CHECK(load_lipschitz(file, key) == value);
  const ToeplitzCacheKey other = lipschitz_cache_key(q, maps, Regularizer::Tikhonov, 0.0, Backend::Cpu, 6);
  CHECK_THROWS_AS(load_lipschitz(file, other), IoError);
  CHECK_THROWS_AS(load_lipschitz(dir / "missing.mril", key), IoError);
  CHECK_THROWS_AS(save_lipschitz(file, key, 0.0), InvalidArgument);
  CHECK_THROWS_AS(save_lipschitz(file, key, std::nan("")), InvalidArgument);
  std::filesystem::resize_file(file, 20);
  CHECK_THROWS_AS(load_lipschitz(file, key), IoError);
}
