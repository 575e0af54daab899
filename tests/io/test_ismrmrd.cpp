// ISMRMRD raw data: our writer and reader round trip, units detection, noise covariance, a file
// made by ISMRMRD's own tools against that package's own reconstruction, and bad files.
#include "catch.hpp"
#include "mri/error.hpp"
#include "mri/fourier.hpp"
#include "mri/io/ismrmrd.hpp"
#include "mri/phantom.hpp"
#include "answer_within.hpp"
#include "test_support.hpp"

#include <ismrmrd/dataset.h>
#include <ismrmrd/xml.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>


using namespace mri;

namespace {

// Two coils of radial phantom data (coil 1 = coil 0 times 0.5i) and two noise scans with
// standard deviations 0.1 (coil 0) and 0.3 (coil 1), independent.
struct Fixture {
  Grid grid{32, 32};
  KSpaceData data;
  std::vector<std::vector<cfloat>> noise;
  Fixture() {
    Trajectory t = traj::radial(grid, 16, 40);
    std::vector<cfloat> s = Phantom::shepp_logan_2d().kspace(t, grid);
    const std::size_t m = s.size();
    for (std::size_t i = 0; i < m; ++i) s.push_back(s[i] * cfloat(0, 0.5f));
    data = KSpaceData(std::move(t), std::move(s), {}, 2);
    std::mt19937_64 rng(5);
    std::normal_distribution<float> g(0, 1);
    for (int scan = 0; scan < 2; ++scan) {
      std::vector<cfloat> n;
      for (int c = 0; c < 2; ++c)
        for (int i = 0; i < 4000; ++i) {
          const float sd = (c == 0 ? 0.1f : 0.3f) / std::sqrt(2.0f);
          n.emplace_back(sd * g(rng), sd * g(rng));
        }
      noise.push_back(std::move(n));
    }
  }
  IsmrmrdWriteInput input(TrajUnits units) const {
    IsmrmrdWriteInput in;
    in.header.encoded_matrix = in.header.recon_matrix = {32, 32, 1};
    in.header.encoded_fov_mm = in.header.recon_fov_mm = {64, 64, 5};
    in.header.trajectory = "radial";
    in.header.coils = 2;
    in.slices = {{&data}};
    in.readouts = 16;
    in.units = units;
    in.noise = noise;
    return in;
  }
};

// A Cartesian 32x32 header without receiverChannels and one 8-sample acquisition.
void write_header_and(const std::filesystem::path &path, int channels, bool noise) {
  ISMRMRD::Dataset ds(path.c_str(), "dataset", true);
  ISMRMRD::IsmrmrdHeader h;
  ISMRMRD::Encoding e;
  e.encodedSpace.matrixSize = ISMRMRD::MatrixSize(32, 32, 1);
  e.reconSpace = e.encodedSpace;
  e.trajectory = ISMRMRD::TrajectoryType::CARTESIAN;
  h.encoding.push_back(e);
  std::ostringstream os;
  ISMRMRD::serialize(h, os);
  ds.writeHeader(os.str());
  ISMRMRD::Acquisition a(8, static_cast<std::uint16_t>(channels), 0);
  std::fill(a.getDataPtr(), a.getDataPtr() + a.getNumberOfDataElements(), std::complex<float>(1, 0)); // not left uninitialised
  if (noise) a.setFlag(ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT);
  ds.appendAcquisition(a);
}

bool tool_on_path(const char *tool) { return std::system((std::string("command -v ") + tool + " > /dev/null 2>&1").c_str()) == 0; }

} // namespace

TEST_CASE("ismrmrd: write then read returns the samples, trajectory, counts and header", "[ismrmrd]") {
  test::TempDir dir("ismrmrd");
  const Fixture f;
  write_ismrmrd(dir / "raw.h5", f.input(TrajUnits::CyclesPerFov));
  const IsmrmrdData d = read_ismrmrd(dir / "raw.h5");
  CHECK(d.header.encoded_matrix == std::array<int, 3>{32, 32, 1});
  CHECK(d.header.recon_fov_mm[0] == Approx(64));
  CHECK(d.header.trajectory == "radial");
  CHECK(d.header.coils == 2);
  CHECK(d.counts.acquisitions == 18);
  CHECK(d.counts.imaging == 16);
  CHECK(d.counts.noise == 2);
  REQUIRE(d.items.size() == 1);
  const KSpaceData &back = d.items[0].data;
  CHECK(back.coils() == 2);
  REQUIRE(back.samples_per_coil() == f.data.samples_per_coil());
  CHECK(back.samples() == f.data.samples()); // coil-major, bit for bit
  for (std::size_t m = 0; m < back.samples_per_coil(); ++m) {
    CHECK(back.trajectory()[m].kx == f.data.trajectory()[m].kx);
    CHECK(back.trajectory()[m].ky == f.data.trajectory()[m].ky);
  }
  CHECK(d.units == TrajUnits::CyclesPerFov); // auto: |k| up to 16 > 0.5
}

TEST_CASE("ismrmrd: sample times from sample_time_us and center_sample, kept by prewhiten", "[ismrmrd]") {
  // Off-resonance correction needs each sample's time from the echo (KSpaceData::sample_times):
  // sample i of an acquisition at time_offset + (i - center_sample) * sample_time_us.
  test::TempDir dir("ismrmrd");
  const Fixture f;
  IsmrmrdWriteInput in = f.input(TrajUnits::CyclesPerFov);
  in.sample_time_us = 4; // the writer puts center_sample at 20 of each readout's 40 samples
  write_ismrmrd(dir / "dwell.h5", in);
  CHECK(read_ismrmrd(dir / "dwell.h5").items.at(0).data.sample_times().empty()); // not asked: none
  IsmrmrdReadOptions o;
  o.sample_times = true;
  o.time_offset = 1e-3;
  const IsmrmrdData d = read_ismrmrd(dir / "dwell.h5", o);
  const KSpaceData &k = d.items.at(0).data;
  REQUIRE(k.sample_times().size() == k.samples_per_coil());
  double worst = 0;
  for (std::size_t m = 0; m < k.samples_per_coil(); ++m) {
    const double expected = 1e-3 + (static_cast<double>(m % 40) - 20) * 4e-6;
    worst = std::max(worst, std::abs(k.sample_times()[m] - expected));
  }
  CHECK(worst <= 1e-9); // float32 times of ~1 ms: a few 1e-11 s of rounding
  CHECK(k.samples() == f.data.samples());
  const KSpaceData white = prewhiten(k, noise_covariance(d.noise, 2));
  CHECK(std::vector<float>(white.sample_times().begin(), white.sample_times().end()) ==
        std::vector<float>(k.sample_times().begin(), k.sample_times().end()));

  using mri::test::contains; // Catch2 v2 and v3 (catch.hpp)
  o.time_offset = 0; // samples before the echo would have negative times
  CHECK_THROWS_WITH(read_ismrmrd(dir / "dwell.h5", o), contains("sample 0 time") && contains("center_sample 20"));
  o.time_offset = NAN;
  CHECK_THROWS_WITH(read_ismrmrd(dir / "dwell.h5", o), contains("IsmrmrdReadOptions::time_offset"));
  o.time_offset = 1e-3;
  write_ismrmrd(dir / "nodwell.h5", f.input(TrajUnits::CyclesPerFov)); // sample_time_us 0
  CHECK_THROWS_WITH(read_ismrmrd(dir / "nodwell.h5", o), contains("sample_time_us = 0"));
}

TEST_CASE("ismrmrd: slices with their geometry: one item each, geometry read back; none without", "[ismrmrd]") {
  test::TempDir dir("ismrmrd");
  const Fixture f;
  IsmrmrdWriteInput in = f.input(TrajUnits::CyclesPerFov);
  ScannerGeometry g;
  g.read_dir = {0, 1, 0}, g.phase_dir = {0, 0, 1}, g.slice_dir = {1, 0, 0}; // a sagittal slice
  g.position = {-12.5, 3.25, 40};
  ScannerGeometry h = g;
  h.position[0] += 4;
  in.slices = {{&f.data, g}, {&f.data, h}};
  write_ismrmrd(dir / "two.h5", in);
  const IsmrmrdData d = read_ismrmrd(dir / "two.h5");
  REQUIRE(d.items.size() == 2);
  CHECK(d.items[1].slice == 1);
  CHECK(d.items[1].data.samples() == f.data.samples());
  REQUIRE(d.items[0].geometry);
  CHECK(*d.items[0].geometry == g); // float32 in the file: these values are exact
  CHECK(*d.items[1].geometry == h);
  write_ismrmrd(dir / "none.h5", f.input(TrajUnits::CyclesPerFov));
  CHECK(!read_ismrmrd(dir / "none.h5").items.at(0).geometry); // zero directions: unknown
}

TEST_CASE("ismrmrd: normalised trajectories are detected, and a unit that contradicts |k| warns", "[ismrmrd]") {
  test::TempDir dir("ismrmrd");
  const Fixture f;
  write_ismrmrd(dir / "norm.h5", f.input(TrajUnits::Normalized));
  const IsmrmrdData d = read_ismrmrd(dir / "norm.h5");
  CHECK(d.units == TrajUnits::Normalized);
  CHECK(d.max_abs_k <= 0.5);
  const auto &t = d.items[0].data.trajectory();
  for (std::size_t m = 0; m < t.size(); ++m) CHECK(t[m].kx == Approx(f.data.trajectory()[m].kx).margin(1e-5));
  IsmrmrdReadOptions cycles;
  cycles.units = TrajUnits::CyclesPerFov;
  const IsmrmrdData wrong = read_ismrmrd(dir / "norm.h5", cycles);
  REQUIRE(!wrong.notes.empty());
  CHECK_THAT(wrong.notes[0], test::contains("warning") && test::contains("normalized"));
}

TEST_CASE("ismrmrd: the noise covariance of the noise scans", "[ismrmrd]") {
  test::TempDir dir("ismrmrd");
  const Fixture f;
  write_ismrmrd(dir / "raw.h5", f.input(TrajUnits::CyclesPerFov));
  const IsmrmrdData d = read_ismrmrd(dir / "raw.h5");
  const std::vector<cdouble> cov = noise_covariance(d.noise, 2);
  REQUIRE(cov.size() == 4);
  CHECK(cov[0].real() == Approx(0.01).epsilon(0.05)); // 8000 samples: 1.6 % standard error
  CHECK(cov[3].real() == Approx(0.09).epsilon(0.05));
  CHECK(std::abs(cov[1]) < 0.004);                     // independent coils
  CHECK(std::abs(cov[1] - std::conj(cov[2])) < 1e-12); // Hermitian
}

TEST_CASE("ismrmrd: a file of ismrmrd_generate_cartesian_shepp_logan matches ismrmrd_recon_cartesian_2d", "[ismrmrd]") {
  if (!tool_on_path("ismrmrd_generate_cartesian_shepp_logan") || !tool_on_path("ismrmrd_recon_cartesian_2d")) {
    WARN("ismrmrd-tools not installed (scripts/install-deps.sh): not compared");
    return;
  }
  test::TempDir dir("ismrmrd");
  const std::string file = (dir / "sl.h5").string();
  REQUIRE(std::system(("ismrmrd_generate_cartesian_shepp_logan -m 48 -c 3 -C -o '" + file + "' > /dev/null").c_str()) == 0);
  const IsmrmrdData d = read_ismrmrd(file);
  CHECK(d.header.encoded_matrix == std::array<int, 3>{96, 48, 1}); // readout oversampled 2x
  CHECK(d.header.recon_matrix == std::array<int, 3>{48, 48, 1});
  CHECK(d.header.coils == 3);
  CHECK(d.counts.noise == 1);
  CHECK(d.counts.imaging == 48);
  REQUIRE(d.items.size() == 1);
  const KSpaceData &k = d.items[0].data;
  CHECK(k.coils() == 3);
  CHECK(k.samples_per_coil() == 96u * 48u);
  // Root-sum-of-squares of the per-coil adjoints, cropped to the recon matrix, as theirs.
  const Grid g = d.header.encoded_grid();
  const FourierOperator F(k.trajectory(), g);
  std::vector<double> rss(48 * 48, 0.0);
  for (int c = 0; c < 3; ++c) {
    Image x(g);
    F.adjoint(std::span<const cfloat>(k.samples().data() + c * k.samples_per_coil(), k.samples_per_coil()), x);
    for (int y = 0; y < 48; ++y)
      for (int xi = 0; xi < 48; ++xi) rss[y * 48 + xi] += std::norm(x.at(xi + 24, y));
  }
  REQUIRE(std::system(("ismrmrd_recon_cartesian_2d '" + file + "' > /dev/null 2>&1").c_str()) == 0);
  ISMRMRD::Dataset ds(file.c_str(), "dataset", false);
  ISMRMRD::Image<float> theirs;
  ds.readImage("cpp", 0, theirs);
  REQUIRE(theirs.getNumberOfDataElements() == 48u * 48u);
  // Equal up to scale: the correlation of the two magnitude images.
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < rss.size(); ++i) {
    const double a = std::sqrt(rss[i]), b = theirs.getDataPtr()[i];
    sab += a * b, saa += a * a, sbb += b * b;
  }
  CHECK(sab / std::sqrt(saa * sbb) > 0.999);
}

TEST_CASE("ismrmrd: bad files are IoError / InvalidArgument naming the file", "[ismrmrd]") {
  test::TempDir dir("ismrmrd");
  const std::string missing = (dir / "missing.h5").string();
  CHECK_THROWS_MATCHES(read_ismrmrd(missing), IoError, Catch::Matchers::Predicate<IoError>([&](const IoError &e) {
                         return std::string(e.what()).find(missing) != std::string::npos;
                       }));
  CHECK(!std::filesystem::exists(missing)); // the reader created nothing
  { std::ofstream(dir / "text.h5") << "not hdf5\n"; }
  CHECK_THROWS_AS(read_ismrmrd(dir / "text.h5"), IoError);
  SECTION("no header") {
    ISMRMRD::Dataset ds((dir / "nohdr.h5").c_str(), "dataset", true);
    ds.appendAcquisition(ISMRMRD::Acquisition(8, 1, 0));
  }
  SECTION("channels disagree with the header") {
    const Fixture f;
    IsmrmrdWriteInput in = f.input(TrajUnits::CyclesPerFov);
    write_ismrmrd(dir / "ch.h5", in);
    ISMRMRD::Dataset ds((dir / "ch.h5").c_str(), "dataset", false);
    ds.appendAcquisition(ISMRMRD::Acquisition(40, 3, 2)); // 3 channels, header says 2
  }
  SECTION("a NaN sample") {
    const Fixture f;
    write_ismrmrd(dir / "nan.h5", f.input(TrajUnits::CyclesPerFov));
    ISMRMRD::Dataset ds((dir / "nan.h5").c_str(), "dataset", false);
    ISMRMRD::Acquisition acq(40, 2, 2);
    std::fill(acq.getDataPtr(), acq.getDataPtr() + acq.getNumberOfDataElements(), std::complex<float>(0, 0)); // not left uninitialised
    acq.data(3, 1) = std::complex<float>(std::nanf(""), 0);
    ds.appendAcquisition(acq);
  }
  SECTION("a NaN noise sample (fuzzing: it made every prewhitened sample NaN)") {
    const Fixture f;
    IsmrmrdWriteInput in = f.input(TrajUnits::CyclesPerFov);
    in.noise[0][5] = std::complex<float>(std::nanf(""), 0); // coil 0, sample 5 of the first scan
    write_ismrmrd(dir / "noisenan.h5", in);
  }
  SECTION("a radial header, an acquisition without trajectory") {
    const Fixture f;
    write_ismrmrd(dir / "notraj.h5", f.input(TrajUnits::CyclesPerFov));
    ISMRMRD::Dataset ds((dir / "notraj.h5").c_str(), "dataset", false);
    ds.appendAcquisition(ISMRMRD::Acquisition(40, 2, 0));
  }
  SECTION("an acquisition without samples that discards some (fuzzing: UBSan, an offset to its null array)") {
    write_header_and(dir / "discard.h5", 1, false);
    ISMRMRD::Dataset ds((dir / "discard.h5").c_str(), "dataset", false);
    ISMRMRD::Acquisition a(0, 1, 0);
    a.discard_pre() = 6656;
    ds.appendAcquisition(a);
  }
  SECTION("only noise scans") { write_header_and(dir / "noise.h5", 1, true); }
  SECTION("zero coils") { write_header_and(dir / "zero.h5", 0, false); }
  if (std::filesystem::exists(dir / "nohdr.h5")) CHECK_THROWS_WITH(read_ismrmrd(dir / "nohdr.h5"), test::contains("no XML header"));
  if (std::filesystem::exists(dir / "nan.h5"))
    CHECK_THROWS_WITH(read_ismrmrd(dir / "nan.h5"), test::contains("acquisition 18 coil 1 sample 3"));
  if (std::filesystem::exists(dir / "noisenan.h5"))
    CHECK_THROWS_WITH(read_ismrmrd(dir / "noisenan.h5"), test::contains("acquisition 0 coil 0 sample 5"));
  if (std::filesystem::exists(dir / "notraj.h5"))
    CHECK_THROWS_WITH(read_ismrmrd(dir / "notraj.h5"), test::contains("acquisition 18 has no trajectory"));
  if (std::filesystem::exists(dir / "discard.h5"))
    CHECK_THROWS_WITH(read_ismrmrd(dir / "discard.h5"),
                      test::contains("acquisition 1: discard_pre + discard_post = 6656 of 0 samples"));
  if (std::filesystem::exists(dir / "noise.h5"))
    CHECK_THROWS_WITH(read_ismrmrd(dir / "noise.h5"), test::contains("imaging acquisitions = 0"));
  if (std::filesystem::exists(dir / "zero.h5")) CHECK_THROWS_WITH(read_ismrmrd(dir / "zero.h5"), test::contains("no coil data"));
  if (std::filesystem::exists(dir / "ch.h5"))
    CHECK_THROWS_WITH(read_ismrmrd(dir / "ch.h5"), test::contains("3 active channels, the header 2"));
}

TEST_CASE("ismrmrd: write_ismrmrd refuses inconsistent input and leaves nothing behind", "[ismrmrd]") {
  test::TempDir dir("ismrmrd");
  const Fixture f;
  IsmrmrdWriteInput in = f.input(TrajUnits::CyclesPerFov);
  in.readouts = 7; // 640 samples are not 7 equal readouts
  CHECK_THROWS_AS(write_ismrmrd(dir / "bad.h5", in), InvalidArgument);
  in.readouts = 16;
  CHECK_THROWS_AS(write_ismrmrd(dir / "no-such-dir" / "x.h5", in), IoError);
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("ismrmrd: prewhitening turns correlated coil noise into white noise", "[ismrmrd]") {
  // Noise n = A z (z white, unit variance), A mixing 3 coils: covariance A A^H.
  const cfloat a[3][3] = {{{1, 0}, {0, 0}, {0, 0}}, {{0.5f, 0.3f}, {0.8f, 0}, {0, 0}}, {{0.2f, -0.1f}, {0.4f, 0.2f}, {2, 0}}};
  const auto mixed = [&](std::size_t n, std::uint64_t seed) {
    const std::vector<cfloat> z = test::random_complex(3 * n, seed); // E|z|^2 = 2 per sample
    std::vector<cfloat> out(3 * n);
    for (std::size_t s = 0; s < n; ++s)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) out[i * n + s] += a[i][j] * z[j * n + s] / std::sqrt(2.0f);
    return out;
  };
  const std::size_t n = 20000;
  const std::vector<cdouble> cov = noise_covariance({mixed(n, 1)}, 3);
  const Grid g(8, 8);
  const KSpaceData noise_only(test::random_trajectory(g, n, 3), mixed(n, 2), {}, 3);
  const KSpaceData white = prewhiten(noise_only, cov);
  const std::vector<cdouble> after = noise_covariance({white.samples()}, 3);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) CHECK(std::abs(after[i * 3 + j] - cdouble(i == j ? 1 : 0)) < 0.04);
  CHECK(std::abs(cov[8] - cdouble(4.0 + 0.16 + 0.05 + 0.2)) < 0.2); // the control: |a_2|^2 = 4.41
  std::vector<cdouble> singular(9, cdouble(1));
  CHECK_THROWS_AS(prewhiten(noise_only, singular), InvalidArgument);
  CHECK_THROWS_AS(prewhiten(noise_only, {}), InvalidArgument);
}

TEST_CASE("ismrmrd: images written into a new file are read back by libismrmrd", "[ismrmrd]") {
  test::TempDir dir("ismrmrd");
  const Grid g(6, 4, 3);
  const std::vector<Image> images{test::random_image(g, 1), test::random_image(g, 2)};
  write_ismrmrd_images(dir / "m.h5", images, {1.5, 2, 3});
  write_ismrmrd_images(dir / "c.h5", images, {1, 1, 1}, true);
  ISMRMRD::Dataset m((dir / "m.h5").c_str(), "dataset", false);
  ISMRMRD::Dataset c((dir / "c.h5").c_str(), "dataset", false);
  REQUIRE(m.getNumberOfImages("image_0") == 2);
  for (std::uint32_t t = 0; t < 2; ++t) {
    ISMRMRD::Image<float> mag;
    ISMRMRD::Image<std::complex<float>> cpx;
    m.readImage("image_0", t, mag);
    c.readImage("image_0", t, cpx);
    CHECK(mag.getMatrixSizeX() == 6);
    CHECK(mag.getMatrixSizeZ() == 3);
    CHECK(mag.getFieldOfViewY() == Approx(8));
    for (std::size_t i = 0; i < images[t].size(); ++i) {
      REQUIRE(mag.getDataPtr()[i] == std::abs(images[t][i]));
      REQUIRE(cpx.getDataPtr()[i] == images[t][i]);
    }
  }
  CHECK_THROWS_AS(write_ismrmrd_images(dir / "none.h5", {}, {1, 1, 1}), InvalidArgument);
  CHECK_THROWS_AS(write_ismrmrd_images(dir / "no-dir" / "x.h5", images, {1, 1, 1}), IoError);
}

namespace {

// A fuzz regression input as the file it stands for (the harness's first byte chooses the mode).
std::filesystem::path regression_file(const std::string &name, const test::TempDir &dir) {
  std::ifstream in(std::filesystem::path(MRI_TEST_FUZZ_REGRESSIONS) / "ismrmrd_reader" / name, std::ios::binary);
  in.get();
  const std::filesystem::path out = dir / name;
  std::ofstream(out, std::ios::binary) << in.rdbuf();
  return out;
}

// What read_ismrmrd throws for `file`, in a child process killed after `seconds`: a hang fails
// the test instead of stopping the suite. "" for a read that succeeds.
std::string error_within(const std::filesystem::path &file, int seconds) {
  return test::answer_within(seconds, [&]() -> std::string {
    try {
      (void)read_ismrmrd(file);
    } catch (const Error &e) {
      return e.what();
    } catch (...) {
      return "not an mri::Error";
    }
    return "";
  });
}

} // namespace

TEST_CASE("ismrmrd: a damaged global heap is refused, not looped on by HDF5 1.10.8 (fuzzing)", "[ismrmrd]") {
  test::TempDir dir("ismrmrd");
  const std::filesystem::path file = regression_file("hdf5-global-heap-xml-header.h5", dir);
  const std::string what = error_within(file, 30); // refused in milliseconds; HDF5 alone: never
  CHECK_THAT(what, test::contains(file.string() + ": dataset/xml: element 0 names the global heap collection at "
                                                  "5824: object 0 at byte 1752 of its 4096 has size "
                                                  "18446744073709518888, which runs past the collection's end"));
}

// HDF5 1.10.8 walks the root group's local heap free list under H5Lexists, one allocation per
// block: a list that comes back to its own block took 4 GB in 23 s before the reader's "no group"
// (finding 18). Refused from the file's bytes first (lib/io/hdf5_group_guard.hpp); read in a
// child process.
TEST_CASE("a root group whose local heap's free list loops is refused before HDF5 walks it", "[ismrmrd]") {
  test::TempDir dir("damaged-group");
  const std::filesystem::path file = regression_file("hdf5-root-heap-free-list-loop.h5", dir);
  CHECK_THAT(error_within(file, 30),
             test::contains(file.string() + ": the root group: its local heap's free list loops (back to the block "
                                            "at offset 16)"));
}

// HDF5 1.10.8's H5Fopen loads the root group's object header and allocates each chunk by the
// length its continuation message gives before it reads it: a continuation of 160 GB asked for
// 160 GB (finding 19). Refused from the file's bytes before H5Fopen (lib/io/hdf5_open_guard.hpp).
TEST_CASE("a root group header whose continuation runs past the file is refused before H5Fopen", "[ismrmrd]") {
  test::TempDir dir("damaged-root");
  const std::filesystem::path file = regression_file("root-header-continuation-past-file.h5", dir);
  const std::string what = error_within(file, 30);
  CHECK_THAT(what, test::contains(file.string() + ": the root group: its object header's chunk at "));
  CHECK_THAT(what, test::contains("is not inside the file's 21973"));
}

// HDF5 1.10.8 decodes the datatype message in H5Dopen2 and trusts it: an array member stored as 0
// bytes divided by zero there (SIGFPE), a variable-length string of 2^31 + 1-byte characters sized
// H5Dread's buffer by it. Both refused from the file's bytes before HDF5 opens the dataset
// (lib/io/hdf5_type_guard.hpp; docs/reliability.md, findings 15 and 17); read in a child process.
TEST_CASE("a damaged datatype message is refused before HDF5 opens the dataset", "[ismrmrd]") {
  test::TempDir dir("damaged-type");
  const std::filesystem::path zero = regression_file("hdf5-zero-size-member-type.h5", dir);
  CHECK_THAT(error_within(zero, 30),
             test::contains(zero.string() + ": dataset/data: its type's member \"head\".\"idx\".\"user\": an array "
                                            "of 8 elements of 2 bytes stored as 0 bytes"));
  const std::filesystem::path string = regression_file("hdf5-vlen-string-base-size.h5", dir);
  CHECK_THAT(error_within(string, 30),
             test::contains(string.string() + ": dataset/xml: its type: a variable-length string of characters of "
                                              "2147483649 bytes (1 expected)"));
  // Found by mutating datatype messages: H5T_copy copies an enumeration's values at its own size.
  const std::filesystem::path enumeration = regression_file("enum-larger-than-base.h5", dir);
  CHECK_THAT(error_within(enumeration, 30),
             test::contains(enumeration.string() + ": dataset/xml: its type: an enumeration of 16 bytes over a base "
                                                   "of 1 bytes"));
}
