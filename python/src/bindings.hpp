#pragma once
#include <pybind11/pybind11.h>

namespace mri::python {
namespace py = pybind11;
void bind_operators(py::module_ &m);
void bind_reconstruct(py::module_ &m);
} // namespace mri::python
