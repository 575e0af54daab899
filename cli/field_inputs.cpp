#include "field_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "mri/io/nifti.hpp"

namespace mri::cli {
namespace {

bool is_nifti(const std::string &path) {
  const auto ends = [&](const std::string &suffix) {
    return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends(".nii") || ends(".nii.gz");
}

[[noreturn]] void refuse(const std::string &option, const std::string &path, const std::string &why) {
  detail::invalid_argument(option, path, why);
}

std::vector<float> real_parts(const std::vector<cfloat> &values, const std::string &option, const std::string &path) {
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i].imag() != 0)
      refuse(option, path, "value " + std::to_string(i) + " has imaginary part " + std::to_string(values[i].imag()) +
                               ": must be real");
    out[i] = values[i].real();
  }
  return out;
}

} // namespace

std::shared_ptr<const FieldMap> read_field_map(const std::string &path) {
  Grid grid;
  std::vector<cfloat> values;
  if (is_nifti(path)) {
    NiftiVolume v = read_nifti(path);
    if (v.dims[3] != 1) refuse("--fieldmap", path, std::to_string(v.dims[3]) + " volumes: one field map (Hz) expected");
    grid = Grid(v.dims[0], v.dims[1], v.dims[2]);
    values = std::move(v.data);
  } else {
    bart::CflArray a = bart::read_cfl(cfl_base(path));
    std::int64_t beyond = 1;
    for (std::size_t d = 3; d < a.dims.size(); ++d) beyond *= a.dims[d];
    if (beyond != 1) refuse("--fieldmap", path, "dims beyond x, y, z hold " + std::to_string(beyond) + " maps: one expected");
    grid = Grid(a.dims.size() > 0 ? a.dims[0] : 1, a.dims.size() > 1 ? a.dims[1] : 1, a.dims.size() > 2 ? a.dims[2] : 1);
    values = std::move(a.data);
  }
  std::vector<float> hz = real_parts(values, "--fieldmap", path);
  for (std::size_t i = 0; i < hz.size(); ++i)
    if (!std::isfinite(hz[i])) refuse("--fieldmap", path, "value " + std::to_string(i) + " is " + std::to_string(hz[i]) + ": must be finite (Hz)");
  return std::make_shared<const FieldMap>(grid, std::move(hz));
}

namespace {

} // namespace

std::optional<double> ismrmrd_times_offset(const std::string &spec) {
  if (spec != "ismrmrd" && spec.rfind("ismrmrd:", 0) != 0) return std::nullopt;
  if (spec == "ismrmrd") return 0.0;
  const std::string rest = spec.substr(8);
  double offset = 0;
  try {
    std::size_t used = 0;
    offset = std::stod(rest, &used);
    if (used != rest.size()) throw std::invalid_argument(rest);
  } catch (const std::exception &) {
    refuse("--readout-times", spec, "expected ismrmrd[:OFFSET_SECONDS]");
  }
  if (!(offset >= 0) || !std::isfinite(offset)) refuse("--readout-times", spec, "the offset must be >= 0 (seconds)");
  return offset;
}

namespace {

// "dwell:D[:T0]": sample i of every readout at T0 + i D seconds.
std::optional<std::vector<float>> uniform_times(const std::string &spec, std::size_t samples, std::size_t readout) {
  if (spec.rfind("dwell:", 0) != 0) return std::nullopt;
  const std::string rest = spec.substr(6);
  const std::size_t colon = rest.find(':');
  double dwell = 0, offset = 0;
  try {
    std::size_t used = 0;
    dwell = std::stod(rest.substr(0, colon), &used);
    if (used != rest.substr(0, colon).size()) throw std::invalid_argument(rest);
    if (colon != std::string::npos) {
      offset = std::stod(rest.substr(colon + 1), &used);
      if (used != rest.substr(colon + 1).size()) throw std::invalid_argument(rest);
    }
  } catch (const std::exception &) {
    refuse("--readout-times", spec, "expected dwell:SECONDS[:OFFSET_SECONDS] or a BART .cfl");
  }
  if (!(dwell > 0) || !std::isfinite(dwell) || !(offset >= 0) || !std::isfinite(offset))
    refuse("--readout-times", spec, "the dwell must be > 0 and the offset >= 0 (seconds)");
  std::vector<float> t(samples);
  const std::size_t per = std::max<std::size_t>(readout, 1);
  for (std::size_t m = 0; m < samples; ++m) t[m] = static_cast<float>(offset + static_cast<double>(m % per) * dwell);
  return t;
}

} // namespace

std::vector<float> read_readout_times(const std::string &path, std::size_t samples, std::size_t readout) {
  if (std::optional<std::vector<float>> t = uniform_times(path, samples, readout)) return *t;
  const bart::CflArray a = bart::read_cfl(cfl_base(path));
  if (a.data.size() != samples)
    refuse("--readout-times", path,
           std::to_string(a.data.size()) + " values: one time per trajectory point (" + std::to_string(samples) +
               "), shaped like the k-space without coils");
  std::vector<float> t = real_parts(a.data, "--readout-times", path);
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!std::isfinite(t[i]) || t[i] < 0)
      refuse("--readout-times", path, "time " + std::to_string(i) + " is " + std::to_string(t[i]) + ": must be finite and >= 0 (seconds from the echo)");
    if (readout > 1 && i % readout != 0 && t[i] < t[i - 1])
      refuse("--readout-times", path,
             "time " + std::to_string(i) + " (" + std::to_string(t[i]) + " s) is before the one preceding it in readout " +
                 std::to_string(i / readout) + ": times must not decrease along a readout");
  }
  return t;
}

} // namespace mri::cli
