// `mri recon --bins N --motion-correct` with --motion-fields-in (fields read instead of estimated),
// --motion-rounds (alternating motion estimation and MCIR), and the refusals of fields that do not
// fit the data.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "mri/io.hpp"
#include "mri/io/nifti.hpp"
#include "cli/cli_run.hpp"
#include "test_support.hpp"

using namespace mri;
using test::read_json;
using test::run_cli;

namespace {

std::string read_text(const std::filesystem::path &path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

double relative_difference(const NiftiVolume &a, const NiftiVolume &b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    num += std::norm(cdouble(a.data[i]) - cdouble(b.data[i]));
    den += std::norm(cdouble(b.data[i]));
  }
  return std::sqrt(num / den);
}

} // namespace

TEST_CASE("cli: recon --motion-correct reuses fields (--motion-fields-in) and alternates (--motion-rounds)", "[cli]") {
  test::TempDir dir("cli_motion_chain");
  REQUIRE(run_cli(dir, "phantom --matrix 24,24,24 --traj koosh --spokes 800 --readout 24 --coils 2 --snr 30 "
                       "--motion breathing --tr 0.02 --out fb.h5") == 0);
  const std::string chain = "recon --in fb.h5 --bins 3 --iterations 6 --motion-correct ";
  REQUIRE(run_cli(dir, chain + "--motion-fields fields.nii --out mcir.nii --report mcir.json") == 0);
  const nlohmann::json estimated = read_json(dir / "mcir.json");
  CHECK(estimated["motion"].size() == 2);
  CHECK(estimated["motion_rounds"].size() == 1);
  CHECK(estimated["frames"]["maps"] == "given"); // the chain's one coil step
  CHECK(estimated["mcir"]["maps"] == "given");
  CHECK(estimated["coils"]["maps"].get<std::string>().rfind("estimated", 0) == 0);

  // The fields read back (voxels: bitwise) give the same MCIR as the run that estimated them; the
  // CPU's warps and CG are deterministic, so only a thread-order reduction could differ.
  REQUIRE(run_cli(dir, chain + "--motion-fields-in fields.nii --out reused.nii --report reused.json") == 0);
  const nlohmann::json reused = read_json(dir / "reused.json");
  CHECK(reused["motion_rounds"][0]["fields_given"] == true);
  CHECK(reused["motion"].empty());
  CHECK(relative_difference(read_nifti(dir / "reused.nii"), read_nifti(dir / "mcir.nii")) < 1e-5);

  REQUIRE(run_cli(dir, chain + "--motion-rounds 2 --motion-fields fields2.nii --out rounds.nii --report rounds.json") == 0);
  const nlohmann::json rounds = read_json(dir / "rounds.json");
  REQUIRE(rounds["motion_rounds"].size() == 2);
  CHECK(rounds["motion_rounds"][1]["mean_field_change"].get<double>() > 0);
  CHECK(rounds["motion_rounds"][1]["motion"].size() == 2);
  CHECK(rounds["motion_rounds"][1]["mcir_residual"].get<double>() > 0);
  CHECK(read_nifti_displacements(dir / "fields2.nii").fields.size() == 2);

  // Fields that do not fit: the wrong count, the wrong grid, a NaN; one stderr line naming the option.
  const std::string quiet = "recon --quiet --in fb.h5 --bins 3 --iterations 2 --motion-correct ";
  CHECK(run_cli(dir, "recon --quiet --in fb.h5 --bins 4 --iterations 2 --motion-correct --motion-fields-in fields.nii "
                     "--out x.nii") == 1);
  const std::string count = read_text(dir / "err.txt");
  INFO(count);
  CHECK(count.find("--motion-fields-in fields.nii: 2 fields; --bins 4 needs 3") != std::string::npos);
  CHECK(std::count(count.begin(), count.end(), '\n') == 1);
  const Grid other(24, 24, 20);
  write_nifti_displacements(dir.path() / "grid.nii", {DisplacementField(other), DisplacementField(other)}, {1, 1, 1},
                            DisplacementUnits::Voxels, nifti_identity_affine(other, {1, 1, 1}));
  CHECK(run_cli(dir, quiet + "--motion-fields-in grid.nii --out x.nii") == 1);
  const std::string grid = read_text(dir / "err.txt");
  INFO(grid);
  CHECK(grid.find("grid 24x24x20 differs from the reconstruction grid 24x24x24") != std::string::npos);
  NiftiDisplacements nan_fields = read_nifti_displacements(dir / "fields.nii");
  nan_fields.fields[1].v[17] = NAN;
  write_nifti_displacements(dir.path() / "nan.nii", nan_fields.fields, {1, 1, 1}, DisplacementUnits::Voxels,
                            nan_fields.affine);
  CHECK(run_cli(dir, quiet + "--motion-fields-in nan.nii --out x.nii") == 1);
  const std::string nan = read_text(dir / "err.txt");
  INFO(nan);
  // (The writer's unit matrix carries a NaN into every component: 0 * NaN.)
  CHECK(nan.find("--motion-fields-in nan.nii: field 1 (state 2) u[17] = nan") != std::string::npos);
  CHECK(std::count(nan.begin(), nan.end(), '\n') == 1);
  CHECK(run_cli(dir, quiet + "--motion-fields-in missing.nii --out x.nii") == 1);
  CHECK(read_text(dir / "err.txt").find("--motion-fields-in missing.nii") != std::string::npos);
  // Usage: the options need --motion-correct.
  CHECK(run_cli(dir, "recon --in fb.h5 --bins 3 --motion-fields-in fields.nii --out x.nii") == 2);
  CHECK(run_cli(dir, "recon --in fb.h5 --bins 3 --motion-rounds 2 --out x.nii") == 2);
  CHECK(run_cli(dir, chain + "--motion-rounds 0 --out x.nii") == 2);
}
