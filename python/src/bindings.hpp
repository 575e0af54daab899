#pragma once
#include <pybind11/pybind11.h>

#include <exception>

namespace mri {
struct MotionReport;
} // namespace mri

namespace mri::python {
namespace py = pybind11;
// mri::MotionReport as a dict: MotionEstimator.report and the motion chain's per-state reports
// (module.cpp).
py::dict motion_report_dict(const MotionReport &r);
// The SDK's exception classes (mri.Error and subclasses) and their translator.
void bind_errors(py::module_ &m);
// The Python exception object for a C++ exception (an item's error in reconstruct_batch).
py::object python_error(std::exception_ptr error);
void bind_operators(py::module_ &m);
void bind_reconstruct(py::module_ &m);
// mri.frames' binnings and mri.ImageWarp (dynamic.cpp).
void bind_dynamic(py::module_ &m);
} // namespace mri::python
