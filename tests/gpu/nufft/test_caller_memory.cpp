// NufftOperator and FourierOperator on the caller's device memory (forward_device and
// adjoint_device: the path of the Python package's CUDA arrays): the same values as the host
// forms, and the pointer rules (host memory, null, the CPU backend).
#include <cstring>
#include <vector>

#include "catch.hpp"
#include "gpu/sampled_reference.hpp"
#include "recon/device_image.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/nufft.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

// n complex floats of device memory (a DeviceImage on an n x 1 grid), freed at scope exit.
class DeviceArray {
public:
  explicit DeviceArray(std::size_t n) : image_(Grid(static_cast<std::int64_t>(n), 1)) {}
  cfloat *get() { return image_.data(); }
  void upload(const cfloat *host) { image_.upload(host); }
  std::vector<cfloat> download() const {
    std::vector<cfloat> v(image_.size());
    image_.download(v.data());
    return v;
  }

private:
  cuda::DeviceImage image_;
};

bool bitwise_equal(const std::vector<cfloat> &a, const cfloat *b) {
  return std::memcmp(a.data(), b, a.size() * sizeof(cfloat)) == 0;
}

// Runs the device forms of `op` on device copies of x and y and compares with the host forms:
// the same plan and kernels on the same values, so the same bits where the kernels are
// deterministic (the NUFFT's forward gather and Gridding::Auto's fixed-point or gather adjoint).
template <class Op> void check_device_forms_equal_host_forms(const Op &op, const Grid &g, std::uint64_t seed) {
  const Image x = test::random_image(g, seed);
  const std::vector<cfloat> y = test::random_complex(op.trajectory().size(), seed + 1);
  std::vector<cfloat> fx(y.size());
  Image fhy(g);
  op.forward(x, fx);
  op.adjoint(y, fhy);
  DeviceArray d_image(static_cast<std::size_t>(g.voxels())), d_samples(y.size());
  d_image.upload(x.data());
  op.forward_device(d_image.get(), d_samples.get());
  CHECK(bitwise_equal(d_samples.download(), fx.data()));
  d_samples.upload(y.data());
  op.adjoint_device(d_samples.get(), d_image.get());
  CHECK(bitwise_equal(d_image.download(), fhy.data()));
}

} // namespace

TEST_CASE("caller memory: NufftOperator's device forms equal its host forms bitwise, 2D and 3D",
          "[gpu][gridding][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  for (const Grid g : {Grid(48, 40), Grid(16, 12, 10)}) {
    NufftOptions o;
    o.backend = Backend::Cuda;
    const NufftOperator op(gpu_test::random_trajectory(g, 3000, seed), g, o);
    check_device_forms_equal_host_forms(op, g, seed + 2);
  }
}

TEST_CASE("caller memory: FourierOperator's device forms equal its host forms bitwise", "[gpu][exact][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  const Grid g(24, 20);
  OperatorOptions o;
  o.backend = Backend::Cuda;
  o.policy = KernelPolicy::Gather; // a deterministic policy: one thread sums each output
  const FourierOperator op(gpu_test::random_trajectory(g, 2000, seed), g, o);
  check_device_forms_equal_host_forms(op, g, seed + 2);
}

// The double forms run SeparableGemm's ZGEMM on the device and the direct sums on the CPU: both
// double, differing by rounding over N terms (~1e-15); 1e-11 still catches a float step (1e-7).
TEST_CASE("caller memory: FourierOperator's complex double forms on the device equal the CPU's", "[gpu][exact][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  const Grid g(20, 18);
  const Trajectory t = gpu_test::random_trajectory(g, 700, seed);
  OperatorOptions cuda;
  cuda.backend = Backend::Cuda;
  const FourierOperator gpu(t, g, cuda), cpu(t, g);
  std::vector<cdouble> x(static_cast<std::size_t>(g.voxels())), y(t.size());
  const std::vector<cfloat> a = test::random_complex(x.size() + y.size(), seed + 1);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = cdouble(a[i]) * (1 + 1e-9);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = cdouble(a[x.size() + i]) * (1 + 1e-9);
  std::vector<cdouble> fx_gpu(y.size()), fx_cpu(y.size()), fhy_gpu(x.size()), fhy_cpu(x.size());
  gpu.forward(x, fx_gpu);
  cpu.forward(x, fx_cpu);
  gpu.adjoint(y, fhy_gpu);
  cpu.adjoint(y, fhy_cpu);
  const auto max_relative = [](const std::vector<cdouble> &p, const std::vector<cdouble> &q) {
    double d = 0, s = 0;
    for (std::size_t i = 0; i < p.size(); ++i) d = std::max(d, std::abs(p[i] - q[i])), s = std::max(s, std::abs(q[i]));
    return d / s;
  };
  CHECK(max_relative(fx_gpu, fx_cpu) < 1e-11);
  CHECK(max_relative(fhy_gpu, fhy_cpu) < 1e-11);
}

TEST_CASE("caller memory: host memory, null and the CPU backend are refused naming the argument",
          "[gpu][gridding][small]") {
  const std::uint64_t seed = gpu_test::fresh_seed();
  INFO("seed " << seed);
  const Grid g(32, 32);
  const Trajectory t = gpu_test::random_trajectory(g, 1000, seed);
  NufftOptions o;
  o.backend = Backend::Cuda;
  const NufftOperator op(t, g, o);
  DeviceArray d_image(static_cast<std::size_t>(g.voxels())), d_samples(t.size());
  std::vector<cfloat> host(t.size());
  CHECK_THROWS_WITH(op.forward_device(d_image.get(), host.data()), test::contains("samples") && test::contains("host memory"));
  CHECK_THROWS_WITH(op.adjoint_device(host.data(), d_image.get()), test::contains("samples") && test::contains("host memory"));
  CHECK_THROWS_WITH(op.forward_device(nullptr, d_samples.get()), test::contains("image") && test::contains("null"));
  CHECK_THROWS_AS(NufftOperator(t, g).forward_device(d_image.get(), d_samples.get()), Unsupported);
}
