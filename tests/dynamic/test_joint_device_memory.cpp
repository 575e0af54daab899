// The joint solves' device memory estimate (mri/detail/joint_device_memory.hpp) against hand
// counts of small cases, and the refusal with an injected available figure (the device's free
// memory and gpu.memory_limit are its inputs): CPU only, no device needed.
#include "catch.hpp"

#include <string>

#include "mri/detail/joint_device_memory.hpp"
#include "mri/error.hpp"
#include "mri/sparse.hpp"
#include "mri_backend/low_rank_device_bytes.hpp"
#include "test_support.hpp"

using namespace mri;
using namespace mri::detail;

namespace {
constexpr std::size_t kMargin = std::size_t{128} << 20; // total()'s 128 MiB beside its 5%
}

TEST_CASE("MCIR's device bytes: a hand count of a 2D case", "[dynamic][memory]") {
  // 8x8 (n = 64; doubled 16x16, l = 256), 3 states of 100, 120, 90 samples, 2 coils, exact sums,
  // an l2 regulariser, 2 moving states with Jacobian weighting.
  JointDeviceSizes s;
  s.grid = Grid(8, 8);
  s.samples = {100, 120, 90};
  s.coils = 2;
  s.regularizer = true;
  const JointDeviceBytes b = mcir_device_bytes(s, 2, true);
  CHECK(b.maps == 2 * 64 * 8 + 2 * 64 * 8);            // the maps, and the regulariser's copy
  CHECK(b.operators == 3 * (256 * 32 + 2 * 2 * 256 * 8)); // Toeplitz 32 B/l-voxel; 2D: both coils batched
  CHECK(b.warps == 2 * (12 * 64 + 4 * 64 + 4 * 65 + 4 * 4 * 64)); // field, Jacobian, starts, 4 corners of lists
  CHECK(b.images == (3 + 2 + 10) * 64 * 8);             // every b_s, b and a warped b_s, 2 x 5 scratch
  CHECK(b.solver == 4 * 64 * 8);                        // x, r, p, Ap
  // the largest phase: state 1's Q by the exact sum, its points and weights (16 B each) and the
  // doubled grid (l complex values), above its F^H D (2 coils' samples and the weights: 20 B each)
  CHECK(b.transient == 120 * 16 + 256 * 8);
  const std::size_t sum = 2048 + 49152 + 4616 + 7680 + 2048 + 3968;
  CHECK(b.resident() + b.transient == sum);
  CHECK(b.total() == sum + sum / 20 + kMargin);
  // A state without motion takes no warp; without the regulariser the maps are held once.
  s.regularizer = false;
  const JointDeviceBytes still = mcir_device_bytes(s, 0, false);
  CHECK(still.warps == 0);
  CHECK(still.maps == 2 * 64 * 8);
}

TEST_CASE("The frames' device bytes: a hand count of a 3D case, and the solver's vectors", "[dynamic][memory]") {
  // 8x8x4 (n = 256; doubled 16x16x8, l = 2048: below the pruned transform's 2^21, so the 3 coils
  // are batched), 4 frames of 200, 200, 200, 210 samples, the NUFFT, CG.
  JointDeviceSizes s;
  s.grid = Grid(8, 8, 4);
  s.samples = {200, 200, 200, 210};
  s.coils = 3;
  s.nufft = true;
  SolverOptions cg;
  const JointDeviceBytes b = frames_device_bytes(s, cg);
  CHECK(b.maps == 4 * 3 * 256 * 8);                          // each frame's operator its own maps
  CHECK(b.operators == 4 * (2048 * 32 + 2 * 3 * 2048 * 8)); // Toeplitz and 3 batched padded grids
  CHECK(b.images == 4 * 256 * 8 * 3);                        // rhs and the SENSE scratch pair
  CHECK(b.solver == 4 * 256 * 8 * 4);                        // CG on the stack
  // The largest phase: frame 3's Q by the NUFFT on the doubled grid: its plan (21 B a point of
  // 2048 x 2.2^3 = 21807 oversampled points, 184 B a sample: 44 + 4 x 3 x 8 + 32 + 12, the image)
  // with the samples and Q (l complex values).
  CHECK(b.transient == 21807 * 21 + 210 * 184 + 2048 * 8 + 210 * 8 + 2048 * 8);
  // Sparse terms: FISTA (one wavelet) 11 images + its range; ADMM (wavelet + TV along the frames)
  // 11 + 4 per range image; 2D TV differences along 2 axes: 2 range images.
  SolverOptions fista;
  fista.terms = {parse_bart_term("W:7:0:0.01")};
  CHECK(frames_device_bytes(s, fista).solver == 4 * 256 * 8 * 12);
  SolverOptions admm;
  admm.terms = {parse_bart_term("W:7:0:0.01"), parse_bart_term("T:1024:0:0.01")};
  CHECK(frames_device_bytes(s, admm).solver == 4 * 256 * 8 * (11 + 4 * 2));
  // Locally low rank adds its plan, one for the stack (mri_backend/low_rank_device_bytes.hpp's
  // formula, tested in tests/sparse): FISTA (one term) 11 + 1 images and the plan.
  SolverOptions llr;
  llr.terms = {parse_bart_term("L:7:7:0.01")};
  const std::size_t llr_images = frames_device_bytes(s, llr).solver - low_rank_device_bytes(s.grid, 7, 8, 4);
  CHECK(llr_images == 4 * 256 * 8 * (11 + 1));
  JointDeviceSizes flat = s;
  flat.grid = Grid(16, 16);
  SolverOptions tv;
  tv.terms = {parse_bart_term("T:3:0:0.01")};
  CHECK(frames_device_bytes(flat, tv).solver == 4 * 256 * 8 * (11 + 2));
}

TEST_CASE("The issue's GPU case fits an 80 GB device; a 3D grid from 2^21 doubled voxels is not batched",
          "[dynamic][memory]") {
  // 128^3, 8 coils, 4 states of 8192 x 256 / 4 samples (issue 42's GPU target): the doubled grid
  // is pruned (no coil batches); 4 Toeplitz operators (32 B x 256^3 each, 0.5 GiB) dominate.
  JointDeviceSizes s;
  s.grid = Grid(128, 128, 128);
  s.samples.assign(4, 8192 * 256 / 4);
  s.coils = 8;
  s.nufft = true;
  const JointDeviceBytes mcir = mcir_device_bytes(s, 3, false);
  INFO("MCIR: " << mcir.describe() << "; total " << mcir.total());
  CHECK(mcir.operators == 4 * std::size_t{256 * 256 * 256} * 32);
  CHECK(mcir.total() < std::size_t{16} << 30);
  const JointDeviceBytes frames = frames_device_bytes(s, SolverOptions{});
  INFO("frames: " << frames.describe() << "; total " << frames.total());
  CHECK(frames.total() < std::size_t{16} << 30);
}

TEST_CASE("The joint solves refuse what does not fit, naming the bytes needed and available", "[dynamic][memory]") {
  JointDeviceSizes s;
  s.grid = Grid(8, 8);
  s.samples = {100, 120, 90};
  s.coils = 2;
  const JointDeviceBytes need = mcir_device_bytes(s, 2, false);
  // The available figure: the smaller of the device's free memory and the limit, either alone, or
  // none known (0: no check).
  CHECK(joint_available_bytes(1000, 0) == 1000);
  CHECK(joint_available_bytes(0, 500) == 500);
  CHECK(joint_available_bytes(1000, 500) == 500);
  CHECK(joint_available_bytes(0, 0) == 0);
  CHECK_NOTHROW(check_joint_device_bytes(need, s, need.total(), need.total(), 0, "reconstruct_motion_corrected"));
  CHECK_NOTHROW(check_joint_device_bytes(need, s, 0, 0, 0, "reconstruct_motion_corrected"));
  const std::size_t limit = need.total() - 1; // gpu.memory_limit one byte short
  try {
    check_joint_device_bytes(need, s, joint_available_bytes(0, limit), 0, limit, "reconstruct_motion_corrected");
    FAIL("no refusal");
  } catch (const Unsupported &e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("reconstruct_motion_corrected on the GPU") != std::string::npos);
    CHECK(what.find(std::to_string(need.total()) + " bytes") != std::string::npos);
    CHECK(what.find(std::to_string(limit) + " bytes") != std::string::npos);
    CHECK(what.find("gpu.memory_limit") != std::string::npos);
    CHECK(what.find("3 frames") != std::string::npos);
  }
}
