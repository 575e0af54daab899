// `mri nufft`: as `bart nufft` on BART files: forward (image -> k-space), --adjoint (k-space ->
// image) or --inverse (CG), with BART's unitary scaling (bart::nufft_scale), per coil.
#include <optional>

#include "commands.hpp"

namespace mri::cli {
namespace {

struct NufftArgs {
  bool adjoint = false, inverse = false, exact = false;
  std::string traj, matrix, in, out;
  double tolerance = 1e-3, lambda = 0;
  int iterations = 30;
  Backend backend = Backend::Cpu;
};

// The trajectory's sample dims [readout, lines...] (BART's dims 1..).
std::vector<std::int64_t> sample_dims(const bart::CflArray &t) {
  std::vector<std::int64_t> d(t.dims.begin() + 1, t.dims.end());
  while (d.size() > 1 && d.back() == 1) d.pop_back();
  return d;
}

// F or F^H of one coil: the exact sums or the NUFFT at the tolerance.
struct Operator {
  Operator(const Trajectory &t, const Grid &g, const NufftArgs &a) {
    if (a.exact) exact = std::make_unique<FourierOperator>(t, g, OperatorOptions{a.backend});
    else nufft = std::make_unique<NufftOperator>(t, g, NufftOptions{a.tolerance, Precision::Float32, Gridding::Auto, a.backend});
  }
  // F x and F^H y, NaN/Inf refused (InvalidArgument naming the first).
  std::vector<cfloat> forward(const Image &x) const { return exact ? mri::forward(*exact, x) : mri::forward(*nufft, x); }
  Image adjoint(const std::vector<cfloat> &y) const { return exact ? mri::adjoint(*exact, y) : mri::adjoint(*nufft, y); }
  std::unique_ptr<FourierOperator> exact;
  std::unique_ptr<NufftOperator> nufft;
};

std::int64_t coils_of(std::size_t values, std::size_t per_coil, const std::string &file) {
  if (per_coil == 0 || values % per_coil != 0)
    throw InvalidArgument(file + ": " + std::to_string(values) + " values are not a whole number of coils of " +
                          std::to_string(per_coil));
  return static_cast<std::int64_t>(values / per_coil);
}

Image scaled(Image x, double s) {
  for (cfloat &v : x.values()) v *= static_cast<float>(s);
  return x;
}

// k-space [1, samples..., coils] -> images [x, y, z, coils], by F^H or CG per coil.
void to_images(const NufftArgs &a, const bart::CflArray &traj, const bart::CflArray &ksp) {
  const Grid grid = parse_matrix(a.matrix, "--matrix");
  const Trajectory t = bart::to_trajectory(traj, grid.dims());
  const std::int64_t coils = coils_of(ksp.data.size(), t.size(), a.in);
  const double s = bart::nufft_scale(grid);
  std::vector<cfloat> out;
  std::optional<Operator> op; // the adjoint's plan, once for all coils (--inverse plans its own)
  if (!a.inverse) op.emplace(t, grid, a);
  for (std::int64_t c = 0; c < coils; ++c) {
    std::vector<cfloat> y(ksp.data.begin() + c * t.size(), ksp.data.begin() + (c + 1) * t.size());
    Image x;
    if (a.inverse) {
      ReconOptions o;
      o.solver.iterations = a.iterations, o.backend = a.backend, o.method = a.exact ? Method::Exact : Method::Nufft;
      o.nufft.tolerance = a.tolerance;
      o.solver.lambda = a.lambda * static_cast<double>(grid.voxels()); // BART's unitary lambda -> ours
      o.solver.regularizer = a.lambda > 0 ? Regularizer::Tikhonov : Regularizer::None;
      x = scaled(reconstruct(KSpaceData(t, std::move(y)), grid, o).image, 1.0 / s);
    } else {
      x = scaled(op->adjoint(y), s);
    }
    out.insert(out.end(), x.values().begin(), x.values().end());
  }
  write_cfl_atomic(cfl_base(a.out), {grid.nx(), grid.ny(), grid.nz(), coils}, out);
}

// images [x, y, z, coils] -> k-space [1, samples..., coils] by F.
void to_kspace(const NufftArgs &a, const bart::CflArray &traj, const bart::CflArray &img) {
  std::vector<std::int64_t> d = img.dims;
  d.resize(4, 1);
  const Grid grid(d[0], d[1], d[2]);
  if (!a.matrix.empty() && parse_matrix(a.matrix, "--matrix").extents() != grid.extents())
    throw UsageError("--matrix = " + a.matrix + " contradicts the image " + a.in + "'s dims");
  const Trajectory t = bart::to_trajectory(traj, grid.dims()); // a 2D image needs kz = 0
  std::vector<std::int64_t> dims = sample_dims(traj);
  const std::int64_t coils = coils_of(img.data.size(), static_cast<std::size_t>(grid.voxels()), a.in);
  const Operator op(t, grid, a);
  std::vector<cfloat> out;
  for (std::int64_t c = 0; c < coils; ++c) {
    const auto first = img.data.begin() + c * grid.voxels();
    const std::vector<cfloat> y = op.forward(Image(grid, std::vector<cfloat>(first, first + grid.voxels())));
    for (const cfloat v : y) out.push_back(v * static_cast<float>(bart::nufft_scale(grid)));
  }
  dims.insert(dims.begin(), 1);
  dims.resize(std::max<std::size_t>(dims.size(), 4), 1);
  dims[3] *= coils; // BART's COIL_DIM
  write_cfl_atomic(cfl_base(a.out), dims, out);
}

void check_nufft(const NufftArgs &a) {
  if (a.adjoint && a.inverse) throw UsageError("--adjoint and --inverse contradict each other: give one");
  if ((a.adjoint || a.inverse) && a.matrix.empty()) throw UsageError("--matrix is needed for --adjoint and --inverse");
  if (!a.matrix.empty()) (void)parse_matrix(a.matrix, "--matrix");
}

int run_nufft(const NufftArgs &a) {
  const bart::CflArray traj = bart::read_cfl(cfl_base(a.traj));
  const bart::CflArray in = bart::read_cfl(cfl_base(a.in));
  const std::int64_t rows = traj.dims.empty() ? 0 : traj.dims[0];
  if (rows != 3) throw InvalidArgument(a.traj + ": dims[0] = " + std::to_string(rows) + ": a trajectory is [3, samples, ...]");
  if (a.adjoint || a.inverse) to_images(a, traj, in);
  else to_kspace(a, traj, in);
  return kOk;
}

} // namespace

Runner add_nufft(CLI::App &app) {
  CLI::App *cmd = app.add_subcommand("nufft", "non-uniform FFT on BART files, as `bart nufft` (unitary scaling)");
  auto a = std::make_shared<NufftArgs>();
  cmd->add_flag("-a,--adjoint", a->adjoint, "adjoint: k-space -> image");
  cmd->add_flag("-i,--inverse", a->inverse, "inverse by CG: k-space -> image");
  cmd->add_option("-t,--traj", a->traj, "BART trajectory [3, samples, ...] in cycles/FOV")->required();
  cmd->add_option("-d,--matrix", a->matrix, "image matrix nx,ny[,nz] (voxels; needed for --adjoint/--inverse)");
  cmd->add_option("--tolerance", a->tolerance, "NUFFT relative error bound (1e-5 .. 1e-1)")->capture_default_str();
  cmd->add_flag("--exact", a->exact, "exact sums O(N*M) instead of the NUFFT");
  cmd->add_option("--iterations", a->iterations, "--inverse: CG iterations")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--lambda", a->lambda, "--inverse: Tikhonov weight, BART's (unitary) units")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  add_enum(*cmd, "--backend", a->backend, kBackends, "cpu | cuda | auto");
  cmd->add_option("input", a->in, "BART input: image (forward) or k-space [1, samples..., coils]")->required();
  cmd->add_option("output", a->out, "BART output base name")->required();
  cmd->final_callback([a] { check_nufft(*a); });
  return [a] { return run_nufft(*a); };
}

} // namespace mri::cli
