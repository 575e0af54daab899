// mri.frames (mri/frames.hpp) and mri.ImageWarp (mri/mcir.hpp): the binnings as dicts of NumPy
// arrays, the warp as an operator like the others (docs/python.md, "Frames and motion").
#include <pybind11/stl.h>

#include <optional>

#include "arrays.hpp"
#include "bindings.hpp"
#include "mri/breathing.hpp"
#include "mri/dynamic.hpp"
#include "mri/error.hpp"
#include "mri/frames.hpp"
#include "mri/mcir.hpp"

namespace mri::python {
namespace {

Expiration expiration_of(const std::string &name) {
  if (name == "auto") return Expiration::Auto;
  if (name == "low") return Expiration::Low;
  if (name == "high") return Expiration::High;
  detail::invalid_argument("expiration", "'" + name + "'", "expected one of auto, low, high");
}

py::dict binning_dict(FrameBinning &&b) {
  py::dict d;
  d["method"] = b.method == BinningMethod::Time ? "time" : "amplitude";
  d["source"] = b.source;
  d["signal"] = to_array(std::move(b.signal), {static_cast<py::ssize_t>(b.signal.size())});
  d["bin_edges"] = to_array(std::move(b.bin_edges), {static_cast<py::ssize_t>(b.bin_edges.size())});
  py::list frames;
  for (std::vector<std::int64_t> &f : b.frames) {
    const auto n = static_cast<py::ssize_t>(f.size());
    frames.append(to_array(std::move(f), {n}));
  }
  d["frames"] = frames;
  const auto n = static_cast<py::ssize_t>(b.readouts_per_frame.size());
  d["readouts_per_frame"] = to_array(std::move(b.readouts_per_frame), {n});
  const auto u = static_cast<py::ssize_t>(b.unassigned.size());
  d["unassigned"] = to_array(std::move(b.unassigned), {u});
  d["flipped"] = b.flipped;
  d["note"] = b.note;
  return d;
}

py::dict gating_dict(GatingSignal &&g) {
  py::dict d;
  const auto n = static_cast<py::ssize_t>(g.values.size());
  d["values"] = to_array(std::move(g.values), {n});
  d["source"] = g.source;
  d["breathing_peak_found"] = g.breathing_peak_found;
  d["peak_hz"] = g.peak_hz;
  d["peak_ratio"] = g.peak_ratio;
  d["note"] = g.note;
  return d;
}

// mri.frames.plan_frames' keywords as the SDK's request (the Python layer checks their types).
FrameRequest frame_request(const py::dict &d) {
  FrameRequest r;
  r.bins = d["bins"].cast<int>();
  r.gating = d["gating"].cast<std::string>();
  r.frames_readouts = d["frames_readouts"].cast<std::int64_t>();
  r.frames_step = d["frames_step"].cast<std::int64_t>();
  r.fall_back_to_time = d["fall_back_to_time"].cast<bool>();
  r.expiration = expiration_of(d["expiration"].cast<std::string>());
  r.self_gating.low_hz = d["low_hz"].cast<double>();
  r.self_gating.high_hz = d["high_hz"].cast<double>();
  r.self_gating.window_seconds = d["window_seconds"].cast<double>();
  r.self_gating.peak_ratio = d["peak_ratio"].cast<double>();
  return r;
}

// One acquisition as KSpaceData: (M, d) points (d = the trajectory's dimensions), coil-major samples.
KSpaceData acquisition(const py::array &points, const py::array &samples, const std::optional<py::array> &weights,
                       int coils) {
  if (points.ndim() != 2) throw py::value_error("trajectory: expected (M, d) points");
  Trajectory t = to_trajectory(points, static_cast<int>(points.shape(1)), "trajectory");
  const auto m = static_cast<std::int64_t>(t.size());
  std::vector<float> w = weights ? to_vector<float>(*weights, "weights", m) : std::vector<float>{};
  return KSpaceData(std::move(t), to_vector<cfloat>(samples, "kspace", m * coils), std::move(w), coils);
}

ReadoutLayout layout_of(int samples_per_readout, double readout_seconds, const std::optional<std::vector<double>> &times) {
  ReadoutLayout layout;
  layout.samples_per_readout = samples_per_readout;
  layout.readout_seconds = readout_seconds;
  if (times) layout.times = *times;
  return layout;
}

// Each frame as (points (M_f, d), kspace (M_f, coils), weights (M_f,) or None).
py::list frames_out(std::vector<KSpaceData> &&frames) {
  py::list out;
  for (KSpaceData &f : frames) {
    const auto m = static_cast<py::ssize_t>(f.trajectory().size());
    py::object w = py::none();
    if (!f.weights().empty()) w = to_array(std::vector<float>(f.weights()), {m});
    out.append(py::make_tuple(from_trajectory(f.trajectory()), to_array(std::vector<cfloat>(f.samples()), {m, f.coils()}), w));
  }
  return out;
}

// (nx, ny[, nz], 3) float32 displacements (u, v, w in voxels), Fortran order, as a field on `grid`.
DisplacementField field_of(const py::array &a, const Grid &grid, const char *name) {
  const std::span<const float> v = values<float>(a, name, 3 * grid.voxels());
  DisplacementField f(grid);
  const auto n = static_cast<std::size_t>(grid.voxels());
  std::copy(v.begin(), v.begin() + n, f.u.values().begin());
  std::copy(v.begin() + n, v.begin() + 2 * n, f.v.values().begin());
  std::copy(v.begin() + 2 * n, v.end(), f.w.values().begin());
  return f;
}

void bind_frames(py::module_ &m) {
  m.def("bin_by_time", [](std::int64_t readouts, std::int64_t per_frame, std::int64_t step) {
    return binning_dict(bin_by_time(readouts, per_frame, step));
  });
  m.def("bin_by_amplitude", [](const std::vector<double> &signal, int bins, const std::string &expiration) {
    return binning_dict(bin_by_amplitude(std::span<const double>(signal), bins, expiration_of(expiration)));
  });
  m.def("self_gating_signal", [](const py::array &points, const py::array &samples, int coils, int samples_per_readout,
                                 double readout_seconds, const std::optional<std::vector<double>> &times, double low_hz,
                                 double high_hz, double window_seconds, double peak_ratio) {
    const KSpaceData data = acquisition(points, samples, std::nullopt, coils);
    SelfGatingOptions o;
    o.low_hz = low_hz;
    o.high_hz = high_hz;
    o.window_seconds = window_seconds;
    o.peak_ratio = peak_ratio;
    GatingSignal g;
    {
      py::gil_scoped_release release;
      g = self_gating_signal(data, layout_of(samples_per_readout, readout_seconds, times), o);
    }
    return gating_dict(std::move(g));
  });
  m.def("read_gating_signal", [](const std::string &path, std::int64_t readouts) {
    return gating_dict(read_gating_signal(path, readouts));
  });
  m.def("plan_frames", [](const py::array &points, const py::array &samples, int coils, int samples_per_readout,
                          double readout_seconds, const std::optional<std::vector<double>> &times,
                          const py::dict &request, const std::optional<std::vector<double>> &header_signal) {
    const KSpaceData data = acquisition(points, samples, std::nullopt, coils);
    const FrameRequest r = frame_request(request);
    FrameBinning b;
    {
      py::gil_scoped_release release;
      b = plan_frames(data, layout_of(samples_per_readout, readout_seconds, times), r,
                      header_signal ? std::span<const double>(*header_signal) : std::span<const double>());
    }
    return binning_dict(std::move(b));
  });
  m.def("join_frames", [](const py::list &frames) {
    std::vector<KSpaceData> data;
    for (const py::handle &f : frames) {
      const auto t = f.cast<py::tuple>(); // (points, samples, weights or None, coils)
      const auto weights = t[2].is_none() ? std::optional<py::array>() : t[2].cast<py::array>();
      data.push_back(acquisition(t[0].cast<py::array>(), t[1].cast<py::array>(), weights, t[3].cast<int>()));
    }
    std::vector<KSpaceData> joined;
    joined.push_back(join_frames(data));
    const py::list out = frames_out(std::move(joined));
    return py::tuple(out[0]);
  });
  m.def("split_frames", [](const py::array &points, const py::array &samples, const std::optional<py::array> &weights,
                           int coils, int samples_per_readout, double readout_seconds,
                           const std::optional<std::vector<double>> &times,
                           const std::vector<std::vector<std::int64_t>> &frames) {
    const KSpaceData data = acquisition(points, samples, weights, coils);
    FrameBinning binning;
    binning.frames = frames;
    for (const auto &f : frames) binning.readouts_per_frame.push_back(static_cast<std::int64_t>(f.size()));
    return frames_out(split_frames(data, layout_of(samples_per_readout, readout_seconds, times), binning));
  });
}

void bind_image_warp(py::module_ &m) {
  py::class_<ImageWarp>(m, "ImageWarp")
      .def(py::init([](const py::array &field, const std::vector<std::int64_t> &matrix, bool jacobian_weighting) {
        const Grid grid = to_grid(matrix);
        return ImageWarp(field_of(field, grid, "field"), ImageWarpOptions{jacobian_weighting});
      }))
      .def("forward", [](const ImageWarp &w, const py::array &x) {
        const Image reference = to_image(x, w.grid(), "x");
        Image state(w.grid());
        w.forward(reference, state);
        return from_image(std::move(state));
      })
      .def("adjoint", [](const ImageWarp &w, const py::array &y) {
        const Image state = to_image(y, w.grid(), "y");
        Image reference(w.grid());
        w.adjoint(state, reference);
        return from_image(std::move(reference));
      })
      .def_property_readonly("is_identity", &ImageWarp::is_identity);
}

// ---- the free-breathing simulation (mri/breathing.hpp) ----------------------------------------
Phantom phantom_of(const Grid &grid) {
  return grid.dims() == 2 ? Phantom::shepp_logan_2d() : Phantom::shepp_logan_3d();
}

BreathingOptions breathing_options(double amplitude_voxels, double ap_expansion, double period_seconds,
                                   double readout_seconds, int sharpness, double irregularity, std::uint64_t seed) {
  BreathingOptions o;
  o.amplitude_voxels = amplitude_voxels;
  o.ap_expansion = ap_expansion;
  o.period_seconds = period_seconds;
  o.readout_seconds = readout_seconds;
  o.sharpness = sharpness;
  o.irregularity = irregularity;
  o.seed = seed;
  return o;
}

py::array_t<float> field_out(const DisplacementField &f) {
  const Grid &grid = f.grid();
  std::vector<float> v;
  v.reserve(3 * f.u.size());
  for (const RealVolume *c : {&f.u, &f.v, &f.w}) v.insert(v.end(), c->values().begin(), c->values().end());
  return to_array(std::move(v), image_shape(grid, {3}));
}

void bind_breathing(py::module_ &m) {
  m.def("simulate_breathing", [](const py::array &points, const std::vector<std::int64_t> &matrix, int samples_per_readout,
                                 int coils, const BreathingOptions &o, double snr, std::uint64_t noise_seed) {
    const Grid grid = to_grid(matrix);
    const Trajectory t = to_trajectory(points, grid.dims(), "trajectory");
    BreathingAcquisition acq;
    {
      py::gil_scoped_release release;
      acq = simulate_breathing(phantom_of(grid), t, grid, samples_per_readout, coils, o, snr, noise_seed);
    }
    const auto m_samples = static_cast<py::ssize_t>(acq.data.trajectory().size());
    py::dict d;
    d["kspace"] = to_array(std::vector<cfloat>(acq.data.samples()), {m_samples, acq.data.coils()});
    const auto r = static_cast<py::ssize_t>(acq.trace.size());
    d["trace"] = to_array(std::move(acq.trace), {r});
    d["readout_seconds"] = acq.layout.readout_seconds;
    d["samples_per_readout"] = acq.layout.samples_per_readout;
    return d;
  });
  m.def("breathing_displacement", [](const std::vector<std::int64_t> &matrix, double fixed, double moving,
                                     const BreathingOptions &o) {
    const Grid grid = to_grid(matrix);
    return field_out(motion_displacement(grid, breathing_motion(fixed, grid.dims(), o), breathing_motion(moving, grid.dims(), o)));
  });
  py::class_<BreathingOptions>(m, "BreathingOptions")
      .def(py::init(&breathing_options));
}

} // namespace

DisplacementField displacement_field(const py::array &a, const Grid &grid, const char *name) {
  return field_of(a, grid, name);
}

py::array_t<float> displacement_array(const DisplacementField &field) { return field_out(field); }

void bind_dynamic(py::module_ &m) {
  bind_frames(m);
  bind_image_warp(m);
  bind_breathing(m);
}

} // namespace mri::python
