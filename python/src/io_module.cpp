// mri._mri_io: NIfTI and ISMRMRD through libmri_io (mri/io/nifti.hpp, mri/io/ismrmrd.hpp). An
// extension of its own, as libmri_io is a library of its own: `import mri` does not load HDF5 and
// its dependencies; mri.io loads this module on the first NIfTI or ISMRMRD call.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "arrays.hpp"
#include "enums.hpp"
#include "mri/error.hpp"
#include "mri/io/ismrmrd.hpp"
#include "mri/io/nifti.hpp"

namespace mri::python {
namespace {

py::dict geometry_dict(const ScannerGeometry &g) {
  py::dict d;
  d["read_dir"] = g.read_dir;
  d["phase_dir"] = g.phase_dir;
  d["slice_dir"] = g.slice_dir;
  d["position"] = g.position;
  return d;
}

py::dict read_nifti_py(const std::filesystem::path &path) {
  NiftiVolume v;
  {
    py::gil_scoped_release release;
    v = read_nifti(path);
  }
  py::dict d;
  d["voxel_mm"] = v.voxel_mm;
  d["values"] = v.values == NiftiValues::Complex ? "complex" : "magnitude";
  d["qform"] = v.qform;
  d["sform"] = v.sform;
  std::vector<py::ssize_t> shape(v.dims.begin(), v.dims.end());
  d["data"] = to_array(std::move(v.data), shape);
  return d;
}

// images: (nx, ny, nz, series) complex64 in Fortran order, each series entry one Image.
void write_nifti_py(const std::filesystem::path &path, const py::array &images, const std::vector<std::int64_t> &dims,
                    const std::array<double, 3> &voxel_mm, bool complex) {
  const Grid grid(dims[0], dims[1], dims[2]);
  const std::span<const cfloat> all = values<cfloat>(images, "images", grid.voxels() * dims[3]);
  std::vector<Image> list;
  for (std::int64_t s = 0; s < dims[3]; ++s) {
    const auto first = all.begin() + s * grid.voxels();
    list.emplace_back(grid, std::vector<cfloat>(first, first + grid.voxels()));
  }
  py::gil_scoped_release release;
  write_nifti(path, list, voxel_mm, complex ? NiftiValues::Complex : NiftiValues::Magnitude);
}

py::dict read_ismrmrd_py(const std::filesystem::path &path, const std::string &units, const std::string &group) {
  IsmrmrdReadOptions o;
  o.units = parse_enum("units", units, {TrajUnits::Auto, TrajUnits::CyclesPerFov, TrajUnits::Normalized});
  o.group = group;
  IsmrmrdData data;
  {
    py::gil_scoped_release release;
    data = read_ismrmrd(path, o);
  }
  py::dict header;
  header["encoded_matrix"] = data.header.encoded_matrix;
  header["recon_matrix"] = data.header.recon_matrix;
  header["encoded_fov_mm"] = data.header.encoded_fov_mm;
  header["recon_fov_mm"] = data.header.recon_fov_mm;
  header["trajectory"] = data.header.trajectory;
  header["coils"] = data.header.coils;
  py::list items;
  for (IsmrmrdItem &item : data.items) {
    py::dict d;
    d["slice"] = item.slice, d["contrast"] = item.contrast, d["repetition"] = item.repetition;
    d["average"] = item.average, d["phase"] = item.phase, d["set"] = item.set;
    const KSpaceData &k = item.data;
    const auto m = static_cast<py::ssize_t>(k.samples_per_coil());
    d["points"] = from_trajectory(k.trajectory());
    std::vector<cfloat> samples = k.samples();
    d["kspace"] = to_array(std::move(samples), {m, k.coils()});
    if (k.has_weights()) {
      std::vector<float> w = k.weights();
      d["weights"] = to_array(std::move(w), {m});
    } else {
      d["weights"] = py::none();
    }
    d["geometry"] = item.geometry ? py::object(geometry_dict(*item.geometry)) : py::object(py::none());
    items.append(d);
  }
  py::dict out;
  out["header"] = header;
  out["items"] = items;
  out["units"] = to_string(data.units);
  out["notes"] = data.notes;
  return out;
}

std::array<double, 3> triple(const py::handle &h) { return h.cast<std::array<double, 3>>(); }

// items: dicts with "points" (M, d) float32 C-ordered, "kspace" (M, coils) complex64 Fortran-ordered
// and optionally "geometry" (read_dir, phase_dir, slice_dir, position), as mri.io prepares them.
void write_ismrmrd_py(const std::filesystem::path &path, const py::list &items, const py::dict &header_in,
                      int readouts, const std::string &units) {
  IsmrmrdHeader header;
  header.encoded_matrix = header_in["encoded_matrix"].cast<std::array<int, 3>>();
  header.recon_matrix = header_in["recon_matrix"].cast<std::array<int, 3>>();
  header.encoded_fov_mm = triple(header_in["encoded_fov_mm"]);
  header.recon_fov_mm = triple(header_in["recon_fov_mm"]);
  header.trajectory = header_in["trajectory"].cast<std::string>();
  header.coils = header_in["coils"].cast<int>();
  const Grid grid = header.recon_grid();
  std::vector<KSpaceData> data;
  std::vector<std::optional<ScannerGeometry>> geometry;
  data.reserve(items.size());
  for (py::handle h : items) {
    const py::dict item = h.cast<py::dict>();
    Trajectory t = to_trajectory(item["points"].cast<py::array>(), grid.dims());
    const auto m = static_cast<std::int64_t>(t.size());
    data.emplace_back(std::move(t), to_vector<cfloat>(item["kspace"].cast<py::array>(), "kspace", m * header.coils),
                      std::vector<float>{}, header.coils);
    std::optional<ScannerGeometry> g;
    if (item.contains("geometry") && !item["geometry"].is_none()) {
      const py::dict d = item["geometry"].cast<py::dict>();
      g = ScannerGeometry{triple(d["read_dir"]), triple(d["phase_dir"]), triple(d["slice_dir"]), triple(d["position"])};
    }
    geometry.push_back(g);
  }
  IsmrmrdWriteInput input;
  input.header = header;
  for (std::size_t i = 0; i < data.size(); ++i) input.slices.push_back({&data[i], geometry[i]});
  input.readouts = readouts;
  input.units = parse_enum("units", units, {TrajUnits::CyclesPerFov, TrajUnits::Normalized});
  py::gil_scoped_release release;
  write_ismrmrd(path, input);
}

} // namespace
} // namespace mri::python

PYBIND11_MODULE(_mri_io, m) {
  using namespace mri::python;
  m.doc() = "NIfTI and ISMRMRD through libmri_io (use mri.io)";
  // The SDK's exceptions are translated by mri._mri's translator (pybind11 shares translators
  // between modules of one build), which `import mri` has registered.
  m.def("read_nifti", &read_nifti_py);
  m.def("write_nifti", &write_nifti_py);
  m.def("read_ismrmrd", &read_ismrmrd_py);
  m.def("write_ismrmrd", &write_ismrmrd_py);
}
