// Defaults that serve a user who passes no flags (issue 40): `--method auto`, the progress line
// off a terminal, BART base names for outputs without a recognised extension.
#include "catch.hpp"
#include "mri/mri.hpp"
#include "progress.hpp"
#include "test_support.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

using namespace mri;

namespace {

struct Run {
  int code;
  std::string err;
};

std::string read_file(const std::filesystem::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `mri <args>` in `dir`, stdout discarded, stderr to err.txt (a file: not a terminal).
Run run_mri(const test::TempDir &dir, const std::string &args) {
  const std::string cmd = "cd '" + dir.path().string() + "' && OMP_WAIT_POLICY=passive '" MRI_TEST_CLI "' " + args +
                          " > /dev/null 2> err.txt";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(dir / "err.txt")};
}

long count(const std::string &s, char c) { return std::count(s.begin(), s.end(), c); }

// What a Progress wrote to a file (not a terminal) with `timing`, after `steps` advances.
std::string progress_log(cli::ProgressTiming timing, int steps, bool quiet = false) {
  std::FILE *file = std::tmpfile();
  REQUIRE(file);
  {
    cli::Progress progress("recon: CG iteration", steps, quiet, file, timing);
    for (int i = 0; i < steps; ++i) progress.advance(1, "residual 0.1");
  }
  std::string text(static_cast<std::size_t>(std::ftell(file)), '\0');
  std::rewind(file);
  const std::size_t read = std::fread(text.data(), 1, text.size(), file);
  std::fclose(file);
  text.resize(read);
  return text;
}

} // namespace

TEST_CASE("cli defaults: off a terminal the progress is whole lines, periodic and one at the end", "[cli]") {
  // Every advance due (no interval): one line each (the last is where it ended: not repeated at
  // the end), never a '\r'.
  const std::string every = progress_log({0.0, 0.0}, 5);
  INFO(every);
  CHECK(count(every, '\r') == 0);
  CHECK(count(every, '\n') == 5);
  CHECK_THAT(every, test::contains("recon: CG iteration 5/5"));
  // A long interval: the first line when shown, the last at the end; nothing between.
  const std::string sparse = progress_log({0.0, 3600.0}, 50);
  CHECK(count(sparse, '\r') == 0);
  CHECK(count(sparse, '\n') == 2);
  CHECK(progress_log({0.0, 0.0}, 5, true).empty()); // --quiet
  CHECK(progress_log({3600.0, 0.0}, 5).empty());    // short runs stay silent
}

TEST_CASE("cli defaults: mri recon with stderr to a file writes no carriage return", "[cli]") {
  test::TempDir dir("cli");
  REQUIRE(run_mri(dir, "phantom --matrix 64,64 --traj radial --spokes 96 --readout 128 --snr 30 --out raw.h5").code == 0);
  // Exact direct sums with CG to the end: over a second on two cores, so that progress is shown
  // (under AddressSanitizer a fifth of the iterations takes as long).
#if defined(__SANITIZE_ADDRESS__)
  const std::string iterations = "40";
#else
  const std::string iterations = "200";
#endif
  const std::string recon = "recon --in raw.h5 --method exact --normal direct --tolerance 0 --iterations " + iterations + " ";
  const Run r = run_mri(dir, recon + "--out x.nii");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(count(r.err, '\r') == 0);
  if (r.err.find("CG iteration") == std::string::npos)
    WARN("the run took under a second: no progress shown (the Progress test above covers the lines)");
  else
    CHECK_THAT(r.err, test::contains("recon: CG iteration " + iterations + "/" + iterations)); // the line at the end
  const Run quiet = run_mri(dir, recon + "--quiet --out y.nii");
  CHECK(quiet.code == 0);
  CHECK(quiet.err.empty());
}

TEST_CASE("cli defaults: --method auto is the default; on the CPU it runs the NUFFT and says why", "[cli]") {
  test::TempDir dir("cli");
  REQUIRE(run_mri(dir, "phantom --matrix 32,32 --traj radial --spokes 32 --readout 64 --snr 30 --out raw.h5").code == 0);
  const Run r = run_mri(dir, "recon --in raw.h5 --backend cpu --iterations 5 --report r.json --out x.nii");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.err, test::contains("mri recon: auto: nufft (cpu"));
  const nlohmann::json item = nlohmann::json::parse(read_file(dir / "r.json")).at("reconstructions").at(0);
  CHECK(item.at("method") == "nufft");
  CHECK_THAT(item.at("method_note").get<std::string>(), test::contains("auto: nufft"));
  // Asked for by name: that method, no note.
  REQUIRE(run_mri(dir, "recon --in raw.h5 --backend cpu --iterations 5 --method exact --report e.json --out e.nii").code == 0);
  const nlohmann::json exact = nlohmann::json::parse(read_file(dir / "e.json")).at("reconstructions").at(0);
  CHECK(exact.at("method") == "exact");
  CHECK(exact.at("method_note") == "");
}

TEST_CASE("cli defaults: an output name without a recognised extension is a BART base name", "[cli]") {
  test::TempDir dir("cli");
  REQUIRE(run_mri(dir, "phantom --matrix 16,16 --traj radial --spokes 16 --readout 32 --out raw.h5").code == 0);
  const std::string recon = "recon --in raw.h5 --iterations 3 --quiet --out ";
  for (const auto &[out, base] : {std::pair<std::string, std::string>{"recon_0.01", "recon_0.01"}, {"img.cfl", "img"},
                                  {"img2.hdr", "img2"}, {"plain", "plain"}, {"x.xyz", "x.xyz"}}) {
    const Run r = run_mri(dir, recon + out);
    INFO(out << ": " << r.err);
    CHECK(r.code == 0);
    CHECK(std::filesystem::exists(dir / (base + ".cfl")));
    CHECK(std::filesystem::exists(dir / (base + ".hdr")));
    const bart::CflArray image = bart::read_cfl(dir / base);
    CHECK(image.dims[0] == 16);
  }
  const Run folder = run_mri(dir, recon + "sub/");
  CHECK(folder.code == 2);
  CHECK(count(folder.err, '\n') == 1);
}

TEST_CASE("method auto: on the CPU reconstruct runs the NUFFT and the report says so", "[reconstruct]") {
  const Grid grid(32, 32);
  const Trajectory t = traj::radial(grid, 32, 64);
  const KSpaceData data(t, Phantom::shepp_logan_2d().kspace(t, grid));
  ReconOptions o;
  o.solver.iterations = 4;
  o.backend = Backend::Cpu;
  REQUIRE(o.method == Method::Auto);
  const ReconResult r = reconstruct(data, grid, o);
  CHECK(r.report.method == Method::Nufft);
  CHECK_THAT(r.report.method_note, test::contains("auto: nufft (cpu"));
  // The same image as asking for the NUFFT by name, which leaves the note empty.
  o.method = Method::Nufft;
  const ReconResult named = reconstruct(data, grid, o);
  CHECK(named.report.method_note.empty());
  CHECK(test::relative_error(named.image, r.image) == 0.0);
  // A tolerance the float32 NUFFT cannot reach: the exact sums, and why.
  o.method = Method::Auto;
  o.nufft.tolerance = 1e-6;
  const ReconResult tight = reconstruct(data, grid, o);
  CHECK(tight.report.method == Method::Exact);
  CHECK_THAT(tight.report.method_note, test::contains("auto: exact"));
  o.precision = Precision::Float64; // float64 reaches 1e-6
  CHECK(reconstruct(data, grid, o).report.method == Method::Nufft);
  o.nufft.tolerance = 0.5;
  CHECK_THROWS_WITH(reconstruct(data, grid, o), test::contains("options.nufft.tolerance"));
  CHECK(std::string(to_string(Method::Auto)) == "auto");
}

TEST_CASE("method auto: the GPU's cost model picks the exact sums for tiny problems, the NUFFT for RECON-3D",
          "[reconstruct]") {
  // Pure host arithmetic: no device is asked.
  const MethodChoice tiny = choose_method({2, 16.0 * 16, 256, 1, 0}, Backend::Cuda, Precision::Float32, 1e-3);
  INFO(tiny.note);
  CHECK(tiny.method == Method::Exact);
  CHECK_THAT(tiny.note, test::contains("gpu cost model"));
  // RECON-3D: 128^3, koosh M = 2^20, one coil (docs/performance.md: exact 0.53 s, NUFFT 37 ms).
  const MethodChoice recon3d = choose_method({3, 128.0 * 128 * 128, 1 << 20, 1, 0}, Backend::Cuda, Precision::Float32, 1e-3);
  INFO(recon3d.note);
  CHECK(recon3d.method == Method::Nufft);
  // RECON-2D: 256^2, 2^16 spiral samples (exact 4.7 ms, NUFFT 2.5 ms end to end).
  CHECK(choose_method({2, 256.0 * 256, 1 << 16, 1, 0}, Backend::Cuda, Precision::Float32, 1e-3).method == Method::Nufft);
  // The CUDA NUFFT is float32: float64 runs the exact sums on the GPU, whatever the size.
  CHECK(choose_method({3, 128.0 * 128 * 128, 1 << 20, 1, 0}, Backend::Cuda, Precision::Float64, 1e-3).method ==
        Method::Exact);
  // On the CPU the NUFFT even for the tiny problem.
  CHECK(choose_method({2, 16.0 * 16, 256, 1, 0}, Backend::Cpu, Precision::Float32, 1e-3).method == Method::Nufft);
}
