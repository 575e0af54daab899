// `mri recon --fieldmap F --readout-times T` (issue 43): BART files of a simulated spiral with a
// 200 Hz field over 16 ms; the report names L, the interpolator and the bound; bad inputs end
// with one stderr line and the data or usage exit code.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "mri/io/ismrmrd.hpp"
#include "mri/mri.hpp"
#include "test_support.hpp"

using namespace mri;

namespace {

struct Run {
  int code;
  std::string err;
};

std::string slurp(const std::filesystem::path &p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Run mri_cli(const test::TempDir &dir, const std::string &args) {
  const std::string cmd = "cd '" + dir.path().string() + "' && OMP_WAIT_POLICY=passive '" MRI_TEST_CLI "' " + args +
                          " > out.txt 2> err.txt";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "err.txt")};
}

long lines(const std::string &s) { return std::count(s.begin(), s.end(), '\n'); }

constexpr int kN = 24, kInterleaves = 4, kPer = 500;

// traj, k (one coil), times and the field map as BART files in `dir`; returns the truth.
Image write_problem(const test::TempDir &dir) {
  const Grid g(kN, kN);
  const Image truth = Phantom::shepp_logan_2d().rasterize(g);
  std::vector<float> f(static_cast<std::size_t>(g.voxels()));
  for (std::int64_t y = 0; y < kN; ++y)
    for (std::int64_t x = 0; x < kN; ++x) {
      const double u = static_cast<double>(x) / kN - 0.5, v = static_cast<double>(y) / kN - 0.5;
      f[static_cast<std::size_t>(g.index(x, y))] = static_cast<float>(200 * (0.6 * std::exp(-10 * (u * u + v * v)) + 0.4 * (u + 0.5)) - 80);
    }
  const Trajectory t = traj::spiral(g, kInterleaves, kPer);
  std::vector<float> times;
  for (int i = 0; i < kInterleaves; ++i)
    for (int s = 0; s < kPer; ++s) times.push_back(0.016f * static_cast<float>(s) / kPer);
  const auto field = std::make_shared<const FieldMap>(g, f);
  const std::vector<cfloat> y = mri::forward(FieldFourierOperator(t, g, field, times, {Backend::Cpu, Precision::Float64}), truth);
  bart::CflArray traj = bart::from_trajectory(t);
  bart::write_cfl(dir / "t", {3, kPer, kInterleaves}, traj.data);
  bart::write_cfl(dir / "k", {1, kPer, kInterleaves}, y);
  std::vector<cfloat> tc(times.begin(), times.end());
  bart::write_cfl(dir / "times", {1, kPer, kInterleaves}, tc);
  std::vector<cfloat> fc(f.begin(), f.end());
  bart::write_cfl(dir / "f", {kN, kN, 1}, fc);
  return truth;
}

// PSNR after the best complex scale (BART inputs give the image in BART's unitary units).
double psnr_of(const test::TempDir &dir, const std::string &base, const Image &truth) {
  Image image = bart::to_image(bart::read_cfl(dir / base));
  const cfloat scale = best_scale(image, truth);
  for (cfloat &v : image.values()) v *= scale;
  return psnr(image, truth);
}

} // namespace

TEST_CASE("mri recon --fieldmap --readout-times corrects the field and reports L, the interpolator and the bound",
          "[offresonance]") {
  const test::TempDir dir("b0cli");
  const Image truth = write_problem(dir);
  const std::string common = "recon --traj t --kspace k --matrix 24,24 --iterations 10 --backend cpu ";
  const Run plain = mri_cli(dir, common + "--out plain --quiet");
  REQUIRE(plain.code == 0);
  const Run fixed = mri_cli(dir, common + "--fieldmap f --readout-times times --out fixed --report r.json");
  INFO(fixed.err);
  REQUIRE(fixed.code == 0);
  CHECK(fixed.err.find("field correction: time-segmented, L = ") != std::string::npos);
  CHECK(fixed.err.find("least-squares interpolator, error bound") != std::string::npos);
  const nlohmann::json report = nlohmann::json::parse(slurp(dir / "r.json"))["reconstructions"][0];
  CHECK(report["offresonance"] == "time-segmented");
  CHECK(report["segments"].get<int>() >= 2);
  CHECK(report["segment_error"].get<double>() <= 1e-3);
  CHECK(psnr_of(dir, "fixed", truth) > psnr_of(dir, "plain", truth) + 5);

  // The same times as dwell:D (sample i of each readout at i D): the same correction.
  const Run dwell = mri_cli(dir, common + "--fieldmap f --readout-times dwell:3.2e-5 --out dwell --quiet");
  INFO(dwell.err);
  REQUIRE(dwell.code == 0);
  CHECK(std::abs(psnr_of(dir, "dwell", truth) - psnr_of(dir, "fixed", truth)) < 0.01);
  const Run bad_dwell = mri_cli(dir, common + "--fieldmap f --readout-times dwell:-1 --out x");
  CHECK(bad_dwell.code == 1);
  CHECK(bad_dwell.err.find("--readout-times = dwell:-1") != std::string::npos);

  // A map on a coarser grid: resampled with one warning line.
  Grid coarse(12, 12);
  const FieldMap fine(Grid(kN, kN), [&] {
    std::vector<float> v;
    for (const cfloat c : bart::read_cfl(dir / "f").data) v.push_back(c.real());
    return v;
  }());
  const FieldMap small = fine.resampled(coarse);
  bart::write_cfl(dir / "f12", {12, 12, 1}, std::vector<cfloat>(small.hz().begin(), small.hz().end()));
  const Run resampled = mri_cli(dir, common + "--fieldmap f12 --readout-times times --out r12 --quiet");
  CHECK(resampled.code == 0);
  CHECK(resampled.err.find("warning: --fieldmap f12 is 12x12x1, resampled to the matrix 24x24x1") != std::string::npos);
  CHECK(lines(resampled.err) == 1);
}

TEST_CASE("mri fieldmap estimates the map from two echoes that mri recon then uses", "[offresonance]") {
  const test::TempDir dir("b0cli_fieldmap");
  const Image truth = write_problem(dir);
  std::vector<float> f;
  for (const cfloat c : bart::read_cfl(dir / "f").data) f.push_back(c.real());
  // Two noiseless echoes 2 ms apart, TE1 = 1 ms (the model's sign: exp(-2 pi i f TE)).
  std::vector<cfloat> e1(truth.size()), e2(truth.size());
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const double w = -2 * M_PI * f[i];
    e1[i] = cfloat(cdouble(truth[i]) * std::polar(1.0, w * 1e-3));
    e2[i] = cfloat(cdouble(truth[i]) * std::polar(1.0, w * 3e-3));
  }
  bart::write_cfl(dir / "e1", {kN, kN, 1}, e1);
  bart::write_cfl(dir / "e2", {kN, kN, 1}, e2);
  const Run est = mri_cli(dir, "fieldmap --echo1 e1 --echo2 e2 --delta-te 2 --out fest");
  INFO(est.err);
  REQUIRE(est.code == 0);
  CHECK(est.err.find("mri fieldmap: 24x24x1") != std::string::npos);
  const std::string common = "recon --traj t --kspace k --matrix 24,24 --iterations 10 --backend cpu --quiet ";
  REQUIRE(mri_cli(dir, common + "--out plain").code == 0);
  REQUIRE(mri_cli(dir, common + "--fieldmap fest --readout-times times --out fixed").code == 0);
  CHECK(psnr_of(dir, "fixed", truth) > psnr_of(dir, "plain", truth) + 5);
  const Run bad = mri_cli(dir, "fieldmap --echo1 e1 --echo2 e2 --delta-te 0 --out x");
  CHECK(bad.code == 2);
  CHECK(lines(bad.err) <= 2); // CLI11's message and its "Run with --help" line
}

TEST_CASE("mri recon refuses bad off-resonance inputs with one line and an exit code", "[offresonance][bad-input]") {
  const test::TempDir dir("b0cli_bad");
  write_problem(dir);
  const std::string common = "recon --traj t --kspace k --matrix 24,24 --iterations 2 --backend cpu --out x ";
  const Run no_times = mri_cli(dir, common + "--fieldmap f");
  CHECK(no_times.code == 2);
  CHECK(no_times.err == "mri: --fieldmap needs --readout-times (the samples' times)\n");

  bart::write_cfl(dir / "short", {1, 10}, std::vector<cfloat>(10));
  const Run short_times = mri_cli(dir, common + "--fieldmap f --readout-times short");
  CHECK(short_times.code == 1);
  CHECK(lines(short_times.err) == 1);
  CHECK(short_times.err.find("--readout-times = short: 10 values") != std::string::npos);

  std::vector<cfloat> backwards(kPer * kInterleaves, cfloat(0.001f));
  backwards[7] = cfloat(0.0005f);
  bart::write_cfl(dir / "backwards", {1, kPer, kInterleaves}, backwards);
  const Run decreasing = mri_cli(dir, common + "--fieldmap f --readout-times backwards");
  CHECK(decreasing.code == 1);
  CHECK(lines(decreasing.err) == 1);
  CHECK(decreasing.err.find("time 7 (0.000500 s) is before the one preceding it in readout 0") != std::string::npos);

  std::vector<cfloat> nan_map(kN * kN, cfloat(5.0f));
  nan_map[3] = cfloat(NAN, 0.0f);
  bart::write_cfl(dir / "fnan", {kN, kN, 1}, nan_map);
  const Run nan = mri_cli(dir, common + "--fieldmap fnan --readout-times times");
  CHECK(nan.code == 1);
  CHECK(lines(nan.err) == 1);
  CHECK(nan.err.find("--fieldmap = fnan: value 3 is nan") != std::string::npos);

  if (!mri::cuda_available()) { // without a device: one line, no image; with one it runs (tests/gpu/offresonance)
    const Run cuda = mri_cli(dir, common + "--fieldmap f --readout-times times --backend cuda");
    CHECK(cuda.code != 0);
    CHECK(lines(cuda.err) == 1);
  }
}

TEST_CASE("mri recon --in FILE.h5 --readout-times ismrmrd:T0 takes the samples' times from the file", "[offresonance]") {
  // The spiral of write_problem in an ISMRMRD file with sample_time_us = 16 ms / 500 = 32 us; the
  // writer puts center_sample at 250, so T0 = 250 x 32 us gives the simulated times (i x 32 us).
  test::TempDir dir("offres-ismrmrd");
  const Image truth = write_problem(dir);
  const Grid g(kN, kN);
  const Trajectory t = bart::to_trajectory(bart::read_cfl(dir / "t"), 2);
  const KSpaceData data(t, bart::read_cfl(dir / "k").data);
  IsmrmrdWriteInput in;
  in.header.encoded_matrix = in.header.recon_matrix = {kN, kN, 1};
  in.header.encoded_fov_mm = in.header.recon_fov_mm = {240, 240, 5};
  in.header.trajectory = "spiral";
  in.header.coils = 1;
  in.slices = {{&data}};
  in.readouts = kInterleaves;
  in.sample_time_us = 32;
  write_ismrmrd(dir / "raw.h5", in);
  const std::string common = "recon --in raw.h5 --iterations 10 --backend cpu ";
  const Run corrected = mri_cli(dir, common + "--fieldmap f --readout-times ismrmrd:0.008 --out fixed");
  INFO(corrected.err);
  REQUIRE(corrected.code == 0);
  CHECK(corrected.err.find("field correction: time-segmented") != std::string::npos);
  const Run plain = mri_cli(dir, common + "--out plain");
  REQUIRE(plain.code == 0);
  CHECK(psnr_of(dir, "fixed", truth) > psnr_of(dir, "plain", truth) + 5);

  const Run before_echo = mri_cli(dir, common + "--fieldmap f --readout-times ismrmrd --out x");
  CHECK(before_echo.code == 1);
  CHECK(lines(before_echo.err) == 1);
  CHECK(before_echo.err.find("center_sample 250") != std::string::npos);
  const Run bart_input = mri_cli(dir, "recon --traj t --kspace k --matrix 24,24 --fieldmap f --readout-times ismrmrd --out x");
  CHECK(bart_input.code == 2);
  const Run file_times = mri_cli(dir, common + "--fieldmap f --readout-times times --out x");
  CHECK(file_times.code == 2);
}
