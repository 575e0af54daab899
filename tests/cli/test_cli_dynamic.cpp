// `mri recon --bins N [--motion-correct]` and `--frames-spokes K`: a free-breathing phantom file
// sorted into states (self-gated from the data, the readouts' times from the file's stamps),
// reconstructed jointly into a 4D series, and the motion-corrected reference state; the report;
// usage errors.
#include <fstream>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "mri/io.hpp"
#include "cli/cli_run.hpp"
#include "test_support.hpp"

using namespace mri;
using test::read_json;
using test::run_cli;


TEST_CASE("cli: recon --bins reconstructs respiratory states jointly and --motion-correct the reference", "[cli]") {
  test::TempDir dir("cli_dynamic");
  REQUIRE(run_cli(dir, "phantom --matrix 24,24,24 --traj koosh --spokes 800 --readout 24 --coils 2 --snr 30 "
                       "--motion breathing --tr 0.02 --truth truth.nii --out fb.h5") == 0);

  REQUIRE(run_cli(dir, "recon --in fb.h5 --bins 3 --iterations 6 -R T:1024:0:0.001 --out states.nii "
                       "--report states.json") == 0);
  const NiftiVolume states = read_nifti(dir / "states.nii");
  CHECK(states.dims == std::array<std::int64_t, 4>{24, 24, 24, 3});
  const nlohmann::json r = read_json(dir / "states.json");
  CHECK(r["binning"]["method"] == "amplitude");
  int total = 0; // equal counts: 800 readouts in bins of 266 or 267
  for (const auto &n : r["binning"]["readouts_per_frame"]) {
    CHECK((n == 266 || n == 267));
    total += n.get<int>();
  }
  CHECK(total == 800);
  CHECK(r["binning"]["signal"].size() == 800);
  CHECK(r["frames"]["solver"] == "admm");

  REQUIRE(run_cli(dir, "recon --in fb.h5 --bins 3 --iterations 6 --motion-correct --motion-fields fields.nii "
                       "--out mcir.nii --report mcir.json") == 0);
  CHECK(read_nifti(dir / "mcir.nii").dims == std::array<std::int64_t, 4>{24, 24, 24, 1});
  const nlohmann::json m = read_json(dir / "mcir.json");
  CHECK(m["motion"].size() == 2); // states 1 and 2 to state 0
  CHECK(m["mcir"]["states"] == 3);
  CHECK(m["mcir"]["iterations"] == 6);
  CHECK(std::filesystem::exists(dir / "fields.nii"));

  REQUIRE(run_cli(dir, "recon --in fb.h5 --frames-spokes 200 --iterations 4 --out frames.nii") == 0);
  CHECK(read_nifti(dir / "frames.nii").dims[3] == 4);

  // Usage errors: one line on stderr and exit code 2 (contradicting options), data errors 3.
  CHECK(run_cli(dir, "recon --in fb.h5 --bins 3 --frames-spokes 100 --out x.nii") == 2);
  CHECK(run_cli(dir, "recon --in fb.h5 --motion-correct --out x.nii") == 2);
  CHECK(run_cli(dir, "recon --in fb.h5 --bins 3 --motion-fields f.nii --out x.nii") == 2);
  CHECK(run_cli(dir, "recon --in fb.h5 --bins 200 --out x.nii") != 0); // 4 readouts per bin: below the floor
  std::ifstream err(dir / "err.txt");
  const std::string message((std::istreambuf_iterator<char>(err)), std::istreambuf_iterator<char>());
  CHECK(message.find("bins") != std::string::npos);
}
