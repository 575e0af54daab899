#include "arrays.hpp"

#include "mri/error.hpp"

namespace mri::python {

Grid to_grid(const std::vector<std::int64_t> &matrix) {
  if (matrix.size() != 2 && matrix.size() != 3)
    detail::invalid_argument("matrix", matrix.size(), "needs 2 or 3 extents: (nx, ny) or (nx, ny, nz)");
  return Grid(matrix[0], matrix[1], matrix.size() == 3 ? matrix[2] : 1);
}

Image to_image(const py::array &a, const Grid &grid, const char *name) {
  return Image(grid, to_vector<cfloat>(a, name, grid.voxels()));
}

py::array_t<cfloat> from_image(Image &&image) {
  const Grid grid = image.grid();
  return to_array(std::move(image.values()), image_shape(grid));
}

Trajectory to_trajectory(const py::array &points, int dims, const char *name) {
  if (!py::array_t<float>::check_(points))
    throw py::type_error(std::string(name) + ": dtype " + py::str(points.dtype()).cast<std::string>() +
                         ", expected float32");
  if (points.ndim() != 2 || (points.shape(1) != 2 && points.shape(1) != 3))
    throw py::value_error(std::string(name) + ": shape " + py::str(points.attr("shape")).cast<std::string>() +
                          ", expected (M, 2) or (M, 3) (cycles/FOV, one column per image axis)");
  if (!(points.flags() & py::array::c_style))
    throw py::value_error(std::string(name) + ": not a C-ordered array (mri's Python layer converts it)");
  const auto m = static_cast<std::size_t>(points.shape(0));
  const auto d = static_cast<std::size_t>(points.shape(1));
  const float *p = static_cast<const float *>(points.data());
  std::vector<KPoint> k(m);
  for (std::size_t i = 0; i < m; ++i) k[i] = {p[i * d], p[i * d + 1], d == 3 ? p[i * d + 2] : 0.0f};
  return Trajectory(dims, std::move(k));
}

py::array_t<float> from_trajectory(const Trajectory &t) {
  const auto d = static_cast<std::size_t>(t.dims());
  std::vector<float> v(t.size() * d);
  for (std::size_t i = 0; i < t.size(); ++i) {
    v[i * d] = t[i].kx;
    v[i * d + 1] = t[i].ky;
    if (d == 3) v[i * d + 2] = t[i].kz;
  }
  // C order (M, d): strides d*4, 4.
  auto *owned = new std::vector<float>(std::move(v));
  py::capsule owner(owned, [](void *p) { delete static_cast<std::vector<float> *>(p); });
  return py::array_t<float>({static_cast<py::ssize_t>(t.size()), static_cast<py::ssize_t>(d)},
                            {static_cast<py::ssize_t>(d * sizeof(float)), static_cast<py::ssize_t>(sizeof(float))},
                            owned->data(), owner);
}

} // namespace mri::python
