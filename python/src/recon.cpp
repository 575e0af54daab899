// mri.reconstruct: ReconOptions from keyword arguments (one key per field, the names of
// docs/python.md), ReconReport as a dict.
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cmath>
#include <memory>
#include <optional>
#include <set>

#include "arrays.hpp"
#include "bindings.hpp"
#include "enums.hpp"
#include "mri/bart.hpp"
#include "mri/batch.hpp"
#include "mri/dynamic.hpp"
#include "mri/mcir.hpp"
#include "mri/offresonance.hpp"
#include "mri/reconstruct.hpp"

namespace mri::python {

// dynamic.cpp: (nx, ny[, nz], 3) float32 displacements as a DisplacementField on grid, and back.
DisplacementField displacement_field(const py::array &a, const Grid &grid, const char *name);
py::array_t<float> displacement_array(const DisplacementField &field);

namespace {

// Reads the options out of `kw`, each key once; a key left over is a TypeError, as Python
// reports an unexpected keyword argument.
class Options {
public:
  // what: how finish() names a key left over ("reconstruct() got an unexpected keyword argument",
  // "terms: unexpected key").
  explicit Options(const py::dict &kw, std::string what = "reconstruct() got an unexpected keyword argument")
      : kw_(kw), what_(std::move(what)) {}
  template <class T> void get(const char *key, T &out) {
    if (kw_.contains(key)) {
      used_.insert(key);
      const py::object v = kw_[key];
      if (v.is_none()) return;
      try {
        out = v.cast<T>();
      } catch (const py::cast_error &) {
        throw py::type_error(std::string(key) + ": " + py::repr(v).cast<std::string>() + " (" +
                             py::str(py::type::of(v).attr("__name__")).cast<std::string>() + ") is not a valid value");
      }
    }
  }
  template <class Enum> void get_enum(const char *key, Enum &out, std::initializer_list<Enum> values) {
    std::string name;
    get(key, name);
    if (!name.empty()) out = parse_enum(key, name, values);
  }
  py::object take(const char *key) {
    if (!kw_.contains(key)) return py::none();
    used_.insert(key);
    return kw_[key];
  }
  void finish() const {
    for (auto item : kw_) {
      const std::string key = py::str(item.first);
      if (!used_.count(key)) throw py::type_error(what_ + " '" + key + "'");
    }
  }

private:
  py::dict kw_;
  std::string what_;
  std::set<std::string> used_;
};

SparseTerm term_of(const py::handle &h) {
  if (py::isinstance<py::str>(h)) return parse_bart_term(h.cast<std::string>());
  if (!py::isinstance<py::dict>(h))
    throw py::type_error("terms: each term is a BART spec string ('W:3:0:0.001') or a dict");
  Options o(h.cast<py::dict>(), "terms: unexpected key");
  SparseTerm t;
  o.get_enum("penalty", t.penalty,
             {SparsePenalty::L1Wavelet, SparsePenalty::TotalVariation, SparsePenalty::L1Image, SparsePenalty::L2,
              SparsePenalty::LocallyLowRank});
  o.get("lam", t.lambda);
  o.get("axes", t.axes);
  o.get("joint", t.joint);
  o.get_enum("wavelet", t.wavelet, {Wavelet::Haar, Wavelet::Daubechies2, Wavelet::Daubechies4});
  o.get("isotropic", t.isotropic);
  o.get("block", t.block);
  o.finish();
  return t;
}

ReconOptions recon_options(const py::dict &kw, const Grid &grid, bool &bart_units) {
  Options o(kw);
  ReconOptions r;
  o.get_enum("backend", r.backend, {Backend::Auto, Backend::Cpu, Backend::Cuda});
  o.get_enum("method", r.method, {Method::Auto, Method::Exact, Method::Nufft});
  o.get_enum("precision", r.precision, {Precision::Float32, Precision::Float64});
  SolverOptions &s = r.solver;
  o.get("iterations", s.iterations);
  o.get("tolerance", s.tolerance);
  o.get("lam", s.lambda);
  o.get_enum("regularizer", s.regularizer, {Regularizer::None, Regularizer::Tikhonov, Regularizer::FiniteDifference});
  o.get_enum("normal", s.normal, {Normal::Toeplitz, Normal::Direct});
  if (py::object terms = o.take("terms"); !terms.is_none())
    for (py::handle h : terms) s.terms.push_back(term_of(h));
  o.get_enum("solver", s.proximal.algorithm,
             {ProximalAlgorithm::Auto, ProximalAlgorithm::Fista, ProximalAlgorithm::Admm, ProximalAlgorithm::PrimalDual});
  o.get("admm_rho", s.proximal.admm_rho);
  o.get("admm_cg_iterations", s.proximal.admm_cg_iterations);
  o.get("admm_cg_tolerance", s.proximal.admm_cg_tolerance);
  o.get("power_iterations", s.proximal.power_iterations);
  o.get("fista_power_iterations", s.proximal.fista_power_iterations);
  o.get("tv_prox_iterations", s.proximal.tv_prox_iterations);
  o.get("cycle_spinning", s.proximal.cycle_spinning);
  o.get("seed", s.proximal.seed);
  o.get_enum("scaling", s.scaling, {DataScaling::Bart, DataScaling::None});
  o.get("nufft_tolerance", r.nufft.tolerance);
  o.get_enum("gridding", r.nufft.gridding, {Gridding::Auto, Gridding::Scatter, Gridding::Gather, Gridding::ScatterFixed});
  o.get_enum("policy", r.gpu.policy,
             {KernelPolicy::Auto, KernelPolicy::ScatterAtomic, KernelPolicy::Gather, KernelPolicy::Register,
              KernelPolicy::ConstantChunked, KernelPolicy::SfuTrig, KernelPolicy::Tuned, KernelPolicy::SeparableGemm});
  o.get("devices", r.gpu.devices);
  o.get("memory_limit", r.gpu.memory_limit);
  o.get_enum("maps", r.coils.maps, {CoilMaps::Estimate, CoilMaps::Require});
  o.get_enum("map_method", r.coils.estimation.method, {MapEstimate::Direct, MapEstimate::Espirit});
  o.get("calibration", r.coils.estimation.calibration);
  o.get("mask_threshold", r.coils.estimation.mask_threshold);
  o.get("espirit_kernel", r.coils.estimation.espirit_kernel);
  o.get("espirit_threshold", r.coils.estimation.espirit_threshold);
  o.get("espirit_crop", r.coils.estimation.espirit_crop);
  o.get("virtual_coils", r.coils.virtual_coils);
  SegmentationOptions &seg = r.offresonance.segmentation;
  o.get("segments", seg.segments);
  o.get_enum("segment_interpolator", seg.interpolator, {SegmentInterpolator::LeastSquares, SegmentInterpolator::Hanning});
  o.get("segment_tolerance", seg.tolerance);
  o.get("max_segments", seg.max_segments);
  o.get("histogram_bins", seg.histogram_bins);
  o.get("q_cache_dir", r.q_cache_dir);
  if (py::object f = o.take("on_iteration"); !f.is_none()) {
    r.on_iteration = [f](int k, const Image &x, double residual) {
      py::gil_scoped_acquire gil;
      f(k, from_image(Image(x)), residual);
    };
  }
  if (py::object f = o.take("on_phase"); !f.is_none()) {
    r.on_phase = [f](const ReconPhase &p) {
      py::gil_scoped_acquire gil;
      f(std::string(p.name), p.fraction, p.expected_seconds);
    };
  }
  std::string units = "sdk";
  o.get("units", units);
  if (units != "sdk" && units != "bart") detail::invalid_argument("units", "'" + units + "'", "expected sdk or bart");
  bart_units = units == "bart";
  o.finish();
  // BART's pics and nufft use the unitary F / sqrt(N): its l2 weight is ours / N and an l1 weight
  // ours / sqrt(N) (the rule of `mri recon` on BART inputs, cli/cmd_recon.cpp).
  if (bart_units) {
    const double voxels = static_cast<double>(grid.voxels());
    s.lambda *= voxels;
    for (SparseTerm &t : s.terms) t.lambda *= std::sqrt(voxels);
  }
  if (s.lambda > 0 && s.regularizer == Regularizer::None && !kw.contains("regularizer"))
    s.regularizer = Regularizer::Tikhonov; // lam alone means Tikhonov, as in the CLI
  return r;
}

py::dict report_dict(const ReconReport &r) {
  py::dict d;
  d["backend"] = to_string(r.backend);
  d["backend_note"] = r.backend_note;
  d["wrapped_samples"] = r.wrapped_samples;
  d["normal"] = to_string(r.normal);
  d["method"] = to_string(r.method);
  d["method_note"] = r.method_note;
  d["acquired_coils"] = r.acquired_coils;
  d["coils"] = r.coils;
  d["coil_energy_kept"] = r.coil_energy_kept;
  d["maps"] = r.maps;
  d["setup_seconds"] = r.setup_seconds;
  d["coil_seconds"] = r.coil_seconds;
  d["transfer_seconds"] = r.transfer_seconds;
  d["fhd_seconds"] = r.fhd_seconds;
  d["q_seconds"] = r.q_seconds;
  d["fft_setup_seconds"] = r.fft_setup_seconds;
  d["cg_seconds"] = r.cg_seconds;
  d["total_seconds"] = r.total_seconds;
  d["iterations"] = r.iterations;
  d["status"] = to_string(r.status);
  d["residuals"] = r.residuals;
  d["solver"] = r.solver;
  d["objective"] = r.objective;
  d["step"] = r.step;
  d["lipschitz"] = r.lipschitz;
  d["lipschitz_cached"] = r.lipschitz_cached;
  d["rejected_steps"] = r.rejected_steps;
  d["step_raises"] = r.step_raises;
  d["data_scale"] = r.data_scale;
  d["q_cache"] = to_string(r.q_cache);
  d["q_cache_message"] = r.q_cache_message;
  d["q_cache_file"] = r.q_cache_file.string();
  d["device_bytes"] = r.device_bytes;
  d["toeplitz_fft"] = r.toeplitz_fft;
  d["q_method"] = r.q_method;
  py::list devices;
  for (const DevicePhaseSeconds &s : r.device_seconds) {
    py::dict e;
    e["device"] = s.device;
    e["fhd_seconds"] = s.fhd_seconds;
    e["q_seconds"] = s.q_seconds;
    e["cg_seconds"] = s.cg_seconds;
    devices.append(e);
  }
  d["device_seconds"] = devices;
  d["device_note"] = r.device_note;
  d["exchange_seconds"] = r.exchange_seconds;
  d["offresonance"] = r.offresonance;
  d["segments"] = r.segments;
  d["segment_interpolator"] = r.segment_interpolator;
  d["segment_error"] = r.segment_error;
  d["segment_max_error"] = r.segment_max_error;
  d["offresonance_note"] = r.offresonance_note;
  return d;
}

// One item's data: (points, kspace, weights or None, times or None, coils), as the Python layer
// prepares it.
KSpaceData item_data(const py::array &points, const py::array &samples, const std::optional<py::array> &weights,
                     const std::optional<py::array> &times, int coils, const Grid &grid) {
  Trajectory t = to_trajectory(points, grid.dims());
  const auto m = static_cast<std::int64_t>(t.size());
  std::vector<float> w = weights ? to_vector<float>(*weights, "weights", m) : std::vector<float>{};
  std::vector<float> tm = times ? to_vector<float>(*times, "times", m) : std::vector<float>{};
  return KSpaceData(std::move(t), to_vector<cfloat>(samples, "kspace", m * coils), std::move(w), coils, std::move(tm));
}

// The options of kw plus the maps and field map shared by every item.
ReconOptions options_for(const py::dict &kw, const Grid &grid, const std::optional<py::array> &sens, int sens_coils,
                         const std::optional<py::array> &field_map, bool &bart_units) {
  ReconOptions options = recon_options(kw, grid, bart_units);
  if (field_map)
    options.offresonance.field_map =
        std::make_shared<const FieldMap>(grid, to_vector<float>(*field_map, "field_map", grid.voxels()));
  if (sens)
    options.coils.sensitivities = std::make_shared<const CoilSensitivities>(
        grid, sens_coils, to_vector<cfloat>(*sens, "sens", grid.voxels() * sens_coils));
  return options;
}

// The image as NumPy, in BART's scale (sqrt(N) times ours: the CLI's to_bart_units) with BART units.
py::array_t<cfloat> image_out(Image &&image, bool bart_units) {
  if (bart_units) {
    const auto s = static_cast<float>(1.0 / bart::nufft_scale(image.grid()));
    for (cfloat &v : image.values()) v *= s;
  }
  return from_image(std::move(image));
}

py::tuple reconstruct_py(const py::array &points, const py::array &samples, const std::optional<py::array> &weights,
                         const std::optional<py::array> &times, int coils, const std::vector<std::int64_t> &matrix,
                         const std::optional<py::array> &sens, int sens_coils, const std::optional<py::array> &field_map,
                         const py::dict &kw) {
  const Grid grid = to_grid(matrix);
  bool bart_units = false;
  const ReconOptions options = options_for(kw, grid, sens, sens_coils, field_map, bart_units);
  const KSpaceData data = item_data(points, samples, weights, times, coils, grid);
  ReconResult result;
  {
    py::gil_scoped_release release;
    result = reconstruct(data, grid, options);
  }
  return py::make_tuple(image_out(std::move(result.image), bart_units), report_dict(result.report));
}

// mri::reconstruct_batch: items (tuples as item_data takes them) -> a list of (image, report,
// None) or (None, None, the item's exception), in the items' order, and each item's OpenMP team.
py::list reconstruct_batch_py(const py::list &items, const std::vector<std::int64_t> &matrix,
                              const std::optional<py::array> &sens, int sens_coils,
                              const std::optional<py::array> &field_map, int jobs, bool share_q, const py::dict &kw) {
  const Grid grid = to_grid(matrix);
  bool bart_units = false;
  const ReconOptions options = options_for(kw, grid, sens, sens_coils, field_map, bart_units);
  std::vector<KSpaceData> data;
  for (py::handle h : items) {
    const py::tuple t = h.cast<py::tuple>();
    data.push_back(item_data(t[0].cast<py::array>(), t[1].cast<py::array>(), t[2].cast<std::optional<py::array>>(),
                             t[3].cast<std::optional<py::array>>(), t[4].cast<int>(), grid));
  }
  BatchOptions batch;
  batch.jobs = jobs;
  batch.share_q = share_q;
  std::vector<BatchResult> results;
  {
    py::gil_scoped_release release;
    results = reconstruct_batch(data, grid, options, batch);
  }
  py::list out;
  for (BatchResult &r : results) {
    if (r.error) {
      out.append(py::make_tuple(py::none(), py::none(), python_error(r.error), r.threads));
    } else {
      out.append(py::make_tuple(image_out(std::move(r.image), bart_units), report_dict(r.report), py::none(),
                                r.threads));
    }
  }
  return out;
}

// Items (tuples as item_data takes them) as KSpaceData.
std::vector<KSpaceData> items_data(const py::list &items, const Grid &grid) {
  std::vector<KSpaceData> data;
  for (py::handle h : items) {
    const py::tuple t = h.cast<py::tuple>();
    data.push_back(item_data(t[0].cast<py::array>(), t[1].cast<py::array>(), t[2].cast<std::optional<py::array>>(),
                             t[3].cast<std::optional<py::array>>(), t[4].cast<int>(), grid));
  }
  return data;
}

// mri::reconstruct_frames: frames (items) -> (list of images in the frames' order, one report).
py::tuple reconstruct_frames_py(const py::list &frames, const std::vector<std::int64_t> &matrix,
                                const std::optional<py::array> &sens, int sens_coils,
                                const std::optional<py::array> &field_map, const py::dict &kw) {
  const Grid grid = to_grid(matrix);
  bool bart_units = false;
  const ReconOptions options = options_for(kw, grid, sens, sens_coils, field_map, bart_units);
  const std::vector<KSpaceData> data = items_data(frames, grid);
  FramesResult result;
  {
    py::gil_scoped_release release;
    result = reconstruct_frames(data, grid, options);
  }
  py::list images;
  for (Image &image : result.frames) images.append(image_out(std::move(image), bart_units));
  return py::make_tuple(images, report_dict(result.report));
}

// mri::reconstruct_motion_corrected: states (items), one field per state (None: the reference
// state, no warp) -> (image, report with the MotionCorrectionReport under "motion").
py::dict motion_correction_dict(const MotionCorrectionReport &r) {
  py::dict m;
  m["states"] = r.states;
  m["reference_states"] = r.reference_states;
  m["samples"] = r.samples;
  m["warp_seconds"] = r.warp_seconds;
  m["rhs_seconds"] = r.rhs_seconds;
  m["cg_warp_seconds"] = r.cg_warp_seconds;
  m["note"] = r.note;
  return m;
}

py::tuple reconstruct_motion_corrected_py(const py::list &states, const std::vector<std::int64_t> &matrix,
                                          const py::list &fields, bool jacobian_weighting,
                                          const std::optional<py::array> &sens, int sens_coils, const py::dict &kw) {
  const Grid grid = to_grid(matrix);
  bool bart_units = false;
  const ReconOptions options = options_for(kw, grid, sens, sens_coils, std::nullopt, bart_units);
  const std::vector<KSpaceData> data = items_data(states, grid);
  std::vector<DisplacementField> warps;
  for (py::handle h : fields)
    warps.push_back(h.is_none() ? DisplacementField(grid) : displacement_field(h.cast<py::array>(), grid, "fields"));
  MotionCorrectionOptions motion;
  motion.warp.jacobian_weighting = jacobian_weighting;
  MotionCorrectedResult result;
  {
    py::gil_scoped_release release;
    result = reconstruct_motion_corrected(data, grid, warps, options, motion);
  }
  py::dict report = report_dict(result.report);
  report["motion"] = motion_correction_dict(result.motion);
  return py::make_tuple(image_out(std::move(result.image), bart_units), report);
}

// ---- mri::reconstruct_motion_chain (mri/mcir.hpp) ------------------------------------------

// MotionChainOptions from the Python layer's dict (types checked there): rounds,
// refine_iterations, jacobian_weighting, fields (None or one per state, None for the reference's),
// motion (the CLG estimator's settings by MotionOptions' field names; backend "auto": the states').
MotionChainOptions chain_options(const py::dict &d, const Grid &grid) {
  MotionChainOptions c;
  c.rounds = d["rounds"].cast<int>();
  c.refine_iterations = d["refine_iterations"].cast<int>();
  c.correction.warp.jacobian_weighting = d["jacobian_weighting"].cast<bool>();
  if (!d["fields"].is_none())
    for (py::handle h : d["fields"].cast<py::list>())
      c.fields.push_back(h.is_none() ? DisplacementField{} : displacement_field(h.cast<py::array>(), grid, "fields"));
  const py::dict m = d["motion"].cast<py::dict>();
  MotionOptions &o = c.motion;
  for (const auto &[key, value] : m) {
    const std::string k = key.cast<std::string>();
    if (k == "alpha") o.alpha = value.cast<double>();
    else if (k == "gamma") o.gamma = value.cast<double>();
    else if (k == "rho") o.rho = value.cast<double>();
    else if (k == "sigma") o.sigma = value.cast<double>();
    else if (k == "iterations") o.iterations = value.cast<int>();
    else if (k == "warps") o.warps = value.cast<int>();
    else if (k == "levels") o.levels = value.cast<int>();
    else if (k == "tolerance") o.tolerance = value.cast<double>();
    else if (k == "backend")
      o.backend = parse_enum("motion.backend", value.cast<std::string>(), {Backend::Auto, Backend::Cpu, Backend::Cuda});
    else throw py::type_error("motion: unexpected key '" + k + "' (alpha, gamma, rho, sigma, iterations, warps, "
                              "levels, tolerance, backend)");
  }
  return c;
}

py::dict chain_round_dict(const MotionChainRound &r) {
  py::dict d;
  d["mean_field_change"] = r.mean_field_change;
  d["max_field_change"] = r.max_field_change;
  d["mcir_residual"] = r.mcir_residual;
  d["data_residual"] = r.data_residual;
  d["mcir_iterations"] = r.mcir_iterations;
  d["fields_given"] = r.fields_given;
  d["refine_seconds"] = r.refine_seconds;
  d["motion_seconds"] = r.motion_seconds;
  d["mcir_seconds"] = r.mcir_seconds;
  py::list motion;
  for (const MotionReport &m : r.motion) motion.append(motion_report_dict(m));
  d["motion"] = motion;
  return d;
}

// states (items) -> a dict: "image" (MCIR's), "report" (MCIR's, "motion" its MotionCorrectionReport),
// "states" and "states_report" (the joint reconstruction), "fields" (None for state 0), "rounds",
// "best_round", "maps" ((nx, ny[, nz], coils) or None: what both reconstructions used), "coils"
// (the coil step's report fields) and "note".
py::dict reconstruct_motion_chain_py(const py::list &states, const std::vector<std::int64_t> &matrix,
                                     const std::optional<py::array> &sens, int sens_coils, const py::dict &chain_kw,
                                     const py::dict &kw) {
  const Grid grid = to_grid(matrix);
  bool bart_units = false;
  const ReconOptions options = options_for(kw, grid, sens, sens_coils, std::nullopt, bart_units);
  const std::vector<KSpaceData> data = items_data(states, grid);
  const MotionChainOptions chain = chain_options(chain_kw, grid);
  MotionChainResult r;
  {
    py::gil_scoped_release release;
    r = reconstruct_motion_chain(data, grid, options, chain);
  }
  py::dict out;
  out["image"] = image_out(std::move(r.mcir.image), bart_units);
  py::dict report = report_dict(r.mcir.report);
  report["motion"] = motion_correction_dict(r.mcir.motion);
  out["report"] = report;
  py::list images;
  for (Image &image : r.states.frames) images.append(image_out(std::move(image), bart_units));
  out["states"] = images;
  out["states_report"] = report_dict(r.states.report);
  py::list fields;
  for (const DisplacementField &f : r.fields)
    fields.append(f.u.size() == 0 ? py::object(py::none()) : py::object(displacement_array(f)));
  out["fields"] = fields;
  py::list rounds;
  for (const MotionChainRound &round : r.rounds) rounds.append(chain_round_dict(round));
  out["rounds"] = rounds;
  out["best_round"] = r.best_round;
  if (r.maps) {
    std::vector<cfloat> v(r.maps->values().begin(), r.maps->values().end());
    out["maps"] = to_array(std::move(v), image_shape(grid, {r.maps->coils()}));
  } else {
    out["maps"] = py::none();
  }
  py::dict coils;
  coils["acquired_coils"] = r.coils.acquired_coils;
  coils["coils"] = r.coils.coils;
  coils["coil_energy_kept"] = r.coils.coil_energy_kept;
  coils["maps"] = r.coils.maps;
  coils["coil_seconds"] = r.coils.coil_seconds;
  out["coils"] = coils;
  out["note"] = r.note;
  return out;
}

} // namespace

void bind_reconstruct(py::module_ &m) {
  m.def("reconstruct", &reconstruct_py, py::arg("points"), py::arg("kspace"), py::arg("weights"), py::arg("times"),
        py::arg("coils"), py::arg("matrix"), py::arg("sens"), py::arg("sens_coils"), py::arg("field_map"),
        py::arg("options"));
  m.def("reconstruct_batch", &reconstruct_batch_py, py::arg("items"), py::arg("matrix"), py::arg("sens"),
        py::arg("sens_coils"), py::arg("field_map"), py::arg("jobs"), py::arg("share_q"), py::arg("options"));
  m.def("reconstruct_frames", &reconstruct_frames_py, py::arg("frames"), py::arg("matrix"), py::arg("sens"),
        py::arg("sens_coils"), py::arg("field_map"), py::arg("options"));
  m.def("reconstruct_motion_corrected", &reconstruct_motion_corrected_py, py::arg("states"), py::arg("matrix"),
        py::arg("fields"), py::arg("jacobian_weighting"), py::arg("sens"), py::arg("sens_coils"), py::arg("options"));
  m.def("reconstruct_motion_chain", &reconstruct_motion_chain_py, py::arg("states"), py::arg("matrix"),
        py::arg("sens"), py::arg("sens_coils"), py::arg("chain"), py::arg("options"));
}

} // namespace mri::python
