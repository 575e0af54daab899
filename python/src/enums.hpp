#pragma once
// Enum options by name: the names are the SDK's own to_string() (the CLI's option values), so
// Python, the command line and the reports spell them alike. An unknown name is a ValueError
// naming the option and every accepted name.
#include <pybind11/pybind11.h>

#include <initializer_list>
#include <string>

#include "mri/error.hpp"

namespace mri::python {

template <class Enum>
Enum parse_enum(const std::string &option, const std::string &name, std::initializer_list<Enum> values) {
  std::string accepted;
  for (Enum v : values) {
    const std::string text = to_string(v);
    if (text == name) return v;
    accepted += (accepted.empty() ? "" : ", ") + text;
  }
  detail::invalid_argument(option, "'" + name + "'", "expected one of " + accepted);
}

} // namespace mri::python
