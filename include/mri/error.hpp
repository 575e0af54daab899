#pragma once
// Every failure the SDK reports is an mri::Error. Callers catch the subtype they can act on.
//
// Thread safety: exceptions are immutable values: safe to read from any thread.
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mri {

class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A public entry point received an argument it cannot use; the message names the argument
// and the offending value.
class InvalidArgument : public Error {
public:
  using Error::Error;
};

// A file could not be read or written, or its content is malformed or truncated.
class IoError : public Error {
public:
  using Error::Error;
};

// A CUDA runtime/library call failed; the message names the call and the CUDA error string.
class CudaError : public Error {
public:
  using Error::Error;
};

// The request is valid but this build or machine cannot serve it (e.g. no CUDA device).
class Unsupported : public Error {
public:
  using Error::Error;
};

namespace detail {

// Throws InvalidArgument("<argument> = <value>: <why>").
template <class Value>
[[noreturn]] void invalid_argument(std::string_view argument, const Value &value,
                                   std::string_view why) {
  std::ostringstream os;
  os << argument << " = " << value << ": " << why;
  throw InvalidArgument(os.str());
}

} // namespace detail
} // namespace mri
