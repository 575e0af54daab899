// `mri phantom --motion breathing`: the ISMRMRD file's readouts in golden-means order with their
// time stamps and the respiratory state, the truth image and the trace, and self-gating on the
// file's data recovering the trace.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include <ismrmrd/dataset.h>

#include "catch.hpp"
#include "mri/breathing.hpp"
#include "mri/frames.hpp"
#include "mri/io.hpp"
#include "mri/mri.hpp"
#include "cli/cli_run.hpp"
#include "test_support.hpp"

using namespace mri;
using test::read_json;
using test::run_cli;

namespace {

std::vector<double> read_trace(const std::filesystem::path &path) {
  std::ifstream in(path);
  std::vector<double> trace;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') trace.push_back(std::stod(line));
  return trace;
}

} // namespace

TEST_CASE("cli: phantom --motion breathing writes time stamps and the state per readout with the truth and the trace", "[cli]") {
  test::TempDir dir("cli_breathing");
  const int spokes = 600;
  REQUIRE(run_cli(dir, "phantom --matrix 20,20,20 --traj koosh --spokes 600 --readout 16 --coils 2 --snr 30 "
                       "--motion breathing --tr 0.02 --breathing-amplitude 2 --truth truth.nii --trace-out trace.txt "
                       "--out fb.h5") == 0);
  const std::vector<double> trace = read_trace(dir / "trace.txt");
  REQUIRE(trace.size() == spokes);

  // Every readout: the clock in 2.5 ms ticks (TR 20 ms: 8 ticks) and the state in thousandths.
  ISMRMRD::Dataset file((dir / "fb.h5").c_str(), "dataset", false);
  REQUIRE(file.getNumberOfAcquisitions() == spokes);
  for (int r = 0; r < spokes; r += 37) {
    ISMRMRD::Acquisition acq;
    file.readAcquisition(static_cast<std::uint32_t>(r), acq);
    // memcpy: the packed header's 32-bit fields may be misaligned (no reference may bind to them).
    std::uint32_t stamp = 0, state = 0;
    std::memcpy(&stamp, &acq.acquisition_time_stamp(), sizeof stamp);
    std::memcpy(&state, &acq.physiology_time_stamp(), sizeof state);
    CHECK(stamp == static_cast<std::uint32_t>(8 * r));
    CHECK(state == static_cast<std::uint32_t>(std::llround(1000 * trace[static_cast<std::size_t>(r)])));
  }

  // The spokes in golden-means order, the truth the phantom at rest.
  const IsmrmrdData data = read_ismrmrd(dir / "fb.h5");
  REQUIRE(data.items.size() == 1);
  const Grid grid(20, 20, 20);
  const Trajectory golden = traj::koosh(grid, spokes, 16, traj::SpokeOrder::GoldenAngle);
  for (std::size_t i = 0; i < golden.size(); i += 101) CHECK(data.items[0].data.trajectory()[i].kz == Approx(golden[i].kz).margin(1e-5));
  const NiftiVolume truth = read_nifti(dir / "truth.nii");
  CHECK(test::relative_error(Image(grid, truth.data), Phantom::shepp_logan_3d().rasterize(grid)) < 1e-6);

  // The same stamps through the SDK's reader (each item's readouts), the layout from them, and the
  // header's signal.
  const std::vector<IsmrmrdReadout> &readouts = data.items[0].readouts;
  REQUIRE(readouts.size() == spokes);
  std::vector<std::uint32_t> stamps;
  for (const IsmrmrdReadout &r : readouts) stamps.push_back(r.acquisition_time_stamp);
  const ReadoutLayout layout = layout_from_time_stamps(16, stamps);
  CHECK(layout.readout_seconds == Approx(0.02).epsilon(1e-12));
  std::vector<double> header_signal;
  for (const IsmrmrdReadout &r : readouts) header_signal.push_back(r.physiology_time_stamp[0] / 1000.0);
  for (std::size_t r = 0; r < trace.size(); r += 53) CHECK(header_signal[r] == Approx(trace[r]).margin(5e-4));
  FrameRequest request;
  request.bins = 4;
  request.gating = "header";
  const FrameBinning by_header = plan_frames(data.items[0].data, layout, request, header_signal);
  CHECK(by_header.readouts_per_frame == std::vector<std::int64_t>{150, 150, 150, 150});
  CHECK_FALSE(by_header.flipped); // the state dwells at 0, end-expiration

  // Self-gating on what the file holds follows the trace it was made with (bound: the issue's).
  const GatingSignal g = self_gating_signal(data.items[0].data, {16, 0.02, {}});
  INFO(g.note);
  double ma = 0, mb = 0, ab = 0, aa = 0, bb = 0;
  for (std::size_t r = 0; r < trace.size(); ++r) ma += g.values[r] / spokes, mb += trace[r] / spokes;
  for (std::size_t r = 0; r < trace.size(); ++r) {
    ab += (g.values[r] - ma) * (trace[r] - mb);
    aa += (g.values[r] - ma) * (g.values[r] - ma);
    bb += (trace[r] - mb) * (trace[r] - mb);
  }
  CHECK(ab / std::sqrt(aa * bb) > 0.9);

  // Usage errors.
  CHECK(run_cli(dir, "phantom --matrix 16,16 --trace-out t.txt --out k") == 2);
  CHECK(run_cli(dir, "phantom --matrix 16,16 --motion breathing --slices 2 --out k.h5") == 2);
  CHECK(run_cli(dir, "phantom --matrix 16,16 --motion sneezing --out k") == 2);
}
