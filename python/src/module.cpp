// mri._mri: the SDK's C++ API for the pure-Python package `mri` (python/mri/), which converts
// arguments to the arrays checked here and documents the API (docs/python.md).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <mutex>
#include <optional>

#include "arrays.hpp"
#include "bindings.hpp"
#include "enums.hpp"
#include "mri/bart.hpp"
#include "mri/coil_simulation.hpp"
#include "mri/coils.hpp"
#include "mri/density.hpp"
#include "mri/error.hpp"
#include "mri/metrics.hpp"
#include "mri/motion.hpp"
#include "mri/options.hpp"
#include "mri/phantom.hpp"
#include "mri/trajectory.hpp"

#ifndef MRI_PYTHON_VERSION
#error "MRI_PYTHON_VERSION: the project's version, set by python/CMakeLists.txt"
#endif

namespace mri::python {
namespace {

// ---- trajectories ----------------------------------------------------------------------------
traj::SpokeOrder order_of(bool golden) { return golden ? traj::SpokeOrder::GoldenAngle : traj::SpokeOrder::Uniform; }

void bind_trajectories(py::module_ &m) {
  using Matrix = const std::vector<std::int64_t> &;
  m.def("traj_cartesian", [](Matrix matrix) { return from_trajectory(traj::cartesian(to_grid(matrix))); });
  m.def("traj_radial", [](Matrix matrix, int spokes, int readout, bool golden) {
    return from_trajectory(traj::radial(to_grid(matrix), spokes, readout, order_of(golden)));
  });
  m.def("traj_spiral", [](Matrix matrix, int interleaves, int samples, double undersampling) {
    return from_trajectory(traj::spiral(to_grid(matrix), interleaves, samples, undersampling));
  });
  m.def("traj_propeller", [](Matrix matrix, int blades, int lines, int readout) {
    return from_trajectory(traj::propeller(to_grid(matrix), blades, lines, readout));
  });
  m.def("traj_stack_of_stars", [](Matrix matrix, int spokes, int readout, bool golden) {
    return from_trajectory(traj::stack_of_stars(to_grid(matrix), spokes, readout, order_of(golden)));
  });
  m.def("traj_koosh", [](Matrix matrix, int spokes, int readout) {
    return from_trajectory(traj::koosh(to_grid(matrix), spokes, readout));
  });
  m.def("traj_uniform_random", [](Matrix matrix, std::size_t points, std::uint64_t seed) {
    return from_trajectory(traj::uniform_random(to_grid(matrix), points, seed));
  });
}

// ---- phantom, simulated coils, noise -------------------------------------------------------
Phantom phantom_for(const Grid &grid) {
  return grid.dims() == 2 ? Phantom::shepp_logan_2d() : Phantom::shepp_logan_3d();
}

void bind_phantom(py::module_ &m) {
  using Matrix = const std::vector<std::int64_t> &;
  m.def("phantom_image", [](Matrix matrix, int supersample) {
    const Grid grid = to_grid(matrix);
    return from_image(phantom_for(grid).rasterize(grid, supersample));
  });
  m.def("phantom_kspace", [](const py::array &points, Matrix matrix, int coils) {
    const Grid grid = to_grid(matrix);
    const Trajectory t = to_trajectory(points, grid.dims());
    if (coils == 0) return to_array(phantom_for(grid).kspace(t, grid), {static_cast<py::ssize_t>(t.size())});
    const SimulatedCoils array(grid.dims(), coils);
    return to_array(array.kspace(phantom_for(grid), t, grid), {static_cast<py::ssize_t>(t.size()), coils});
  });
  m.def("simulated_maps", [](Matrix matrix, int coils) {
    const Grid grid = to_grid(matrix);
    CoilSensitivities maps = SimulatedCoils(grid.dims(), coils).maps(grid);
    std::vector<cfloat> v = maps.values();
    return to_array(std::move(v), image_shape(grid, {coils}));
  });
  m.def("add_noise", [](const py::array &samples, double snr, std::uint64_t seed) {
    std::vector<cfloat> v = to_vector<cfloat>(samples, "samples");
    add_noise(v, snr, seed);
    std::vector<py::ssize_t> shape(samples.shape(), samples.shape() + samples.ndim());
    return to_array(std::move(v), shape);
  });
  m.def("psnr", [](const py::array &image, const py::array &reference, Matrix matrix) {
    const Grid grid = to_grid(matrix);
    return psnr(to_image(image, grid, "image"), to_image(reference, grid, "reference"));
  });
}

// ---- coil maps and density compensation ------------------------------------------------------
void bind_coils_density(py::module_ &m) {
  using Matrix = const std::vector<std::int64_t> &;
  m.def("estimate_sensitivities", [](const py::array &points, const py::array &samples, const std::optional<py::array> &weights,
                                     int coils, Matrix matrix, const std::string &method, int calibration,
                                     double mask_threshold, int espirit_kernel, double espirit_threshold,
                                     double espirit_crop) {
    const Grid grid = to_grid(matrix);
    Trajectory t = to_trajectory(points, grid.dims());
    const auto n = static_cast<std::int64_t>(t.size());
    std::vector<float> w = weights ? to_vector<float>(*weights, "weights", n) : std::vector<float>{};
    const KSpaceData data(std::move(t), to_vector<cfloat>(samples, "kspace", n * coils), std::move(w), coils);
    SensitivityOptions o;
    o.method = parse_enum("method", method, {MapEstimate::Direct, MapEstimate::Espirit});
    o.calibration = calibration;
    o.mask_threshold = mask_threshold;
    o.espirit_kernel = espirit_kernel;
    o.espirit_threshold = espirit_threshold;
    o.espirit_crop = espirit_crop;
    CoilSensitivities maps;
    {
      py::gil_scoped_release release;
      maps = estimate_sensitivities(data, grid, o);
    }
    std::vector<cfloat> v = maps.values();
    return to_array(std::move(v), image_shape(grid, {coils}));
  });
  m.def("density_radial", [](const py::array &points, Matrix matrix, int spokes) {
    const Grid grid = to_grid(matrix);
    std::vector<float> w = density::radial(to_trajectory(points, grid.dims()), grid, spokes);
    const auto n = static_cast<py::ssize_t>(w.size());
    return to_array(std::move(w), {n});
  });
  m.def("density_spiral", [](const py::array &points, Matrix matrix, int interleaves, double undersampling) {
    const Grid grid = to_grid(matrix);
    std::vector<float> w = density::spiral(to_trajectory(points, grid.dims()), grid, interleaves, undersampling);
    const auto n = static_cast<py::ssize_t>(w.size());
    return to_array(std::move(w), {n});
  });
  m.def("density_pipe_menon", [](const py::array &points, Matrix matrix, int iterations, int width,
                                 double oversampling, int threads) {
    const Grid grid = to_grid(matrix);
    const Trajectory t = to_trajectory(points, grid.dims());
    density::PipeMenonOptions o;
    o.iterations = iterations;
    o.width = width;
    o.oversampling = oversampling;
    o.threads = threads;
    density::PipeMenonResult r;
    {
      py::gil_scoped_release release;
      r = density::pipe_menon(t, grid, o);
    }
    const auto n = static_cast<py::ssize_t>(r.weights.size());
    return py::make_tuple(to_array(std::move(r.weights), {n}), r.residuals);
  });
}

// ---- motion estimation ---------------------------------------------------------------------
RealVolume to_volume(const py::array &a, const Grid &grid, const char *name) {
  return RealVolume(grid, to_vector<float>(a, name, grid.voxels()));
}

// (nx, ny, nz, 3): u, v, w (voxels along x, y, z).
py::array_t<float> from_field(const DisplacementField &f) {
  const Grid &grid = f.grid();
  std::vector<float> v;
  v.reserve(3 * f.u.size());
  for (const RealVolume *c : {&f.u, &f.v, &f.w}) v.insert(v.end(), c->values().begin(), c->values().end());
  return to_array(std::move(v), {grid.nx(), grid.ny(), grid.nz(), 3});
}

struct Motion {
  std::unique_ptr<MotionEstimator> estimator;
  std::mutex mutex;
};

} // namespace

py::dict motion_report_dict(const MotionReport &r) {
  py::dict d;
  d["transfer_ms"] = r.transfer_ms;
  d["pyramid_ms"] = r.pyramid_ms;
  d["gradients_ms"] = r.gradients_ms;
  d["warp_ms"] = r.warp_ms;
  d["tensor_ms"] = r.tensor_ms;
  d["gaussian_ms"] = r.gaussian_ms;
  d["solver_ms"] = r.solver_ms;
  d["total_ms"] = r.total_ms;
  d["solver_sweeps"] = r.solver_sweeps;
  d["solver_cycles"] = r.solver_cycles;
  d["solver_residual"] = r.solver_residual;
  d["solver_switches"] = r.solver_switches;
  d["solver_nonfinite"] = r.solver_nonfinite;
  d["backend"] = to_string(r.backend);
  return d;
}

namespace {

std::shared_ptr<Motion> make_motion(const std::vector<std::int64_t> &matrix, double alpha, double gamma, double rho,
                                    double sigma, int iterations, int warps, int levels, double omega,
                                    const std::string &solver, double tolerance, const std::string &memory,
                                    const std::string &derivative, const std::string &backend,
                                    const std::string &precision) {
  MotionOptions o;
  o.alpha = alpha, o.gamma = gamma, o.rho = rho, o.sigma = sigma;
  o.iterations = iterations, o.warps = warps, o.levels = levels, o.omega = omega;
  o.tolerance = tolerance;
  if (solver == "auto") o.solver = MotionSolver::Auto;
  else if (solver == "multigrid") o.solver = MotionSolver::Multigrid;
  else if (solver == "jacobi") o.solver = MotionSolver::Jacobi;
  else if (solver == "red-black-sor") o.solver = MotionSolver::RedBlackSor;
  else detail::invalid_argument("solver", "'" + solver + "'", "expected auto, multigrid, jacobi or red-black-sor");
  if (memory == "cached") o.memory = MotionMemory::Cached;
  else if (memory == "shared-tiles") o.memory = MotionMemory::SharedTiles;
  else detail::invalid_argument("memory", "'" + memory + "'", "expected cached or shared-tiles");
  if (derivative == "forward") o.derivative = MotionDerivative::Forward;
  else if (derivative == "central") o.derivative = MotionDerivative::Central;
  else detail::invalid_argument("derivative", "'" + derivative + "'", "expected forward or central");
  o.backend = parse_enum("backend", backend, {Backend::Auto, Backend::Cpu, Backend::Cuda});
  o.precision = parse_enum("precision", precision, {Precision::Float32, Precision::Float64});
  auto m = std::make_shared<Motion>();
  const Grid grid = to_grid(matrix);
  py::gil_scoped_release release;
  m->estimator = std::make_unique<MotionEstimator>(grid, o);
  return m;
}

void bind_motion(py::module_ &m) {
  py::class_<Motion, std::shared_ptr<Motion>>(m, "MotionEstimator")
      .def(py::init(&make_motion), py::arg("matrix"), py::arg("alpha"), py::arg("gamma"), py::arg("rho"),
           py::arg("sigma"), py::arg("iterations"), py::arg("warps"), py::arg("levels"), py::arg("omega"),
           py::arg("solver"), py::arg("tolerance"), py::arg("memory"), py::arg("derivative"), py::arg("backend"), py::arg("precision"))
      .def("estimate",
           [](Motion &self, const py::array &fixed, const py::array &moving) {
             const Grid grid = self.estimator->grid();
             RealVolume f = to_volume(fixed, grid, "fixed"), mv = to_volume(moving, grid, "moving");
             DisplacementField w;
             {
               py::gil_scoped_release release;
               std::lock_guard lock(self.mutex);
               w = self.estimator->estimate(f, mv);
             }
             return from_field(w);
           })
      .def("estimate_sequence",
           [](Motion &self, const py::array &frames, int count) {
             const Grid grid = self.estimator->grid();
             const std::span<const float> all = values<float>(frames, "frames", grid.voxels() * count);
             std::vector<RealVolume> volumes;
             for (int k = 0; k < count; ++k) {
               const auto first = all.begin() + k * grid.voxels();
               volumes.emplace_back(grid, std::vector<float>(first, first + grid.voxels()));
             }
             std::vector<DisplacementField> fields;
             {
               py::gil_scoped_release release;
               std::lock_guard lock(self.mutex);
               fields = self.estimator->estimate_sequence(volumes);
             }
             py::list out;
             for (const DisplacementField &f : fields) out.append(from_field(f));
             return out;
           })
      .def_property_readonly("report",
                             [](const Motion &self) { return motion_report_dict(self.estimator->report()); })
      .def_property_readonly("matrix", [](const Motion &self) { return self.estimator->grid().extents(); });
  m.def("motion_synthetic", [](const std::vector<std::int64_t> &matrix, const std::string &motion, double amplitude,
                               std::uint64_t seed) {
    const Grid grid = to_grid(matrix);
    SyntheticMotion kind = SyntheticMotion::Translation;
    if (motion == "rotation") kind = SyntheticMotion::Rotation;
    else if (motion == "swirl") kind = SyntheticMotion::Swirl;
    else if (motion == "compressive") kind = SyntheticMotion::Compressive;
    else if (motion != "translation")
      detail::invalid_argument("motion", "'" + motion + "'", "expected translation, rotation, swirl or compressive");
    const DisplacementField truth = synthetic_field(grid, kind, amplitude);
    const RealVolume fixed = textured_volume(grid, seed);
    RealVolume moving = apply_motion(fixed, truth);
    std::vector<float> f = fixed.values(), mv = std::move(moving.values());
    const std::vector<py::ssize_t> shape{grid.nx(), grid.ny(), grid.nz()};
    return py::make_tuple(to_array(std::move(f), shape), to_array(std::move(mv), shape), from_field(truth));
  });
}

// ---- BART files ---------------------------------------------------------------------------
void bind_bart(py::module_ &m) {
  m.def("read_cfl", [](const std::filesystem::path &base) {
    bart::CflArray a;
    {
      py::gil_scoped_release release;
      a = bart::read_cfl(base);
    }
    std::vector<py::ssize_t> shape(a.dims.begin(), a.dims.end());
    return to_array(std::move(a.data), shape);
  });
  m.def("write_cfl", [](const std::filesystem::path &base, const std::vector<std::int64_t> &dims, const py::array &data) {
    const std::vector<cfloat> v = to_vector<cfloat>(data, "data");
    py::gil_scoped_release release;
    bart::write_cfl(base, dims, v);
  });
  m.def("bart_nufft_scale", [](const std::vector<std::int64_t> &matrix) { return bart::nufft_scale(to_grid(matrix)); });
}

} // namespace
} // namespace mri::python

PYBIND11_MODULE(_mri, m) {
  using namespace mri;
  using namespace mri::python;
  m.doc() = "The mri SDK's C++ API (use the package mri)";
  m.attr("__version__") = MRI_PYTHON_VERSION;
  bind_errors(m);
  m.def("cuda_available", &cuda_available);
  m.def("cuda_unavailable_reason", &cuda_unavailable_reason);
  bind_trajectories(m);
  bind_phantom(m);
  bind_coils_density(m);
  bind_motion(m);
  bind_bart(m);
  bind_operators(m);
  bind_reconstruct(m);
  bind_dynamic(m);
}
