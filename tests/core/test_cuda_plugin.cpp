// The CUDA backend is a plugin loaded at run time (lib/cuda_plugin.cpp): what libmri does when
// it is missing, broken, of another build, or present without a device. These run on every
// machine; on the device machine the GPU branch asserts the opposite.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "mri/mri.hpp"
#include "mri_backend/cuda_backend.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

std::filesystem::path temp_file(const char *name, const char *content) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << content;
  return p;
}

KSpaceData small_problem(const Grid &grid) {
  Trajectory t = traj::spiral(grid, 4, 300);
  auto samples = Phantom::shepp_logan_2d().kspace(t, grid);
  return KSpaceData(std::move(t), std::move(samples));
}

// A library built with the tests, at its build path or, where the build tree moved (the device
// machine's staged copy), in $MRI_TEST_PLUGIN_DIR.
std::string built_library(const char *built_path) {
  const char *dir = std::getenv("MRI_TEST_PLUGIN_DIR");
  if (!dir) return built_path;
  return (std::filesystem::path(dir) / std::filesystem::path(built_path).filename()).string();
}

} // namespace

TEST_CASE("plugin: files that are not this build's CUDA plugin are refused with the reason", "[plugin]") {
  SECTION("missing file: the dlerror") {
    const detail::CudaPlugin p = detail::load_cuda_plugin("/nonexistent/libmri_cuda.so");
    CHECK(p.backend == nullptr);
    CHECK_THAT(p.reason, test::contains("cannot load the CUDA plugin"));
    CHECK_THAT(p.reason, test::contains("No such file"));
  }
  SECTION("a file that is no library") {
    const auto f = temp_file("mri_not_a_plugin.so", "not an ELF file");
    const detail::CudaPlugin p = detail::load_cuda_plugin(f.string());
    CHECK(p.backend == nullptr);
    CHECK_THAT(p.reason, test::contains("cannot load the CUDA plugin"));
    std::filesystem::remove(f);
  }
  SECTION("a library without the plugin's entry points") {
    const detail::CudaPlugin p = detail::load_cuda_plugin("libm.so.6");
    CHECK(p.backend == nullptr);
    CHECK_THAT(p.reason, test::contains("is not an mri CUDA plugin"));
  }
  SECTION("a plugin from another build of mri") {
    const detail::CudaPlugin p = detail::load_cuda_plugin(built_library(MRI_TEST_FAKE_PLUGIN));
    CHECK(p.backend == nullptr);
    CHECK_THAT(p.reason, test::contains("is from another build of mri"));
    CHECK_THAT(p.reason, test::contains("0.0.0-another-build"));
  }
}

#ifdef MRI_TEST_CUDA_PLUGIN
TEST_CASE("plugin: this build's plugin loads and reports whether a device is usable", "[plugin]") {
  const detail::CudaPlugin p = detail::load_cuda_plugin(built_library(MRI_TEST_CUDA_PLUGIN));
  INFO(p.reason);
  REQUIRE(p.backend != nullptr);
  CHECK(p.reason.empty());
  CHECK(p.backend->device_present() == cuda_available());
}
#endif

TEST_CASE("plugin: backend = cuda without a usable GPU throws Unsupported naming why; auto runs on the CPU and says why",
          "[plugin][bad-input]") {
  const Grid grid(32, 32);
  const KSpaceData data = small_problem(grid);
  ReconOptions o;
  o.solver.iterations = 3;
  if (cuda_available()) {
    CHECK(cuda_unavailable_reason().empty());
    o.backend = Backend::Auto;
    const ReconResult r = reconstruct(data, grid, o);
    CHECK(r.report.backend == Backend::Cuda);
    CHECK(r.report.backend_note.empty());
    return;
  }
  const std::string why = cuda_unavailable_reason();
  INFO(why);
  REQUIRE_FALSE(why.empty());
  const OperatorOptions cuda_op{Backend::Cuda, Precision::Float32, KernelPolicy::Auto};
  CHECK_THROWS_AS(FourierOperator(data.trajectory(), grid, cuda_op), Unsupported);
  CHECK_THROWS_WITH(FourierOperator(data.trajectory(), grid, cuda_op), test::contains(why));
  CHECK_THROWS_AS(QOperator(data.trajectory(), {}, grid, cuda_op), Unsupported);
  CHECK_THROWS_WITH(QOperator(data.trajectory(), {}, grid, cuda_op), test::contains(why));
  NufftOptions n;
  n.backend = Backend::Cuda;
  CHECK_THROWS_AS(NufftOperator(data.trajectory(), grid, n), Unsupported);
  CHECK_THROWS_WITH(NufftOperator(data.trajectory(), grid, n), test::contains(why));
  o.backend = Backend::Cuda;
  CHECK_THROWS_AS(reconstruct(data, grid, o), Unsupported);
  CHECK_THROWS_WITH(reconstruct(data, grid, o), test::contains(why));

  o.backend = Backend::Auto;
  const ReconResult r = reconstruct(data, grid, o);
  CHECK(r.report.backend == Backend::Cpu);
  CHECK_THAT(r.report.backend_note, test::contains("auto: cpu"));
  CHECK_THAT(r.report.backend_note, test::contains(why));
  o.backend = Backend::Cpu;
  const ReconResult cpu = reconstruct(data, grid, o);
  CHECK(test::relative_error(r.image, cpu.image) == 0.0); // the same CPU path, every voxel
  CHECK(cpu.report.backend_note.empty());
}
