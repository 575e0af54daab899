#pragma once
// NumPy <-> SDK arrays for the bindings (docs/python.md, "Layout").
//
// The rule: a NumPy array's axis 0 is the fastest axis of the SDK's memory layout (BART's order):
// images are (nx, ny[, nz]) arrays indexed image[x, y, z], coil maps (nx, ny[, nz], coils),
// multi-coil samples (M, coils); trajectories are (M, d) points, column a the k coordinate of image
// axis a. The pure-Python layer (python/mri/_arrays.py) converts what users pass into exactly the
// dtype and memory order checked here (complex64 / float32, Fortran order); this layer only checks,
// so an array that reaches it is read in place. Outputs are NumPy views of the SDK's std::vectors
// (moved into a capsule that owns them): no copy out.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/trajectory.hpp"

namespace mri::python {

namespace py = pybind11;

// The values of `a` if it holds T in Fortran order (1-D contiguous arrays are both orders):
// TypeError naming `name` for another dtype, ValueError for another order or a size other than
// `size` (when size >= 0).
template <class T> std::span<const T> values(const py::array &a, const char *name, std::int64_t size = -1) {
  if (!py::array_t<T>::check_(a))
    throw py::type_error(std::string(name) + ": dtype " + py::str(a.dtype()).cast<std::string>() + ", expected " +
                         py::str(py::dtype::of<T>()).cast<std::string>());
  if (!(a.flags() & py::array::f_style))
    throw py::value_error(std::string(name) + ": not a Fortran-ordered array (mri's Python layer converts it)");
  if (size >= 0 && a.size() != size)
    throw py::value_error(std::string(name) + ": " + std::to_string(a.size()) + " values, expected " + std::to_string(size));
  return {static_cast<const T *>(a.data()), static_cast<std::size_t>(a.size())};
}

template <class T> std::vector<T> to_vector(const py::array &a, const char *name, std::int64_t size = -1) {
  const std::span<const T> v = values<T>(a, name, size);
  return {v.begin(), v.end()};
}

// A NumPy array of `shape` (Fortran order) that owns `data` without copying it.
template <class T> py::array_t<T> to_array(std::vector<T> &&data, const std::vector<py::ssize_t> &shape) {
  auto *owned = new std::vector<T>(std::move(data));
  py::capsule owner(owned, [](void *p) { delete static_cast<std::vector<T> *>(p); });
  std::vector<py::ssize_t> strides;
  py::ssize_t stride = sizeof(T);
  for (py::ssize_t n : shape) {
    strides.push_back(stride);
    stride *= n;
  }
  return py::array_t<T>(shape, strides, owned->data(), owner);
}

// (nx, ny) for a 2D grid, (nx, ny, nz) for a 3D one, then `extra` axes.
inline std::vector<py::ssize_t> image_shape(const Grid &grid, std::vector<py::ssize_t> extra = {}) {
  std::vector<py::ssize_t> shape{grid.nx(), grid.ny()};
  if (grid.dims() == 3) shape.push_back(grid.nz());
  shape.insert(shape.end(), extra.begin(), extra.end());
  return shape;
}

// matrix = (nx, ny) or (nx, ny, nz).
Grid to_grid(const std::vector<std::int64_t> &matrix);

// The image held by `a` (Fortran order, grid.voxels() complex64 values), copied into an Image
// (the SDK's operators take an owning Image).
Image to_image(const py::array &a, const Grid &grid, const char *name);
py::array_t<cfloat> from_image(Image &&image);

// (M, d) float32 C-ordered points, d = 2 or 3 (kz = 0 for d = 2), as a trajectory of `dims`
// dimensions (the grid's): the SDK refuses a 2D trajectory with kz != 0 and NaN/Inf.
Trajectory to_trajectory(const py::array &points, int dims, const char *name = "points");
py::array_t<float> from_trajectory(const Trajectory &t);

} // namespace mri::python
