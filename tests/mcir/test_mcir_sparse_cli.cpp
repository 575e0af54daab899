// `mri recon --bins N --motion-correct -R ...`: MCIR with the sparse terms the states take (the
// proximal solver named in the report with its iterations and objective); a bad term refused.
#include <string>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "cli/cli_run.hpp"
#include "test_support.hpp"

using mri::test::read_json;
using mri::test::run_cli;

TEST_CASE("cli: recon --motion-correct with -R runs MCIR by the proximal solver", "[cli]") {
  mri::test::TempDir dir("cli_mcir_sparse");
  REQUIRE(run_cli(dir, "phantom --matrix 16,16,16 --traj koosh --spokes 480 --readout 16 --coils 2 --snr 30 "
                       "--motion breathing --tr 0.02 --out fb.h5") == 0);
  const std::string chain = "recon --quiet --in fb.h5 --bins 3 --iterations 4 --motion-correct ";
  REQUIRE(run_cli(dir, chain + "-R W:7:0:0.01 --out mcir.nii --report mcir.json") == 0);
  const nlohmann::json r = read_json(dir / "mcir.json");
  CHECK(r["frames"]["solver"] == "fista");
  CHECK(r["mcir"]["solver"] == "fista");
  CHECK(r["mcir"]["iterations"] == 4);
  const auto objective = r["mcir"]["objective"].get<std::vector<double>>();
  REQUIRE(objective.size() == 5);
  CHECK(objective.back() < objective.front());
  CHECK(r["mcir"]["chain_note"] == "");
  // TV along the frames is the states' only: MCIR runs with the wavelet alone, and says so.
  REQUIRE(run_cli(dir, chain + "-R W:7:0:0.01 -R T:1024:0:0.01 --out both.nii --report both.json") == 0);
  const nlohmann::json both = read_json(dir / "both.json");
  CHECK(both["frames"]["solver"] == "admm");
  CHECK(both["mcir"]["solver"] == "fista");
  CHECK(both["mcir"]["chain_note"].get<std::string>().find("T:1024") != std::string::npos);
  CHECK(run_cli(dir, chain + "-R W:7:0:-1 --out bad.nii") != 0);
}
