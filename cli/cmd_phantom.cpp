// `mri phantom`: raw data of the analytic Shepp-Logan phantom on a trajectory, with noise, as a
// BART k-space [1, readout, lines, coils] or an ISMRMRD file (trajectory stored in cycles/FOV).
// Several coils: the SDK's SimulatedCoils (maps as finite Fourier series: exact k-space), whose
// maps --sens-out writes as BART [x, y, z, coils].
#include <algorithm>
#include <cmath>
#include <random>

#include "commands.hpp"
#include "raw_output.hpp"

namespace mri::cli {
namespace {

struct PhantomArgs {
  TrajectorySpec traj;
  std::string out, traj_out, sens_out;
  double noise = 0, snr = 0, voxel_mm = 1;
  std::uint64_t seed = 1;
  int coils = 1;
  TrajUnits units = TrajUnits::CyclesPerFov;
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

void check_phantom(const PhantomArgs &a) {
  if (a.noise > 0 && a.snr > 0) throw UsageError("--noise and --snr contradict each other: give one");
  const Grid grid = parse_matrix(a.traj.matrix, "--matrix");
  if (is_generator(a.traj.name)) check_generator(a.traj, grid);
}

int run_phantom(const PhantomArgs &a) {
  const Grid grid = parse_matrix(a.traj.matrix, "--matrix");
  const GeneratedTrajectory g = phantom_trajectory(a, grid);
  const Phantom phantom = grid.dims() == 3 ? Phantom::shepp_logan_3d() : Phantom::shepp_logan_2d();
  const SimulatedCoils array(grid.dims(), a.coils);
  std::vector<cfloat> samples = a.coils == 1 ? phantom.kspace(g.trajectory, grid) : array.kspace(phantom, g.trajectory, grid);
  if (!a.sens_out.empty())
    write_cfl_atomic(cfl_base(a.sens_out), {grid.nx(), grid.ny(), grid.nz(), a.coils}, array.maps(grid).values());
  if (a.snr > 0) add_noise(samples, a.snr, a.seed);
  if (a.noise > 0) add_gaussian(samples, a.noise, a.seed);
  if (!a.traj_out.empty()) write_cfl_atomic(cfl_base(a.traj_out), g.dims, bart::from_trajectory(g.trajectory).data);
  const KSpaceData data(g.trajectory, std::move(samples), {}, a.coils);
  if (is_h5(a.out)) {
    write_raw_h5({a.out, a.voxel_mm, a.units, ismrmrd_trajectory_type(a.traj)}, grid, g, data);
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
  cmd->add_option("--voxel", a->voxel_mm, "ISMRMRD output: voxel size in mm (FOV = matrix x voxel)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  add_enum(*cmd, "--traj-units", a->units, {{"cycles", TrajUnits::CyclesPerFov}, {"normalized", TrajUnits::Normalized}},
           "ISMRMRD output: trajectory stored in cycles/FOV or normalised to [-0.5, 0.5]");
  cmd->final_callback([a] { check_phantom(*a); });
  return [a] { return run_phantom(*a); };
}

} // namespace mri::cli
