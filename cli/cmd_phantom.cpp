// `mri phantom`: raw data of the analytic Shepp-Logan phantom on a trajectory, with noise, as a
// BART k-space [1, readout, lines, coils] or an ISMRMRD file (trajectory stored in cycles/FOV).
// Several coils: the SDK's SimulatedCoils (maps as finite Fourier series: exact k-space), whose
// maps --sens-out writes as BART [x, y, z, coils]. ISMRMRD output: the slice geometry
// (--read-dir, --phase-dir, --position) in every acquisition, and --slices parallel 2D slices.
// --motion breathing: the phantom breathes during the acquisition (mri/breathing.hpp: every
// readout from the exact k-space of the object in its own state), readout r at r x --tr seconds.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

#include <mri/breathing.hpp>

#include "commands.hpp"
#include "outputs.hpp"
#include "raw_output.hpp"

namespace mri::cli {
namespace {

struct PhantomArgs {
  TrajectorySpec traj;
  RawOutput raw; // ISMRMRD output: voxel size, units, geometry
  std::string out, traj_out, sens_out;
  double noise = 0, snr = 0;
  std::uint64_t seed = 1;
  int coils = 1, slices = 1;
  std::string motion = "none", truth, trace_out;
  BreathingOptions breathing;
};

// ISMRMRD's acquisition clock as the vendors' converters keep it: ticks of 2.5 ms.
constexpr double kTimeStampSeconds = 2.5e-3;

bool breathes(const PhantomArgs &a) { return a.motion == "breathing"; }

// Continuous acquisitions are sorted into frames afterwards: spokes in golden-angle order
// (golden means for koosh), so that any run of them covers k-space nearly uniformly.
TrajectorySpec acquisition_order(const PhantomArgs &a) {
  TrajectorySpec spec = a.traj;
  if (breathes(a) && (spec.name == "radial" || spec.name == "koosh" || spec.name == "stack-of-stars")) spec.golden = true;
  return spec;
}

// The breathing state of every readout and the clean multi-coil samples of the moving phantom.
struct BreathingSamples {
  std::vector<double> trace;
  std::vector<cfloat> clean;
};
BreathingSamples breathing_samples(const PhantomArgs &a, const Phantom &phantom, const GeneratedTrajectory &g,
                                   const Grid &grid) {
  const int readout = static_cast<int>(g.dims[1]);
  const auto readouts = static_cast<std::int64_t>(g.trajectory.size()) / readout;
  BreathingOptions options = a.breathing;
  options.seed = a.seed; // the trace's irregularity
  BreathingSamples b;
  b.trace = breathing_trace(readouts, options);
  std::vector<AffineMotion> motion;
  for (double s : b.trace) motion.push_back(breathing_motion(s, grid.dims(), options));
  b.clean = moving_phantom_kspace(phantom, g.trajectory, grid, readout, motion, a.coils);
  return b;
}

// The trace as text (one state per line) for a .txt name, else a BART array [readouts].
void write_trace(const std::string &path, const std::vector<double> &trace) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".txt") == 0) {
    std::ofstream out(path);
    out.precision(9);
    out << "# breathing state per readout (0 = end-expiration)\n";
    for (double s : trace) out << s << '\n';
    if (!out) throw IoError("cannot write " + path);
    return;
  }
  std::vector<cfloat> values;
  for (double s : trace) values.push_back(cfloat(static_cast<float>(s), 0.0f));
  write_cfl_atomic(cfl_base(path), {static_cast<std::int64_t>(trace.size())}, values);
}

// Per readout: the acquisition clock (2.5 ms ticks) and, in physiology_time_stamp[0], the
// simulated respiratory state in thousandths (a bellows-like amplitude, not a time).
void add_time_stamps(RawOutput &raw, const PhantomArgs &a, const std::vector<double> &trace) {
  for (std::size_t r = 0; r < trace.size(); ++r) {
    raw.acquisition_time_stamps.push_back(
        static_cast<std::uint32_t>(std::llround(static_cast<double>(r) * a.breathing.readout_seconds / kTimeStampSeconds)));
    raw.physiology_time_stamps.push_back({static_cast<std::uint32_t>(std::llround(1000 * std::max(trace[r], 0.0))), 0, 0});
  }
}

// The trajectory by generator name, else from a BART file (its dims kept for the k-space).
GeneratedTrajectory phantom_trajectory(const PhantomArgs &a, const Grid &grid) {
  if (is_generator(a.traj.name)) return generate_trajectory(a.traj, grid);
  const bart::CflArray t = bart::read_cfl(cfl_base(a.traj.name));
  std::vector<std::int64_t> dims = t.dims;
  while (dims.size() > 2 && dims.back() == 1) dims.pop_back();
  return {bart::to_trajectory(t, grid.dims()), dims};
}

// Complex white Gaussian noise with E|n|^2 = sigma^2 per sample (sigma/sqrt(2) per part).
void add_gaussian(std::vector<cfloat> &samples, double sigma, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> g(0.0f, static_cast<float>(sigma / std::sqrt(2.0)));
  for (cfloat &s : samples) s += cfloat(g(rng), g(rng));
}

// Slice s: the phantom's samples with noise of seed + s (each slice its own noise).
KSpaceData noisy_slice(const Trajectory &t, const std::vector<cfloat> &clean, const PhantomArgs &a, int s) {
  std::vector<cfloat> samples = clean;
  const std::uint64_t seed = a.seed + static_cast<std::uint64_t>(s);
  if (a.snr > 0) add_noise(samples, a.snr, seed);
  if (a.noise > 0) add_gaussian(samples, a.noise, seed);
  return KSpaceData(t, std::move(samples), {}, a.coils);
}

void check_phantom(const PhantomArgs &a) {
  if (a.noise > 0 && a.snr > 0) throw UsageError("--noise and --snr contradict each other: give one");
  if (a.slices > 1 && !is_h5(a.out)) throw UsageError("--slices " + std::to_string(a.slices) + " needs an ISMRMRD output (FILE.h5)");
  const Grid grid = parse_matrix(a.traj.matrix, "--matrix");
  if (a.slices > 1 && grid.dims() == 3)
    throw UsageError("--slices " + std::to_string(a.slices) + " stacks 2D slices; --matrix " + a.traj.matrix + " is 3D");
  if (is_generator(a.traj.name)) check_generator(a.traj, grid);
  if (breathes(a) && a.slices > 1) throw UsageError("--motion breathing simulates one volume or slice: drop --slices");
  if (!breathes(a) && !a.trace_out.empty()) throw UsageError("--trace-out needs --motion breathing");
}

int run_phantom(const PhantomArgs &a) {
  const Grid grid = parse_matrix(a.traj.matrix, "--matrix");
  PhantomArgs ordered = a;
  ordered.traj = acquisition_order(a);
  const GeneratedTrajectory g = phantom_trajectory(ordered, grid);
  const Phantom phantom = grid.dims() == 3 ? Phantom::shepp_logan_3d() : Phantom::shepp_logan_2d();
  const SimulatedCoils array(grid.dims(), a.coils);
  BreathingSamples breathing;
  if (breathes(a)) breathing = breathing_samples(a, phantom, g, grid);
  const std::vector<cfloat> clean = breathes(a) ? std::move(breathing.clean)
                                    : a.coils == 1 ? phantom.kspace(g.trajectory, grid)
                                                   : array.kspace(phantom, g.trajectory, grid);
  // The reference state: end-expiration (state 0, the phantom at rest).
  if (!a.truth.empty()) write_images(a.truth, {phantom.rasterize(grid)}, OutputOptions{false, {a.raw.voxel_mm, a.raw.voxel_mm, a.raw.voxel_mm}, {}});
  if (!a.trace_out.empty()) write_trace(a.trace_out, breathing.trace);
  if (!a.sens_out.empty())
    write_cfl_atomic(cfl_base(a.sens_out), {grid.nx(), grid.ny(), grid.nz(), a.coils}, array.maps(grid).values());
  if (!a.traj_out.empty()) write_cfl_atomic(cfl_base(a.traj_out), g.dims, bart::from_trajectory(g.trajectory).data);
  std::vector<KSpaceData> slices;
  for (int s = 0; s < a.slices; ++s) slices.push_back(noisy_slice(g.trajectory, clean, a, s));
  const KSpaceData &data = slices[0];
  if (is_h5(a.out)) {
    RawOutput raw = a.raw;
    raw.path = a.out;
    raw.trajectory = ismrmrd_trajectory_type(ordered.traj);
    if (breathes(a)) add_time_stamps(raw, a, breathing.trace);
    write_raw_h5(raw, grid, g, slices);
  } else {
    std::vector<std::int64_t> dims = g.dims;
    dims[0] = 1; // BART k-space: [1, readout, lines, coils]
    dims.resize(std::max<std::size_t>(dims.size(), 4), 1);
    dims[3] = a.coils;
    write_cfl_atomic(cfl_base(a.out), dims, data.samples());
  }
  return kOk;
}

} // namespace

Runner add_phantom(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("phantom", "simulate raw data of the analytic Shepp-Logan phantom");
  auto a = std::make_shared<PhantomArgs>();
  add_trajectory_options(*cmd, a->traj,
                         "a generator (cartesian | radial | spiral | propeller | stack-of-stars | koosh | random) "
                         "or a BART trajectory file (cycles/FOV)");
  cmd->add_option("--out", a->out, "output: FILE.h5 (ISMRMRD) or a BART base name (k-space [1, readout, lines])")
      ->required();
  cmd->add_option("--traj-out", a->traj_out, "also write the trajectory as a BART file");
  cmd->add_option("--noise", a->noise, "complex Gaussian noise, standard deviation per sample (E|n|^2 = sigma^2)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--snr", a->snr, "noise by signal-to-noise ratio: RMS signal / noise sigma (linear; 0 = none)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--seed", a->seed, "noise seed (and --motion breathing: the breaths' irregularity)")->capture_default_str();
  cmd->add_option("--coils", a->coils, "receive coils (SimulatedCoils: a ring of surface coils, 1 to 64)")
      ->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--sens-out", a->sens_out, "also write the simulated coil maps as a BART file [x, y, z, coils]");
  add_raw_output_options(*cmd, a->raw);
  cmd->add_option("--slices", a->slices, "ISMRMRD output: parallel 2D slices of the phantom, each with its own noise "
                                         "(seed + slice), slice s at --position + s x --slice-spacing along read x phase")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--slice-spacing", a->raw.slice_spacing_mm, "--slices: centre-to-centre distance of the slices, mm")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--motion", a->motion, "none, or breathing: the object moves during the acquisition (superior-inferior "
                                        "translation and anterior-posterior stretch per readout; radial, koosh and "
                                        "stack-of-stars spokes in golden-angle order)")
      ->check(CLI::IsMember({"none", "breathing"}))->capture_default_str();
  cmd->add_option("--breathing-amplitude", a->breathing.amplitude_voxels,
                  "--motion breathing: superior-inferior displacement at end-inspiration, voxels")
      ->check(CLI::Range(0.0, 64.0))->capture_default_str();
  cmd->add_option("--breathing-expansion", a->breathing.ap_expansion,
                  "--motion breathing: anterior-posterior stretch at end-inspiration (relative)")
      ->check(CLI::Range(0.0, 0.5))->capture_default_str();
  cmd->add_option("--breathing-period", a->breathing.period_seconds, "--motion breathing: mean breathing period, s")
      ->check(CLI::Range(0.5, 60.0))->capture_default_str();
  cmd->add_option("--breathing-irregularity", a->breathing.irregularity,
                  "--motion breathing: relative spread of each breath's period and depth (0: regular)")
      ->check(CLI::Range(0.0, 0.49))->capture_default_str();
  cmd->add_option("--tr", a->breathing.readout_seconds, "--motion breathing: time between readouts, s")
      ->check(CLI::Range(1e-5, 10.0))->capture_default_str();
  cmd->add_option("--truth", a->truth, "also write the object at the reference state (end-expiration) as an image "
                                       "(.nii, .png, .h5 or BART)");
  cmd->add_option("--trace-out", a->trace_out, "--motion breathing: also write the true breathing state per readout "
                                               "(FILE.txt: one per line; else BART [readouts])");
  cmd->final_callback([a] { check_phantom(*a); });
  return [a] { return run_phantom(*a); };
}

} // namespace mri::cli
