// The linear operators: NufftOperator, ExactOperator (FourierOperator), SenseOperator and the
// Toeplitz normal (QOperator), each a thin holder of the SDK's operator. Calls release the GIL;
// each holder serialises its own calls with a mutex, since QOperator's buffers and the CUDA
// plans admit one call at a time (mri/toeplitz.hpp, mri/nufft.hpp).
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <cstdint>
#include <optional>

#include "arrays.hpp"
#include "bindings.hpp"
#include "enums.hpp"
#include "mri/fourier.hpp"
#include "mri/nufft.hpp"
#include "mri/offresonance.hpp"
#include "mri/sense.hpp"
#include "mri/toeplitz.hpp"

namespace mri::python {
namespace {

Backend backend_of(const std::string &name) {
  return parse_enum("backend", name, {Backend::Auto, Backend::Cpu, Backend::Cuda});
}
Precision precision_of(const std::string &name) {
  return parse_enum("precision", name, {Precision::Float32, Precision::Float64});
}

std::vector<float> weights_of(const std::optional<py::array> &weights, std::size_t m) {
  if (!weights) return {};
  return to_vector<float>(*weights, "weights", static_cast<std::int64_t>(m));
}

// One operator of the SDK behind a mutex, with its image grid and sample count.
template <class Op> struct Holder {
  Op op;
  Grid grid;
  std::size_t samples; // M per coil
  int coils = 1;
  mutable std::mutex mutex;

  Holder(Op o, Grid g, std::size_t m, int c = 1) : op(std::move(o)), grid(g), samples(m), coils(c) {}

  py::array_t<cfloat> forward(const py::array &image) const {
    const Image x = to_image(image, grid, "x");
    std::vector<cfloat> y;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex);
      y = mri::forward(op, x); // the value form: NaN/Inf refused, naming the first ("image[3]")
    }
    if (coils == 1) return to_array(std::move(y), {static_cast<py::ssize_t>(samples)});
    return to_array(std::move(y), {static_cast<py::ssize_t>(samples), coils});
  }

  py::array_t<cfloat> adjoint(const py::array &samples_in) const {
    const std::vector<cfloat> y = to_vector<cfloat>(samples_in, "y", static_cast<std::int64_t>(samples) * coils);
    Image x;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex);
      x = mri::adjoint(op, y); // NaN/Inf refused ("samples[7]")
    }
    return from_image(std::move(x));
  }
};

using Nufft = Holder<NufftOperator>;

// F^H of every coil at once (NufftOperator::adjoint_coils: each image bitwise adjoint()'s, the
// samples' kernel weights evaluated once per block of coils): (M, coils) -> (*image, coils).
py::array_t<cfloat> nufft_adjoint_coils(const Nufft &n, const py::array &samples_in, int coils) {
  const std::vector<cfloat> y =
      to_vector<cfloat>(samples_in, "y", static_cast<std::int64_t>(n.samples) * coils);
  detail::check_finite(y);
  std::vector<cfloat> images(static_cast<std::size_t>(n.grid.voxels()) * static_cast<std::size_t>(coils));
  {
    py::gil_scoped_release release;
    std::lock_guard lock(n.mutex);
    n.op.adjoint_coils(y.data(), coils, images.data());
  }
  return to_array(std::move(images), image_shape(n.grid, {coils}));
}
// forward/adjoint on device arrays (the operator's forward_device/adjoint_device): the pointers of
// CUDA arrays the Python layer (mri/_cuda.py) has checked for dtype, shape and order.
template <class Op> void forward_on_device(const Holder<Op> &h, std::uintptr_t image, std::uintptr_t samples) {
  py::gil_scoped_release release;
  std::lock_guard lock(h.mutex);
  h.op.forward_device(reinterpret_cast<const cfloat *>(image), reinterpret_cast<cfloat *>(samples));
}
template <class Op> void adjoint_on_device(const Holder<Op> &h, std::uintptr_t samples, std::uintptr_t image) {
  py::gil_scoped_release release;
  std::lock_guard lock(h.mutex);
  h.op.adjoint_device(reinterpret_cast<const cfloat *>(samples), reinterpret_cast<cfloat *>(image));
}

using Exact = Holder<FourierOperator>;

// F x and F^H y in complex double end to end (FourierOperator's cdouble forms): (nx, ny[, nz]) and
// (M,) complex128 Fortran arrays, as the Python layer passes them.
py::array_t<cdouble> exact_forward_f64(const Exact &e, const py::array &image) {
  const std::span<const cdouble> x = values<cdouble>(image, "x", e.grid.voxels());
  std::vector<cdouble> y(e.samples);
  {
    py::gil_scoped_release release;
    std::lock_guard lock(e.mutex);
    e.op.forward(x, y);
  }
  return to_array(std::move(y), {static_cast<py::ssize_t>(e.samples)});
}
py::array_t<cdouble> exact_adjoint_f64(const Exact &e, const py::array &samples) {
  const std::span<const cdouble> y = values<cdouble>(samples, "y", static_cast<std::int64_t>(e.samples));
  std::vector<cdouble> x(static_cast<std::size_t>(e.grid.voxels()));
  {
    py::gil_scoped_release release;
    std::lock_guard lock(e.mutex);
    e.op.adjoint(y, x);
  }
  return to_array(std::move(x), image_shape(e.grid));
}
using FieldExact = Holder<FieldFourierOperator>;
using FieldSegmented = Holder<SegmentedFieldOperator>;
using Sense = Holder<SenseOperator>;

// The Toeplitz normal F^H W F: image -> image.
struct Toeplitz {
  std::unique_ptr<QOperator> op;
  Grid grid;
  mutable std::mutex mutex;

  py::array_t<cfloat> apply(const py::array &image) const {
    const Image x = to_image(image, grid, "x");
    Image out;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(mutex);
      out = mri::forward(*op, x); // NaN/Inf refused ("image[3]")
    }
    return from_image(std::move(out));
  }
};

std::shared_ptr<Nufft> make_nufft(const py::array &points, const std::vector<std::int64_t> &matrix, double tolerance,
                                  const std::string &precision, const std::string &gridding,
                                  const std::string &backend, int threads, int width, double oversampling) {
  const Grid grid = to_grid(matrix);
  NufftOptions o;
  o.tolerance = tolerance;
  o.precision = precision_of(precision);
  o.gridding = parse_enum("gridding", gridding,
                          {Gridding::Auto, Gridding::Scatter, Gridding::Gather, Gridding::ScatterFixed});
  o.backend = backend_of(backend);
  o.threads = threads;
  o.width = width;
  o.oversampling = oversampling;
  Trajectory t = to_trajectory(points, grid.dims());
  const std::size_t m = t.size();
  py::gil_scoped_release release;
  return std::make_shared<Nufft>(NufftOperator(std::move(t), grid, o), grid, m);
}

OperatorOptions operator_options(const std::string &precision, const std::string &backend, const std::string &policy) {
  OperatorOptions o;
  o.precision = precision_of(precision);
  o.backend = backend_of(backend);
  o.policy = parse_enum("policy", policy,
                        {KernelPolicy::Auto, KernelPolicy::ScatterAtomic, KernelPolicy::Gather, KernelPolicy::Register,
                         KernelPolicy::ConstantChunked, KernelPolicy::SfuTrig, KernelPolicy::Tuned,
                         KernelPolicy::SeparableGemm});
  return o;
}

std::shared_ptr<Exact> make_exact(const py::array &points, const std::vector<std::int64_t> &matrix,
                                  const std::string &precision, const std::string &backend, const std::string &policy) {
  const Grid grid = to_grid(matrix);
  const OperatorOptions o = operator_options(precision, backend, policy);
  Trajectory t = to_trajectory(points, grid.dims());
  const std::size_t m = t.size();
  py::gil_scoped_release release;
  return std::make_shared<Exact>(FourierOperator(std::move(t), grid, o), grid, m);
}

std::shared_ptr<Sense> make_sense(const py::array &points, const std::vector<std::int64_t> &matrix,
                                  const py::array &maps, int coils, const std::string &precision,
                                  const std::string &backend, const std::string &policy) {
  const Grid grid = to_grid(matrix);
  const OperatorOptions o = operator_options(precision, backend, policy);
  auto s = std::make_shared<const CoilSensitivities>(grid, coils,
                                                     to_vector<cfloat>(maps, "maps", grid.voxels() * coils));
  Trajectory t = to_trajectory(points, grid.dims());
  const std::size_t m = t.size();
  py::gil_scoped_release release;
  return std::make_shared<Sense>(SenseOperator(std::move(t), grid, std::move(s), o), grid, m, coils);
}

std::shared_ptr<const FieldMap> field_of(const py::array &field_map, const Grid &grid) {
  return std::make_shared<const FieldMap>(grid, to_vector<float>(field_map, "field_map", grid.voxels()));
}

std::shared_ptr<FieldExact> make_field_exact(const py::array &points, const std::vector<std::int64_t> &matrix,
                                             const py::array &field_map, const py::array &times,
                                             const std::string &precision, const std::string &backend) {
  const Grid grid = to_grid(matrix);
  const OperatorOptions o = operator_options(precision, backend, "auto");
  Trajectory t = to_trajectory(points, grid.dims());
  const std::size_t m = t.size();
  auto field = field_of(field_map, grid);
  std::vector<float> tm = to_vector<float>(times, "times", static_cast<std::int64_t>(m));
  py::gil_scoped_release release;
  return std::make_shared<FieldExact>(FieldFourierOperator(std::move(t), grid, std::move(field), std::move(tm), o),
                                      grid, m);
}

SegmentationOptions segmentation_options(int segments, const std::string &interpolator, double tolerance,
                                         int max_segments, int histogram_bins) {
  SegmentationOptions s;
  s.segments = segments;
  s.interpolator = parse_enum("interpolator", interpolator,
                              {SegmentInterpolator::LeastSquares, SegmentInterpolator::Hanning});
  s.tolerance = tolerance;
  s.max_segments = max_segments;
  s.histogram_bins = histogram_bins;
  return s;
}

std::shared_ptr<FieldSegmented> make_field_segmented(const py::array &points, const std::vector<std::int64_t> &matrix,
                                                     const py::array &field_map, const py::array &times,
                                                     int segments, const std::string &interpolator,
                                                     double segment_tolerance, int max_segments,
                                                     int histogram_bins, double tolerance,
                                                     const std::string &precision, const std::string &backend) {
  const Grid grid = to_grid(matrix);
  NufftOptions n;
  n.tolerance = tolerance;
  n.precision = precision_of(precision);
  n.backend = backend_of(backend);
  const SegmentationOptions s =
      segmentation_options(segments, interpolator, segment_tolerance, max_segments, histogram_bins);
  Trajectory t = to_trajectory(points, grid.dims());
  const std::size_t m = t.size();
  auto field = field_of(field_map, grid);
  const std::vector<float> tm = to_vector<float>(times, "times", static_cast<std::int64_t>(m));
  py::gil_scoped_release release;
  return std::make_shared<FieldSegmented>(SegmentedFieldOperator(std::move(t), grid, *field, tm, s, n), grid, m);
}

std::shared_ptr<Toeplitz> make_toeplitz(const py::array &points, const std::vector<std::int64_t> &matrix,
                                        const std::optional<py::array> &weights, const std::string &method,
                                        double tolerance, const std::string &precision, const std::string &backend,
                                        const std::string &policy) {
  const Grid grid = to_grid(matrix);
  const Trajectory t = to_trajectory(points, grid.dims());
  const std::vector<float> w = weights_of(weights, t.size());
  auto holder = std::make_shared<Toeplitz>();
  holder->grid = grid;
  if (method == "exact") {
    const OperatorOptions o = operator_options(precision, backend, policy);
    py::gil_scoped_release release;
    holder->op = std::make_unique<QOperator>(t, w, grid, o);
  } else if (method == "nufft") {
    NufftOptions o;
    o.tolerance = tolerance;
    o.precision = precision_of(precision);
    o.backend = backend_of(backend);
    py::gil_scoped_release release;
    holder->op = std::make_unique<QOperator>(QOperator::from_q(grid, nufft_q(t, w, grid, o)));
  } else {
    detail::invalid_argument("method", "'" + method + "'", "expected exact or nufft");
  }
  return holder;
}

} // namespace

void bind_operators(py::module_ &m) {
  m.attr("NUFFT_FLOAT32_MIN_TOLERANCE") = kNufftFloat32MinTolerance;
  m.attr("NUFFT_MIN_TOLERANCE") = kNufftMinTolerance;
  py::class_<Nufft, std::shared_ptr<Nufft>>(m, "NufftOperator")
      .def(py::init(&make_nufft), py::arg("points"), py::arg("matrix"), py::arg("tolerance"), py::arg("precision"),
           py::arg("gridding"), py::arg("backend"), py::arg("threads"), py::arg("width"), py::arg("oversampling"))
      .def("forward", &Nufft::forward, py::arg("x"))
      .def("adjoint", &Nufft::adjoint, py::arg("y"))
      .def("adjoint_coils", &nufft_adjoint_coils, py::arg("y"), py::arg("coils"))
      .def("forward_device", &forward_on_device<NufftOperator>, py::arg("image"), py::arg("samples"))
      .def("adjoint_device", &adjoint_on_device<NufftOperator>, py::arg("samples"), py::arg("image"))
      .def_property_readonly("samples", [](const Nufft &n) { return n.samples; })
      .def_property_readonly("backend", [](const Nufft &n) { return std::string(to_string(n.op.options().backend)); })
      .def_property_readonly("gridding", [](const Nufft &n) { return std::string(to_string(n.op.options().gridding)); })
      .def_property_readonly("kernel_width", [](const Nufft &n) { return n.op.kernel().width; })
      .def_property_readonly("oversampling", [](const Nufft &n) { return n.op.kernel().oversampling; })
      .def_property_readonly("points", [](const Nufft &n) { return from_trajectory(n.op.trajectory()); });

  py::class_<Exact, std::shared_ptr<Exact>>(m, "ExactOperator")
      .def(py::init(&make_exact), py::arg("points"), py::arg("matrix"), py::arg("precision"), py::arg("backend"),
           py::arg("policy"))
      .def("forward", &Exact::forward, py::arg("x"))
      .def("adjoint", &Exact::adjoint, py::arg("y"))
      .def("forward_f64", &exact_forward_f64, py::arg("x"))
      .def("adjoint_f64", &exact_adjoint_f64, py::arg("y"))
      .def("forward_device", &forward_on_device<FourierOperator>, py::arg("image"), py::arg("samples"))
      .def("adjoint_device", &adjoint_on_device<FourierOperator>, py::arg("samples"), py::arg("image"))
      .def_property_readonly("precision",
                             [](const Exact &e) { return std::string(to_string(e.op.options().precision)); })
      .def_property_readonly("samples", [](const Exact &e) { return e.samples; })
      .def_property_readonly("backend", [](const Exact &e) { return std::string(to_string(e.op.options().backend)); })
      .def_property_readonly("points", [](const Exact &e) { return from_trajectory(e.op.trajectory()); });

  py::class_<Sense, std::shared_ptr<Sense>>(m, "SenseOperator")
      .def(py::init(&make_sense), py::arg("points"), py::arg("matrix"), py::arg("maps"), py::arg("coils"),
           py::arg("precision"), py::arg("backend"), py::arg("policy"))
      .def("forward", &Sense::forward, py::arg("x"))
      .def("adjoint", &Sense::adjoint, py::arg("y"))
      .def_property_readonly("samples", [](const Sense &s) { return s.samples; })
      .def_property_readonly("coils", [](const Sense &s) { return s.coils; })
      .def_property_readonly("backend",
                             [](const Sense &s) { return std::string(to_string(s.op.fourier().options().backend)); });

  py::class_<FieldExact, std::shared_ptr<FieldExact>>(m, "FieldFourierOperator")
      .def(py::init(&make_field_exact), py::arg("points"), py::arg("matrix"), py::arg("field_map"), py::arg("times"),
           py::arg("precision"), py::arg("backend"))
      .def("forward", &FieldExact::forward, py::arg("x"))
      .def("adjoint", &FieldExact::adjoint, py::arg("y"));

  py::class_<FieldSegmented, std::shared_ptr<FieldSegmented>>(m, "SegmentedFieldOperator")
      .def(py::init(&make_field_segmented), py::arg("points"), py::arg("matrix"), py::arg("field_map"),
           py::arg("times"), py::arg("segments"), py::arg("interpolator"), py::arg("segment_tolerance"),
           py::arg("max_segments"), py::arg("histogram_bins"), py::arg("tolerance"), py::arg("precision"),
           py::arg("backend"))
      .def("forward", &FieldSegmented::forward, py::arg("x"))
      .def("adjoint", &FieldSegmented::adjoint, py::arg("y"))
      .def_property_readonly("segments", [](const FieldSegmented &f) { return f.op.segmentation().segments; })
      .def_property_readonly("segment_error", [](const FieldSegmented &f) { return f.op.segmentation().error; });

  py::class_<Toeplitz, std::shared_ptr<Toeplitz>>(m, "ToeplitzNormal")
      .def(py::init(&make_toeplitz), py::arg("points"), py::arg("matrix"), py::arg("weights"), py::arg("method"),
           py::arg("tolerance"), py::arg("precision"), py::arg("backend"), py::arg("policy"))
      .def("apply", &Toeplitz::apply, py::arg("x"))
      .def_property_readonly("q", [](const Toeplitz &t) { return from_image(Image(t.op->q())); });
}

} // namespace mri::python
