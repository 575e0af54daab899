// The SDK's exceptions as Python classes of the same hierarchy: mri.Error(RuntimeError) and its
// subclasses; InvalidArgument is also a ValueError, the exception Python code expects for a bad
// argument. Each keeps the C++ message.
#include "bindings.hpp"
#include "mri/error.hpp"

namespace mri::python {
namespace {

struct Classes {
  py::handle error, invalid, io, cuda, unsupported;
};
Classes classes;

// The class and message of an exception; RuntimeError for anything not of the SDK.
std::pair<py::handle, std::string> classify(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const InvalidArgument &e) {
    return {classes.invalid, e.what()};
  } catch (const IoError &e) {
    return {classes.io, e.what()};
  } catch (const CudaError &e) {
    return {classes.cuda, e.what()};
  } catch (const Unsupported &e) {
    return {classes.unsupported, e.what()};
  } catch (const Error &e) {
    return {classes.error, e.what()};
  } catch (const std::exception &e) {
    return {PyExc_RuntimeError, e.what()};
  } catch (...) {
    return {PyExc_RuntimeError, "unknown C++ exception"};
  }
}

} // namespace

void bind_errors(py::module_ &m) {
  const auto make = [&m](const char *name, py::handle bases) {
    py::handle h(PyErr_NewException((std::string("mri.") + name).c_str(), bases.ptr(), nullptr));
    if (!h) throw py::error_already_set();
    m.add_object(name, h);
    return h;
  };
  classes.error = make("Error", PyExc_RuntimeError);
  const py::tuple invalid_bases = py::make_tuple(classes.error, py::handle(PyExc_ValueError));
  classes.invalid = make("InvalidArgument", invalid_bases);
  classes.io = make("IoError", classes.error);
  classes.cuda = make("CudaError", classes.error);
  classes.unsupported = make("Unsupported", classes.error);
  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const Error &) {
      const auto [type, message] = classify(p);
      PyErr_SetString(type.ptr(), message.c_str());
    }
  });
}

py::object python_error(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (py::error_already_set &e) { // a Python callback's exception, as it was raised
    return e.value();
  } catch (...) {
  }
  const auto [type, message] = classify(error);
  return py::reinterpret_borrow<py::object>(type)(message);
}

} // namespace mri::python
