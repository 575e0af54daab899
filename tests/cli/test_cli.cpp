// The `mri` tool through its command line: help, exit codes and one-line messages, and results
// compared with references (the SDK, the phantom, `bart nufft`, ISMRMRD's own reconstruction).
#include "catch.hpp"
#include "mri/io.hpp"
#include "mri/mri.hpp"
#include "test_support.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include <ismrmrd/dataset.h>
#include <nifti2_io.h>
#include <nlohmann/json.hpp>

using namespace mri;

namespace {

struct Run {
  int code;
  std::string out, err;
};

std::string slurp(const std::filesystem::path &p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `[launcher] mri <args>` in `dir` (a shell command line; arguments are ours, no quoting needed).
Run mri_cli(const test::TempDir &dir, const std::string &args, const std::string &launcher = "") {
  const std::string cmd = "cd '" + dir.path().string() + "' && OMP_WAIT_POLICY=passive " + launcher + " '" MRI_TEST_CLI
                          "' " + args + " > out.txt 2> err.txt";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out.txt"), slurp(dir / "err.txt")};
}

bool on_path(const char *tool) { return std::system((std::string("command -v ") + tool + " > /dev/null 2>&1").c_str()) == 0; }

long lines(const std::string &s) { return std::count(s.begin(), s.end(), '\n'); }

// `mri phantom <phantom> --out raw.h5`, then `mri recon --in raw.h5 <recon> --out img.nii`: the
// NIfTI read back (both must succeed).
NiftiVolume phantom_then_recon(const test::TempDir &dir, const std::string &phantom, const std::string &recon) {
  REQUIRE(mri_cli(dir, "phantom " + phantom + " --out raw.h5").code == 0);
  const Run r = mri_cli(dir, "recon --in raw.h5 " + recon + " --out img.nii --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  return read_nifti(dir / "img.nii");
}

// PSNR of |x| against the (2D or 3D) phantom's magnitude after the best real scale.
double phantom_psnr(const Image &x) {
  const Grid &g = x.grid();
  const Image truth = (g.dims() == 3 ? Phantom::shepp_logan_3d() : Phantom::shepp_logan_2d()).rasterize(g);
  Image t(g), m(g);
  for (std::size_t i = 0; i < x.size(); ++i) t[i] = std::abs(truth[i]), m[i] = std::abs(x[i]);
  const cfloat s = best_scale(m, t);
  for (auto &v : m.values()) v *= s;
  return psnr(m, t);
}

// The phantom's k-space on `spokes` radial readouts of 16 samples, 16^2, and an ISMRMRD header
// for it (1 mm voxels, one readout per spoke): hand-made files for the tests.
struct Radial16 {
  Grid grid{16, 16};
  Trajectory traj;
  KSpaceData data;
  IsmrmrdWriteInput input;
  explicit Radial16(int spokes)
      : traj(traj::radial(grid, spokes, 16)), data(traj, Phantom::shepp_logan_2d().kspace(traj, grid)) {
    input.header.encoded_matrix = input.header.recon_matrix = {16, 16, 1};
    input.header.encoded_fov_mm = input.header.recon_fov_mm = {16, 16, 1};
    input.header.trajectory = "radial";
    input.readouts = spokes;
  }
};

} // namespace

TEST_CASE("cli: --help lists the subcommands and every recon option with its default", "[cli]") {
  test::TempDir dir("cli");
  const Run top = mri_cli(dir, "--help");
  CHECK(top.code == 0);
  for (const char *cmd : {"phantom", "traj", "nufft", "recon", "sens", "motion"}) CHECK_THAT(top.out, test::contains(cmd));
  const Run recon = mri_cli(dir, "recon --help");
  CHECK(recon.code == 0);
  for (const char *opt : {"--method", "--normal", "--backend", "--policy", "--precision", "--lambda", "--regularizer",
                          "--iterations", "--tolerance", "--nufft-tolerance", "--q-cache", "--device-memory",
                          "--traj-units", "--report", "--quiet"})
    CHECK_THAT(recon.out, test::contains(opt));
  CHECK_THAT(recon.out, test::contains("=20")); // the iterations' default
  CHECK_THAT(recon.out, test::contains("{auto|gather|scatter|scatter-fixed}=auto")); // --nufft-gridding
  CHECK_THAT(recon.out, test::contains("MiB"));
  const Run motion = mri_cli(dir, "motion --help");
  CHECK(motion.code == 0);
  for (const char *opt : {"--alpha", "--gamma", "--rho", "--sigma", "--iterations", "--warps", "--levels", "--omega",
                          "--solver", "--memory", "--derivative", "--backend", "--precision", "--reference", "--units",
                          "--report", "=0.03", "voxels"})
    CHECK_THAT(motion.out, test::contains(opt));
}

TEST_CASE("cli: usage errors exit 2, data errors 1, unsupported 3, each with one line", "[cli]") {
  test::TempDir dir("cli");
  const Run none = mri_cli(dir, "");
  CHECK(none.code == 2);
  const Run unknown = mri_cli(dir, "recon --frobnicate 3 --out x");
  CHECK(unknown.code == 2);
  CHECK(lines(unknown.err) == 1);
  const Run both = mri_cli(dir, "recon --in a.h5 --traj t --kspace k --out x");
  CHECK(both.code == 2);
  CHECK_THAT(both.err, test::contains("contradict"));
  const Run missing = mri_cli(dir, "recon --in missing.h5 --out x");
  CHECK(missing.code == 1);
  CHECK(lines(missing.err) == 1);
  CHECK_THAT(missing.err, test::contains("missing.h5"));
  { std::ofstream(dir / "junk.h5") << "junk"; }
  const Run junk = mri_cli(dir, "recon --in junk.h5 --out x");
  CHECK(junk.code == 1);
  CHECK(lines(junk.err) == 1);
  const Run coils = mri_cli(dir, "phantom --matrix 16,16 --coils 65 --out k");
  CHECK(coils.code == 2); // the simulator's range is 1 to 64
  const Run require = mri_cli(dir, "phantom --matrix 16,16 --spokes 8 --readout 16 --coils 3 --out k3.h5 && '" MRI_TEST_CLI
                                   "' recon --in k3.h5 --coil-maps require --out x.nii");
  CHECK(require.code == 1); // multi-coil data without maps is refused, never reduced to one coil
  CHECK_THAT(require.err, test::contains("coils.maps = require"));
  const Run matrix = mri_cli(dir, "traj --matrix 16,x t");
  CHECK(matrix.code == 2);
  CHECK_THAT(matrix.err, test::contains("--matrix = 16,x"));
  const Run bad_ext = mri_cli(dir, "phantom --matrix 16,16 --spokes 8 --readout 16 --out k && '" MRI_TEST_CLI
                                   "' nufft -a -t k -d 16,16 k img.xyz");
  CHECK(bad_ext.code == 1); // k-space as a trajectory: dims[0] = 1
}

TEST_CASE("cli: traj writes the SDK's generator in BART's layout", "[cli]") {
  test::TempDir dir("cli");
  REQUIRE(mri_cli(dir, "traj --traj spiral --matrix 32,32 --interleaves 4 --samples 100 t").code == 0);
  const bart::CflArray a = bart::read_cfl(dir / "t");
  CHECK(a.dims[0] == 3);
  CHECK(a.dims[1] == 100);
  CHECK(a.dims[2] == 4);
  const Trajectory want = traj::spiral(Grid(32, 32), 4, 100);
  const Trajectory got = bart::to_trajectory(a, 2);
  REQUIRE(got.size() == want.size());
  for (std::size_t m = 0; m < got.size(); ++m) CHECK((got[m].kx == want[m].kx && got[m].ky == want[m].ky));
  // Into ISMRMRD: one acquisition per interleave, the same points, normalised on request.
  REQUIRE(mri_cli(dir, "traj --traj spiral --matrix 32,32 --interleaves 4 --samples 100 --traj-units normalized t.h5").code == 0);
  const IsmrmrdData d = read_ismrmrd(dir / "t.h5");
  CHECK(d.counts.imaging == 4);
  CHECK(d.header.trajectory == "spiral");
  CHECK(d.units == TrajUnits::Normalized);
  const Trajectory &h5 = d.items.at(0).data.trajectory();
  REQUIRE(h5.size() == want.size());
  for (std::size_t m = 0; m < h5.size(); ++m) CHECK(std::abs(h5[m].kx - want[m].kx) < 1e-5f);
}

TEST_CASE("cli: 8 coils: phantom -> ISMRMRD -> SENSE with estimated, ESPIRiT and given maps, and mri sens", "[cli]") {
  test::TempDir dir("cli");
  REQUIRE(mri_cli(dir, "phantom --matrix 48,48 --traj radial --spokes 48 --readout 96 --snr 60 --coils 8 "
                       "--sens-out true_maps --out raw.h5").code == 0);
  const auto recon_psnr = [&](const std::string &args) {
    const Run r = mri_cli(dir, "recon --in raw.h5 --iterations 15 --lambda 2 --report r.json --out img.nii --quiet " + args);
    INFO(args << ": " << r.err);
    REQUIRE(r.code == 0);
    CHECK_THAT(slurp(dir / "r.json"), test::contains("\"coils\": 8"));
    const double p = phantom_psnr(Image(Grid(48, 48), read_nifti(dir / "img.nii").data));
    WARN("mri recon " << args << ": PSNR " << p << " dB");
    return p;
  };
  // Estimated maps see rho * RSS(true maps), and phantom_psnr fits one scale to rho: they score
  // lower. Measured: direct 26.7, ESPIRiT 26.7, true maps 28.0, 4 virtual coils 28.0 dB.
  CHECK(recon_psnr("") > 25.5);
  CHECK(recon_psnr("--maps espirit") > 25.5);
  CHECK(recon_psnr("--sens true_maps") > 27);
  CHECK(recon_psnr("--virtual-coils 4 --sens true_maps") > 27);
  CHECK_THAT(slurp(dir / "r.json"), test::contains("\"acquired_coils\": 8"));
  REQUIRE(mri_cli(dir, "sens --in raw.h5 --maps espirit --out est_maps --quiet").code == 0);
  const bart::CflArray est = bart::read_cfl(dir / "est_maps");
  CHECK(std::vector<std::int64_t>(est.dims.begin(), est.dims.begin() + 4) == std::vector<std::int64_t>{48, 48, 1, 8});
  CHECK(est.data.size() == 48u * 48u * 8u);
}

TEST_CASE("cli: phantom -> ISMRMRD -> recon -> NIfTI reproduces the phantom, with a JSON report", "[cli]") {
  test::TempDir dir("cli");
  const NiftiVolume v = phantom_then_recon(dir, "--matrix 32,32 --traj radial --spokes 64 --readout 64 --snr 50 --voxel 2",
                                          "--iterations 15 --out img --out img.h5 --report r.json");
  CHECK(v.dims == std::array<std::int64_t, 4>{32, 32, 1, 1});
  CHECK(v.voxel_mm[0] == Approx(2));
  CHECK(phantom_psnr(Image(Grid(32, 32), v.data)) > 25.0); // measured 26.9 dB
  const Image cfl = bart::to_image(bart::read_cfl(dir / "img"));
  for (std::size_t i = 0; i < cfl.size(); ++i) REQUIRE(std::abs(cfl[i]) == Approx(v.data[i].real()).margin(1e-6));
  ISMRMRD::Dataset ds((dir / "img.h5").c_str(), "dataset", false);
  ISMRMRD::Image<float> h5;
  ds.readImage("image_0", 0, h5);
  REQUIRE(h5.getNumberOfDataElements() == 32u * 32u);
  for (std::size_t i = 0; i < cfl.size(); ++i) REQUIRE(h5.getDataPtr()[i] == v.data[i].real());
  CHECK(h5.getFieldOfViewX() == Approx(64)); // 32 voxels of 2 mm
  const std::string json = slurp(dir / "r.json");
  for (const char *field : {"\"iterations\": 15", "\"cg_seconds\"", "\"residuals\"", "\"q_cache\"", "\"imaging\": 64"})
    CHECK_THAT(json, test::contains(field));
}

TEST_CASE("cli: nufft --adjoint equals bart nufft -a", "[cli]") {
  if (!on_path("bart")) {
    WARN("bart not installed: not compared");
    return;
  }
  test::TempDir dir("cli");
  REQUIRE(mri_cli(dir, "phantom --matrix 32,32 --traj radial --spokes 48 --readout 64 --out k --traj-out t").code == 0);
  REQUIRE(mri_cli(dir, "nufft --adjoint --traj t --matrix 32,32 --tolerance 1e-5 k ours").code == 0);
  REQUIRE(std::system(("cd '" + dir.path().string() + "' && bart nufft -a -d 32:32:1 t k theirs > /dev/null 2>&1").c_str()) == 0);
  const bart::CflArray ours = bart::read_cfl(dir / "ours"), theirs = bart::read_cfl(dir / "theirs");
  REQUIRE(ours.data.size() == theirs.data.size());
  CHECK(test::relative_error(ours.data, theirs.data) < 1e-2);
  // Forward, on their adjoint image: k-space [1, readout, spokes] as BART's.
  REQUIRE(mri_cli(dir, "nufft --traj t --tolerance 1e-5 theirs kours").code == 0);
  REQUIRE(std::system(("cd '" + dir.path().string() + "' && bart nufft t theirs ktheirs > /dev/null 2>&1").c_str()) == 0);
  const bart::CflArray kours = bart::read_cfl(dir / "kours"), ktheirs = bart::read_cfl(dir / "ktheirs");
  CHECK(kours.dims[1] == 64);
  CHECK(kours.dims[2] == 48);
  REQUIRE(kours.data.size() == ktheirs.data.size());
  CHECK(test::relative_error(kours.data, ktheirs.data) < 1e-2);
}

TEST_CASE("cli: recon of ismrmrd_generate_cartesian_shepp_logan matches ismrmrd_recon_cartesian_2d", "[cli]") {
  if (!on_path("ismrmrd_generate_cartesian_shepp_logan") || !on_path("ismrmrd_recon_cartesian_2d")) {
    WARN("ismrmrd-tools not installed: not compared");
    return;
  }
  test::TempDir dir("cli");
  REQUIRE(std::system(("cd '" + dir.path().string() +
                       "' && ismrmrd_generate_cartesian_shepp_logan -m 32 -c 2 -C -o sl.h5 > /dev/null && "
                       "ismrmrd_recon_cartesian_2d sl.h5 > /dev/null 2>&1").c_str()) == 0);
  const Run r = mri_cli(dir, "recon --in sl.h5 --iterations 10 --out img --report r.json --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const bart::CflArray ours = bart::read_cfl(dir / "img");
  REQUIRE(ours.data.size() == 32u * 32u); // cropped to the recon matrix
  ISMRMRD::Dataset ds((dir / "sl.h5").c_str(), "dataset", false);
  ISMRMRD::Image<float> theirs;
  ds.readImage("cpp", 0, theirs);
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < ours.data.size(); ++i) {
    const double a = std::abs(ours.data[i]), b = theirs.getDataPtr()[i];
    sab += a * b, saa += a * a, sbb += b * b;
  }
  CHECK(sab / std::sqrt(saa * sbb) > 0.99);
  CHECK_THAT(slurp(dir / "r.json"), test::contains("\"prewhitened\": true")); // its noise scan was used
}

TEST_CASE("cli: an unwritable or unknown output fails before any work and leaves nothing", "[cli]") {
  test::TempDir dir("cli");
  REQUIRE(mri_cli(dir, "phantom --matrix 16,16 --spokes 8 --readout 16 --out raw.h5").code == 0);
  const Run folder = mri_cli(dir, "recon --in raw.h5 --out no-dir/x.nii");
  CHECK(folder.code == 1);
  CHECK_THAT(folder.err, test::contains("no-dir"));
  const Run ext = mri_cli(dir, "recon --in raw.h5 --out sub/ --quiet"); // a folder, not a file
  CHECK(ext.code == 2);
  CHECK(lines(ext.err) == 1); // no progress or notes: it stopped before reading
  const Run sens = mri_cli(dir, "recon --in raw.h5 --sens s --out x.h5 --quiet");
  CHECK(sens.code == 1); // the maps file does not exist
  CHECK_THAT(sens.err, test::contains("s.hdr"));
  for (const auto &e : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = e.path().filename().string();
    CHECK((name == "raw.h5" || name == "out.txt" || name == "err.txt"));
  }
}

TEST_CASE("cli: repetitions of an ISMRMRD file become the 4th NIfTI dimension, in order", "[cli]") {
  if (!on_path("ismrmrd_generate_cartesian_shepp_logan")) {
    WARN("ismrmrd-tools not installed: not tested");
    return;
  }
  test::TempDir dir("cli");
  REQUIRE(std::system(("cd '" + dir.path().string() +
                       "' && ismrmrd_generate_cartesian_shepp_logan -m 32 -c 2 -r 3 -n 0.05 -o reps.h5 > /dev/null").c_str()) == 0);
  const Run r = mri_cli(dir, "recon --in reps.h5 --iterations 5 --out reps.nii --report r.json --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const NiftiVolume v = read_nifti(dir / "reps.nii");
  CHECK(v.dims == std::array<std::int64_t, 4>{32, 32, 1, 3});
  // Same object, different noise: each repetition is close to the others but not equal.
  const std::size_t n = 32 * 32;
  for (std::size_t t = 1; t < 3; ++t) {
    const std::span<const cfloat> a(v.data.data(), n), b(v.data.data() + t * n, n);
    const double e = test::relative_error(b, a);
    CHECK(e > 0);
    CHECK(e < 0.3); // measured 0.20 at noise level 0.05
  }
  CHECK_THAT(slurp(dir / "r.json"), test::contains("\"items\": 3"));
  // Two items at a time on threads: the same volumes in the same order.
  REQUIRE(mri_cli(dir, "recon --in reps.h5 --iterations 5 --jobs 2 --out reps2.nii --quiet").code == 0);
  const NiftiVolume v2 = read_nifti(dir / "reps2.nii");
  REQUIRE(v2.data.size() == v.data.size());
  for (std::size_t t = 0; t < 3; ++t) {
    const std::span<const cfloat> a(v.data.data() + t * n, n), b(v2.data.data() + t * n, n);
    CHECK(test::relative_error(b, a) < 1e-5);
  }
}


TEST_CASE("cli: recon on BART files equals bart pics -l2 -r L -w 1 (lambda and scale in BART's units)", "[cli]") {
  if (!on_path("bart")) {
    WARN("bart not installed: not compared");
    return;
  }
  test::TempDir dir("cli");
  REQUIRE(mri_cli(dir, "phantom --matrix 64,64 --traj radial --spokes 96 --readout 128 --snr 30 --out k --traj-out t").code == 0);
  REQUIRE(std::system(("cd '" + dir.path().string() +
                       "' && bart ones 2 64 64 s && bart pics -l2 -r 0.01 -w 1 -i 30 -t t k s theirs > /dev/null 2>&1").c_str()) == 0);
  REQUIRE(mri_cli(dir, "recon --traj t --kspace k --matrix 64,64 --fov 96,128 --lambda 0.01 --iterations 30 --out ours "
                       "--out ours.nii -q").code == 0);
  const NiftiVolume nii = read_nifti(dir / "ours.nii");
  CHECK(nii.voxel_mm[0] == Approx(1.5));
  CHECK(nii.voxel_mm[1] == Approx(2.0));
  const Image ours = bart::to_image(bart::read_cfl(dir / "ours")), theirs = bart::to_image(bart::read_cfl(dir / "theirs"));
  const double nrmse = test::relative_error(ours, theirs);
  INFO("NRMSE between mri recon and bart pics: " << nrmse);
  CHECK(nrmse < 0.02); // measured 0.006 (BART v0.8.00): CG paths differ in rounding and stopping
  CHECK(std::abs(best_scale(ours, theirs) - cfloat(1)) < 0.01f); // same scale, no hidden factor
  CHECK(std::abs(phantom_psnr(ours) - phantom_psnr(theirs)) < 0.1);
}

// PSNR of |x| against |truth| after the best real scale (BART's truth image, not our phantom).
double psnr_against(const Image &x, const Image &truth) {
  Image t(truth.grid()), m(x.grid());
  for (std::size_t i = 0; i < x.size(); ++i) t[i] = std::abs(truth[i]), m[i] = std::abs(x[i]);
  const cfloat s = best_scale(m, t);
  for (auto &v : m.values()) v *= s;
  return psnr(m, t);
}

TEST_CASE("cli: -R W and -R T on BART's undersampled 4-coil radial data: PSNR at least bart pics -R ... -e's", "[cli][sparse]") {
  if (!on_path("bart")) {
    WARN("bart not installed: not compared");
    return;
  }
  test::TempDir dir("cli");
  // 64^2 from 20 golden-angle spokes (5x below Nyquist's ~100), BART's phantom and its 4 maps.
  REQUIRE(std::system(("cd '" + dir.path().string() +
                       "' && bart traj -x 128 -y 20 -r -G t0 && bart scale 0.5 t0 t && bart phantom -s 4 -k -t t k"
                       " && bart phantom -S 4 -x 64 s && bart phantom -x 64 truth > /dev/null 2>&1").c_str()) == 0);
  const Image truth = bart::to_image(bart::read_cfl(dir / "truth"));
  for (const std::string term : {"W:3:0:0.001", "T:3:0:0.001"}) {
    REQUIRE(std::system(("cd '" + dir.path().string() + "' && OMP_NUM_THREADS=1 bart pics -R " + term +
                         " -e -i 50 -t t k s theirs > /dev/null 2>&1").c_str()) == 0);
    const Run r = mri_cli(dir, "recon --traj t --kspace k --sens s --matrix 64,64 -R " + term +
                                   " --iterations 50 --report r.json --out ours -q");
    INFO(term << ": " << r.err);
    REQUIRE(r.code == 0);
    const double ours = psnr_against(bart::to_image(bart::read_cfl(dir / "ours")), truth);
    const double theirs = psnr_against(bart::to_image(bart::read_cfl(dir / "theirs")), truth);
    WARN(term << ": mri recon " << ours << " dB, bart pics -e " << theirs << " dB");
    CHECK(ours >= theirs - 0.1);
    const nlohmann::json item = nlohmann::json::parse(slurp(dir / "r.json")).at("reconstructions").at(0);
    CHECK(item.at("solver") == "fista"); // one term
  }
}

TEST_CASE("cli: bad sparse terms exit 2 with one line naming the term", "[cli][sparse]") {
  test::TempDir dir("cli");
  REQUIRE(mri_cli(dir, "phantom --matrix 32,32 --traj radial --spokes 16 --readout 64 --out raw.h5").code == 0);
  for (const std::string bad : {"-R X:3:0:1", "-R W:3:0:-1", "-R W:3:1:0.1", "-R W:3:0:nan", "--regularizer lasso --lambda 1",
                                "-R T:3:0:0.1 -R W:3:0:0.1 --solver fista", "-R T:3:0:0.1 --tv-prox-iterations 0"}) {
    const Run r = mri_cli(dir, "recon --in raw.h5 --iterations 3 -q " + bad + " --out x.nii");
    INFO(bad << ": " << r.err);
    CHECK((r.code == 2 || r.code == 1));
    CHECK(lines(r.err) == 1);
  }
}

TEST_CASE("cli: a batch item that fails is reported, the others are written, exit 1", "[cli]") {
  test::TempDir dir("cli");
  // Two repetitions of one radial readout; the second's k lies far beyond the grid (a unit mistake).
  Radial16 r16(1);
  r16.input.slices = {{&r16.data}};
  write_ismrmrd(dir / "two.h5", r16.input);
  {
    ISMRMRD::Dataset ds((dir / "two.h5").c_str(), "dataset", false);
    ISMRMRD::Acquisition acq;
    ds.readAcquisition(0, acq);
    acq.idx().repetition = 1;
    for (int i = 0; i < 16; ++i) acq.traj(0, static_cast<std::uint16_t>(i)) = 100.0f; // beyond 3n/2 = 24
    ds.appendAcquisition(acq);
  }
  const Run r = mri_cli(dir, "recon --in two.h5 --traj-units cycles --iterations 3 --out two.nii --report r.json --quiet");
  CHECK(r.code == 1);
  CHECK_THAT(r.err, test::contains("repetition 1"));
  const NiftiVolume v = read_nifti(dir / "two.nii");
  REQUIRE(v.dims == std::array<std::int64_t, 4>{16, 16, 1, 2});
  double first = 0, second = 0;
  for (std::size_t i = 0; i < 256; ++i) first += std::abs(v.data[i]), second += std::abs(v.data[256 + i]);
  CHECK(first > 0);    // the good item is kept
  CHECK(second == 0);  // the failed one is zeros, in its place
  CHECK_THAT(slurp(dir / "r.json"), test::contains("\"failed_items\": 1"));
}

TEST_CASE("cli: a 3D koosh phantom through ISMRMRD and recon gives a 3D NIfTI of the phantom", "[cli]") {
  test::TempDir dir("cli");
  const NiftiVolume v = phantom_then_recon(dir, "--matrix 16,16,16 --traj koosh --spokes 400 --readout 32",
                                          "--iterations 10 --method nufft --out k3.png");
  REQUIRE(v.dims == std::array<std::int64_t, 4>{16, 16, 16, 1});
  CHECK(phantom_psnr(Image(Grid(16, 16, 16), v.data)) > 23.0); // measured 25.8 dB
  // The PNG: three central 16 x 16 slices side by side, 4 black columns apart (IHDR: big-endian).
  const std::string png = slurp(dir / "k3.png");
  REQUIRE(png.size() > 24);
  const auto be32 = [&](std::size_t at) {
    return (std::uint32_t(std::uint8_t(png[at])) << 24) | (std::uint32_t(std::uint8_t(png[at + 1])) << 16) |
           (std::uint32_t(std::uint8_t(png[at + 2])) << 8) | std::uint32_t(std::uint8_t(png[at + 3]));
  };
  CHECK(be32(16) == 3 * 16 + 2 * 4);
  CHECK(be32(20) == 16);
}

TEST_CASE("cli: every example of docs/cli.md runs, in order, in one directory", "[cli]") {
  test::TempDir dir("cli");
  std::ifstream doc(MRI_TEST_CLI_DOC);
  REQUIRE(doc);
  std::string line;
  int examples = 0;
  while (std::getline(doc, line)) {
    if (line.rfind("    mri ", 0) != 0) continue;
    ++examples;
    const Run r = mri_cli(dir, line.substr(8));
    INFO(line << "\n" << r.err);
    CHECK(r.code == 0);
  }
  CHECK(examples >= 8);
}

namespace {

// The header fields tests/io/nifti_header.py prints (an independent reader: Python's struct on the
// 348 bytes): "name v1 v2 ..." per line.
std::map<std::string, std::vector<double>> python_nifti_header(const test::TempDir &dir, const std::string &file) {
  const std::string cmd = "cd '" + dir.path().string() + "' && python3 '" MRI_TEST_NIFTI_HEADER_PY "' " + file + " > hdr.txt";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::map<std::string, std::vector<double>> fields;
  std::istringstream in(slurp(dir / "hdr.txt"));
  std::string line, name;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    ls >> name;
    double v = 0;
    while (ls >> v) fields[name].push_back(v);
  }
  return fields;
}

} // namespace

TEST_CASE("cli: an oblique off-centre multi-slice file: the NIfTI affine puts each voxel at its scanner position", "[cli]") {
  test::TempDir dir("cli");
  // read x phase = slice_dir = (0, -0.5, 0.866): a double-oblique stack of 3 slices 6 mm apart.
  const std::array<double, 3> read{0.8660254, 0.4330127, 0.25}, phase{-0.5, 0.75, 0.4330127}, slice{0, -0.5, 0.8660254},
      position{10, -20, 30};
  REQUIRE(mri_cli(dir, "phantom --matrix 32,32 --traj radial --spokes 48 --readout 64 --snr 40 --voxel 2 --slices 3 "
                       "--slice-spacing 6 --read-dir 0.8660254,0.4330127,0.25 --phase-dir -0.5,0.75,0.4330127 "
                       "--position 10,-20,30 --out obl.h5").code == 0);
  const Run r = mri_cli(dir, "recon --in obl.h5 --iterations 5 --out obl.nii.gz --out img.h5 --report r.json --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(slurp(dir / "r.json"), test::contains("from the acquisitions"));
  { // The ISMRMRD images carry each slice's geometry too.
    ISMRMRD::Dataset ds((dir / "img.h5").c_str(), "dataset", false);
    ISMRMRD::Image<float> im;
    ds.readImage("image_0", 2, im);
    const ISMRMRD::ImageHeader &h = im.getHead();
    for (int a = 0; a < 3; ++a) {
      CHECK(h.position[a] == Approx(position[a] + 12 * slice[a]).margin(1e-4)); // slice 2, 6 mm apart
      CHECK(h.read_dir[a] == Approx(read[a]).margin(1e-6));
      CHECK(h.slice_dir[a] == Approx(slice[a]).margin(1e-6));
    }
  }
  const NiftiVolume v = read_nifti(dir / "obl.nii.gz"); // libnifti
  CHECK(v.dims == std::array<std::int64_t, 4>{32, 32, 3, 1});
  const auto python = python_nifti_header(dir, "obl.nii.gz");
  const std::vector<double> &dim = python.at("dim");
  CHECK(std::vector<double>(dim.begin(), dim.begin() + 4) == std::vector<double>{3, 32, 32, 3});
  CHECK(python.at("qform_code").at(0) == NIFTI_XFORM_SCANNER_ANAT);
  CHECK(python.at("sform_code").at(0) == NIFTI_XFORM_SCANNER_ANAT);
  CHECK(python.at("xyz_units").at(0) == NIFTI_UNITS_MM);
  std::vector<std::array<std::array<double, 4>, 3>> affines{v.qform, v.sform};
  for (const char *name : {"qform", "sform"}) {
    const std::vector<double> &m = python.at(name);
    REQUIRE(m.size() == 12);
    affines.push_back({{{m[0], m[1], m[2], m[3]}, {m[4], m[5], m[6], m[7]}, {m[8], m[9], m[10], m[11]}}});
  }
  for (const auto &m : affines)
    for (const auto &[i, j, k] : {std::array<int, 3>{0, 0, 0}, {31, 31, 2}, {16, 16, 1}, {3, 20, 0}}) {
      for (int a = 0; a < 3; ++a) {
        const double lps = position[a] + (i - 16) * 2.0 * read[a] + (j - 16) * 2.0 * phase[a] + k * 6.0 * slice[a];
        const double got = m[a][0] * i + m[a][1] * j + m[a][2] * k + m[a][3];
        INFO("voxel " << i << "," << j << "," << k << " axis " << a);
        CHECK(got == Approx(a < 2 ? -lps : lps).margin(1e-3)); // NIfTI is RAS: LPS x and y negated
      }
    }
}

TEST_CASE("cli: slices that one NIfTI affine cannot hold are refused before the reconstruction", "[cli]") {
  test::TempDir dir("cli");
  Radial16 r16(8);
  ScannerGeometry a, b;
  b.position = {5, 0, 0}; // beside slice 0, in its plane: not a stack
  r16.input.slices = {{&r16.data, a}, {&r16.data, b}};
  write_ismrmrd(dir / "side.h5", r16.input);
  const Run r = mri_cli(dir, "recon --in side.h5 --out x.png --out side.nii --report r.json -q");
  CHECK(r.code == 1);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, test::contains("geometry[1].position"));
  CHECK(!std::filesystem::exists(dir / "x.png")); // nothing reconstructed, nothing written
  CHECK(!std::filesystem::exists(dir / "r.json"));
  REQUIRE(mri_cli(dir, "recon --in side.h5 --out side.cfl -q").code == 0); // BART output: no affine needed
}

TEST_CASE("cli: a file damaged mid-way fails the run naming the file, and nothing is written", "[cli]") {
  test::TempDir dir("cli");
  // 4 slices of 128 readouts: the reader's second block of 256 acquisitions holds slices 2 and 3.
  REQUIRE(mri_cli(dir, "phantom --matrix 16,16 --traj radial --spokes 128 --readout 32 --coils 2 --snr 20 --slices 4 "
                       "--out ms.h5").code == 0);
  REQUIRE(test::damage_late_heap(dir / "ms.h5"));
  const Run r = mri_cli(dir, "recon --in ms.h5 --iterations 2 --jobs 2 --out ms.nii.gz --report r.json --quiet");
  CHECK(r.code == 1);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, test::contains("ms.h5: dataset/data: element ") && test::contains("global heap"));
  std::vector<std::string> left;
  for (const auto &e : std::filesystem::directory_iterator(dir.path())) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  CHECK(left == std::vector<std::string>{"err.txt", "ms.h5", "out.txt"}); // no image, no report, no temporary
}

TEST_CASE("cli: a batch computes one Q per distinct trajectory and keeps the items in order", "[cli]") {
  test::TempDir dir("cli");
  REQUIRE(mri_cli(dir, "phantom --matrix 32,32 --traj radial --spokes 48 --readout 64 --snr 20 --slices 4 --out ms.h5").code == 0);
  REQUIRE(mri_cli(dir, "recon --in ms.h5 --iterations 5 --out one.nii --quiet").code == 0);
  // Two jobs, TMPDIR a folder of the test: the run's Q cache lives there and is removed.
  std::filesystem::create_directory(dir / "tmp");
  const Run r = mri_cli(dir, "recon --in ms.h5 --iterations 5 --jobs 2 --out two.nii --report r.json --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string json = slurp(dir / "r.json");
  const auto count = [&](const std::string &what) {
    std::size_t n = 0;
    for (std::size_t at = json.find(what); at != std::string::npos; at = json.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("\"q_cache\": \"miss\"") == 1); // the first item computed Q ...
  CHECK(count("\"q_cache\": \"hit\"") == 3);  // ... the three others loaded it
  CHECK(json.find("\"q_cache\": \"miss\"") < json.find("\"q_cache\": \"hit\""));
  // The same volumes in the same order as one job.
  const NiftiVolume a = read_nifti(dir / "one.nii"), b = read_nifti(dir / "two.nii");
  REQUIRE(a.dims == std::array<std::int64_t, 4>{32, 32, 4, 1}); // 4 slices 5 mm apart: stacked along z
  REQUIRE(b.dims == a.dims);
  const std::size_t n = 32 * 32;
  for (std::size_t s = 0; s < 4; ++s) {
    const std::span<const cfloat> x(a.data.data() + s * n, n), y(b.data.data() + s * n, n);
    CHECK(test::relative_error(y, x) < 1e-4);
    if (s > 0) CHECK(test::relative_error(std::span<const cfloat>(a.data.data(), n), x) > 1e-3); // own noise
  }
  REQUIRE(std::system(("cd '" + dir.path().string() + "' && TMPDIR=\"$PWD/tmp\" '" MRI_TEST_CLI
                       "' recon --in ms.h5 --iterations 2 --jobs 2 --out t.nii --quiet").c_str()) == 0);
  CHECK(std::filesystem::is_empty(dir / "tmp")); // the run's Q cache is gone
  // --no-q-share: no waiting, every item its own Q (none loaded), the same volumes.
  REQUIRE(mri_cli(dir, "recon --in ms.h5 --iterations 5 --jobs 2 --no-q-share --out own.nii --report own.json --quiet").code == 0);
  CHECK(slurp(dir / "own.json").find("\"q_cache\": \"hit\"") == std::string::npos);
  const NiftiVolume c = read_nifti(dir / "own.nii");
  REQUIRE(c.dims == a.dims);
  CHECK(test::relative_error(std::span<const cfloat>(c.data), std::span<const cfloat>(a.data)) < 1e-4);
}

namespace {

struct NimFree {
  void operator()(nifti_image *p) const { nifti_image_free(p); }
};

// Volumes as a NIfTI series (magnitude) with voxel sizes.
void write_series(const std::filesystem::path &path, const std::vector<RealVolume> &frames, const std::array<double, 3> &voxel) {
  std::vector<Image> images;
  for (const RealVolume &f : frames) {
    Image x(f.grid());
    for (std::size_t i = 0; i < f.size(); ++i) x[i] = f[i];
    images.push_back(std::move(x));
  }
  write_nifti(path, images, voxel);
}

using Nim = std::unique_ptr<nifti_image, NimFree>;

// Mean of component c of field `pair` over the voxels >= 4 from the faces of a 32^3 field file.
double interior_mean(const Nim &nim, std::int64_t pair, int c) {
  const auto *w = static_cast<const float *>(nim->data);
  double sum = 0;
  std::int64_t n = 0;
  for (std::int64_t z = 4; z < 28; ++z)
    for (std::int64_t y = 4; y < 28; ++y)
      for (std::int64_t x = 4; x < 28; ++x, ++n) sum += w[x + 32 * (y + 32 * (z + 32 * (pair + nim->nt * c)))];
  return sum / static_cast<double>(n);
}

} // namespace

TEST_CASE("cli: motion recovers a translation of a NIfTI series, fields as NIfTI displacement vectors", "[cli]") {
  test::TempDir dir("cli");
  const Grid g(32, 32, 32);
  const std::array<double, 3> voxel{2.0, 2.0, 3.0};
  const DisplacementField shift = synthetic_field(g, SyntheticMotion::Translation, 1.5); // (1.5, -0.9, 0.6) voxels
  std::vector<RealVolume> frames{textured_volume(g, 7)};
  for (int t = 1; t < 3; ++t) frames.push_back(apply_motion(frames.back(), shift));
  write_series(dir / "series.nii.gz", frames, voxel);
  const Run r = mri_cli(dir, "motion --in series.nii.gz --out w.nii.gz --report w.json --backend cpu --quiet");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const Nim nim(nifti_image_read((dir / "w.nii.gz").c_str(), 1));
  REQUIRE(nim);
  CHECK(nim->intent_code == NIFTI_INTENT_DISPVECT);
  REQUIRE(nim->ndim == 5);
  CHECK((nim->nx == 32 && nim->ny == 32 && nim->nz == 32 && nim->nt == 2 && nim->nu == 3));
  const auto python = python_nifti_header(dir, "w.nii.gz");
  const std::vector<double> &dim = python.at("dim");
  CHECK(std::vector<double>(dim.begin(), dim.begin() + 6) == std::vector<double>{5, 32, 32, 32, 2, 3});
  CHECK(python.at("intent_code").at(0) == NIFTI_INTENT_DISPVECT);
  // The mean of each component over the voxels >= 4 from the faces, in mm: within 0.1 voxel of
  // the shift (measured: 3.021, -1.817, 1.790 and 3.007, -1.826, 1.776 mm for 3, -1.8, 1.8:
  // within 0.013 voxel).
  const std::array<double, 3> truth{1.5, -0.9, 0.6};
  for (std::int64_t pair = 0; pair < 2; ++pair)
    for (int c = 0; c < 3; ++c) {
      const double mean = interior_mean(nim, pair, c);
      WARN("pair " << pair << " component " << c << ": " << mean << " mm, truth " << truth[c] * voxel[c]);
      CHECK(std::abs(mean - truth[c] * voxel[c]) < 0.1 * voxel[c]);
    }
  const std::string json = slurp(dir / "w.json");
  for (const char *field : {"\"std_log_det\"", "\"solver_ms\"", "\"fixed\": 1", "\"units\": \"mm\""})
    CHECK_THAT(json, test::contains(field));
  // To a reference frame, in voxels: frame 2 is two shifts from frame 0.
  REQUIRE(mri_cli(dir, "motion --in series.nii.gz --reference 0 --units voxels --out r.nii --backend cpu --quiet").code == 0);
  const Nim ref(nifti_image_read((dir / "r.nii").c_str(), 1));
  REQUIRE(ref);
  for (int c = 0; c < 3; ++c) CHECK(std::abs(interior_mean(ref, 1, c) - 2 * truth[c]) < 0.2);
  // In RAS mm: the series' qform is the diagonal of its voxel sizes, so RAS mm equals mm along i, j, k.
  REQUIRE(mri_cli(dir, "motion --in series.nii.gz --units ras --out ras.nii --report ras.json --backend cpu --quiet").code == 0);
  const Nim in_ras(nifti_image_read((dir / "ras.nii").c_str(), 1));
  REQUIRE(in_ras);
  CHECK(std::string(in_ras->intent_name) == "disp mm RAS");
  for (int c = 0; c < 3; ++c) CHECK(interior_mean(in_ras, 0, c) == Approx(interior_mean(nim, 0, c)).epsilon(1e-6));
  CHECK_THAT(slurp(dir / "ras.json"), test::contains("\"units\": \"ras\""));
}

TEST_CASE("cli: motion refuses a single frame, frames of different sizes and non-finite voxels, in one line", "[cli]") {
  test::TempDir dir("cli");
  const RealVolume a = textured_volume(Grid(16, 16, 16), 1), b = textured_volume(Grid(16, 16, 12), 2);
  write_series(dir / "one.nii", {a}, {1, 1, 1});
  write_series(dir / "other.nii", {b}, {1, 1, 1});
  RealVolume nan = a;
  nan.at(3, 4, 5) = std::nanf("");
  write_series(dir / "nan.nii", {a, nan}, {1, 1, 1});
  const auto refused = [&](const std::string &args, int code, const std::string &says) {
    const Run r = mri_cli(dir, "motion " + args);
    INFO(args << ": " << r.err);
    CHECK(r.code == code);
    CHECK(lines(r.err) == 1);
    CHECK_THAT(r.err, test::contains(says));
  };
  refused("--in one.nii --out w.nii", 1, "one.nii: one frame");
  refused("--in one.nii other.nii --out w.nii", 1, "other.nii: frames of 16 x 16 x 12");
  refused("--in nan.nii --out w.nii", 1, "frame 1 voxel 3,4,5");
  refused("--in one.nii one.nii --out w.png", 2, "--out w.png");
  refused("--in one.nii one.nii --reference 2 --out w.nii", 2, "--reference 2");
  CHECK(!std::filesystem::exists(dir / "w.nii"));
}

#ifdef MRI_TEST_MPIEXEC
// Issue 16: `mri recon` under mpirun (ctest label mpi; hidden from a plain run of mri_tests).
namespace {

// `mpirun -n <ranks> mri`, one OpenMP thread per rank and in the one-process runs compared with
// it (the images are then bitwise equal). -q: mpirun's own notices stay out of stderr; as root
// mpirun refuses to start without --allow-run-as-root; --oversubscribe: 3 ranks on 2 cores.
std::string mpirun(int ranks) {
  return std::string("OMP_NUM_THREADS=1 " MRI_TEST_MPIEXEC " -q --oversubscribe") +
         (::getuid() == 0 ? " --allow-run-as-root" : "") + " -n " + std::to_string(ranks);
}

long occurrences(const std::string &text, const std::string &what) {
  long n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The report's reconstructions (one per item that ran, in item order, then one per failed item),
// each reconstructed one on a rank of the run: which rank ran which item is the dispatch's (a
// rank takes the next item when a worker is free), not fixed.
nlohmann::json reconstructions_on_ranks(const std::filesystem::path &report, int ranks) {
  const nlohmann::json all = nlohmann::json::parse(slurp(report)).at("reconstructions");
  for (const nlohmann::json &item : all) {
    if (item.contains("error")) continue;
    INFO(item.dump());
    REQUIRE(item.contains("rank"));
    CHECK(item.at("rank").get<int>() >= 0);
    CHECK(item.at("rank").get<int>() < ranks);
  }
  return all;
}

// `repetitions` repetitions of one radial readout; those in `beyond` have k far beyond the grid
// (one trajectory: one Q key), so their reconstruction fails.
void write_repetitions(const std::filesystem::path &path, std::uint16_t repetitions, const std::set<std::uint16_t> &beyond) {
  Radial16 r16(1);
  r16.input.slices = {{&r16.data}};
  write_ismrmrd(path, r16.input);
  ISMRMRD::Dataset ds(path.c_str(), "dataset", false);
  for (std::uint16_t rep = 1; rep < repetitions; ++rep) {
    ISMRMRD::Acquisition acq;
    ds.readAcquisition(0, acq);
    acq.idx().repetition = rep;
    if (beyond.count(rep))
      for (int i = 0; i < 16; ++i) acq.traj(0, static_cast<std::uint16_t>(i)) = 100.0f; // beyond 3n/2 = 24
    ds.appendAcquisition(acq);
  }
}

// The sum of |voxel| of each 16 x 16 frame of a NIfTI of `frames` frames.
std::vector<double> frame_sums(const std::filesystem::path &nifti, std::int64_t frames) {
  const NiftiVolume v = read_nifti(nifti);
  REQUIRE(v.dims == std::array<std::int64_t, 4>{16, 16, 1, frames});
  std::vector<double> sums(static_cast<std::size_t>(frames), 0.0);
  for (std::size_t item = 0; item < sums.size(); ++item)
    for (std::size_t i = 0; i < 256; ++i) sums[item] += std::abs(v.data[256 * item + i]);
  return sums;
}

} // namespace

TEST_CASE("mpi: 2, 3 and 4 ranks write the images of one process, bitwise, with one Q", "[.mpi]") {
  test::TempDir dir("mpi");
  REQUIRE(mri_cli(dir, "phantom --matrix 32,32 --traj radial --spokes 32 --readout 64 --snr 30 --coils 2 --slices 5 "
                       "--out ms.h5").code == 0);
  const std::string recon = "recon --in ms.h5 --iterations 5 --quiet --report r.json --out ";
  REQUIRE(mri_cli(dir, recon + "one.nii", "OMP_NUM_THREADS=1").code == 0);
  const std::string one = slurp(dir / "one.nii");
  // --jobs 2: two workers per rank, so two items in flight per rank (one may wait for Q there).
  for (const auto &[ranks, jobs] : {std::pair{2, ""}, std::pair{3, ""}, std::pair{2, " --jobs 2"}}) {
    const Run r = mri_cli(dir, recon + "mpi.nii" + jobs, mpirun(ranks));
    INFO(ranks << " ranks" << jobs << ": " << r.err);
    REQUIRE(r.code == 0);
    CHECK(slurp(dir / "mpi.nii") == one); // every item, in item order, whichever rank ran it
    CHECK(reconstructions_on_ranks(dir / "r.json", ranks).size() == 5); // every item once
    const std::string report = slurp(dir / "r.json");
    CHECK(occurrences(report, "\"q_cache\": \"miss\"") == 1); // one Q for the five slices, all ranks
    CHECK(occurrences(report, "\"q_cache\": \"hit\"") == 4);
  }
  // More ranks than items: the ranks without one wait, as they should.
  REQUIRE(mri_cli(dir, "phantom --matrix 32,32 --traj radial --spokes 32 --readout 64 --snr 30 --slices 2 --out two.h5").code == 0);
  REQUIRE(mri_cli(dir, "recon --in two.h5 --iterations 5 --quiet --out one2.nii", "OMP_NUM_THREADS=1").code == 0);
  REQUIRE(mri_cli(dir, "recon --in two.h5 --iterations 5 --quiet --report r2.json --out mpi2.nii", mpirun(4)).code == 0);
  CHECK(slurp(dir / "mpi2.nii") == slurp(dir / "one2.nii"));
  CHECK(reconstructions_on_ranks(dir / "r2.json", 4).size() == 2);
}

TEST_CASE("mpi: an item failing on a rank is reported with its rank, the others are written, exit 1", "[.mpi]") {
  test::TempDir dir("mpi");
  write_repetitions(dir / "three.h5", 3, {1});
  const Run r = mri_cli(dir, "recon --in three.h5 --traj-units cycles --iterations 3 --out three.nii --report r.json --quiet",
                        mpirun(2));
  CHECK(r.code == 1);
  CHECK(lines(r.err) == 1);
  CHECK(std::regex_search(r.err, std::regex("repetition 1 [^:]*: rank [01]: ")));
  const std::vector<double> sums = frame_sums(dir / "three.nii", 3);
  CHECK(sums[0] > 0);
  CHECK(sums[1] == 0); // the failed item: zeros, in its place
  CHECK(sums[2] > 0);  // the other rank went on after the failure
  CHECK_THAT(slurp(dir / "r.json"), test::contains("\"failed_items\": 1"));
  CHECK(reconstructions_on_ranks(dir / "r.json", 2).size() == 3);
}

TEST_CASE("mpi: when the item computing a shared Q fails, the items waiting for it run (and fail alike), no hang",
          "[.mpi]") {
  test::TempDir dir("mpi");
  // Repetitions 1-3 share one trajectory (one Q key), beyond the grid: the first handed out leads
  // and fails. Those handed out while it runs (two workers per rank: likely) are held for it on
  // their ranks, then released to compute Q themselves; those handed out after it, lead in turn.
  write_repetitions(dir / "four.h5", 4, {1, 2, 3});
  const Run r = mri_cli(dir, "recon --in four.h5 --traj-units cycles --iterations 3 --jobs 2 --out four.nii "
                             "--report r.json --quiet", mpirun(2));
  INFO(r.err);
  CHECK(r.code == 1);
  CHECK(lines(r.err) == 3);
  for (int rep : {1, 2, 3})
    CHECK(std::regex_search(r.err, std::regex("repetition " + std::to_string(rep) + " [^:]*: rank [01]: ")));
  const std::vector<double> sums = frame_sums(dir / "four.nii", 4);
  CHECK(sums[0] > 0);
  CHECK((sums[1] == 0 && sums[2] == 0 && sums[3] == 0));
  CHECK_THAT(slurp(dir / "r.json"), test::contains("\"failed_items\": 3"));
}

TEST_CASE("mpi: a rank that cannot open the file: one line naming the rank, exit 1, nothing written", "[.mpi]") {
  test::TempDir dir("mpi");
  REQUIRE(mri_cli(dir, "phantom --matrix 32,32 --traj radial --spokes 32 --readout 64 --slices 2 --out ms.h5").code == 0);
  // Rank 1 is given another (missing) file, as on a host where the path does not exist.
  const Run r = mri_cli(dir, "recon --in ms.h5 --out x.nii --quiet : -n 1 '" MRI_TEST_CLI "' recon --in gone.h5 --out x.nii",
                        mpirun(1));
  CHECK(r.code == 1);
  CHECK(lines(r.err) == 1);
  CHECK_THAT(r.err, test::contains("mri: rank 1 of 2: gone.h5"));
  CHECK(!std::filesystem::exists(dir / "x.nii"));
}
#endif
