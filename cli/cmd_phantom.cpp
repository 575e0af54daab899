// `mri phantom`: raw data of the analytic Shepp-Logan phantom on a trajectory, with noise, as a
// BART k-space [1, readout, lines, coils] or an ISMRMRD file (trajectory stored in cycles/FOV).
// Several coils: the SDK's SimulatedCoils (maps as finite Fourier series: exact k-space), whose
// maps --sens-out writes as BART [x, y, z, coils]. ISMRMRD output: the slice geometry
// (--read-dir, --phase-dir, --position) in every acquisition, and --slices parallel 2D slices.
#include <algorithm>
#include <cmath>
#include <random>

#include "commands.hpp"
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
};

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
}

int run_phantom(const PhantomArgs &a) {
  const Grid grid = parse_matrix(a.traj.matrix, "--matrix");
  const GeneratedTrajectory g = phantom_trajectory(a, grid);
  const Phantom phantom = grid.dims() == 3 ? Phantom::shepp_logan_3d() : Phantom::shepp_logan_2d();
  const SimulatedCoils array(grid.dims(), a.coils);
  const std::vector<cfloat> clean =
      a.coils == 1 ? phantom.kspace(g.trajectory, grid) : array.kspace(phantom, g.trajectory, grid);
  if (!a.sens_out.empty())
    write_cfl_atomic(cfl_base(a.sens_out), {grid.nx(), grid.ny(), grid.nz(), a.coils}, array.maps(grid).values());
  if (!a.traj_out.empty()) write_cfl_atomic(cfl_base(a.traj_out), g.dims, bart::from_trajectory(g.trajectory).data);
  std::vector<KSpaceData> slices;
  for (int s = 0; s < a.slices; ++s) slices.push_back(noisy_slice(g.trajectory, clean, a, s));
  const KSpaceData &data = slices[0];
  if (is_h5(a.out)) {
    RawOutput raw = a.raw;
    raw.path = a.out;
    raw.trajectory = ismrmrd_trajectory_type(a.traj);
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
  cmd->add_option("--seed", a->seed, "noise seed")->capture_default_str();
  cmd->add_option("--coils", a->coils, "receive coils (SimulatedCoils: a ring of surface coils, 1 to 64)")
      ->check(CLI::Range(1, 64))->capture_default_str();
  cmd->add_option("--sens-out", a->sens_out, "also write the simulated coil maps as a BART file [x, y, z, coils]");
  add_raw_output_options(*cmd, a->raw);
  cmd->add_option("--slices", a->slices, "ISMRMRD output: parallel 2D slices of the phantom, each with its own noise "
                                         "(seed + slice), slice s at --position + s x --slice-spacing along read x phase")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--slice-spacing", a->raw.slice_spacing_mm, "--slices: centre-to-centre distance of the slices, mm")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->final_callback([a] { check_phantom(*a); });
  return [a] { return run_phantom(*a); };
}

} // namespace mri::cli
