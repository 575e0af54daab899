// Shared option parsing and BART file helpers of the `mri` tool.
#include "common.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <unistd.h>

namespace mri::cli {

const std::map<std::string, Backend> kBackends{{"auto", Backend::Auto}, {"cpu", Backend::Cpu}, {"cuda", Backend::Cuda}};
const std::map<std::string, Precision> kPrecisions{{"float32", Precision::Float32}, {"float64", Precision::Float64}};
const std::map<std::string, KernelPolicy> kPolicies{
    {"auto", KernelPolicy::Auto},         {"scatter-atomic", KernelPolicy::ScatterAtomic},
    {"gather", KernelPolicy::Gather},     {"register", KernelPolicy::Register},
    {"constant-chunked", KernelPolicy::ConstantChunked}, {"sfu-trig", KernelPolicy::SfuTrig},
    {"tuned", KernelPolicy::Tuned},       {"separable-gemm", KernelPolicy::SeparableGemm}};
const std::map<std::string, Method> kMethods{{"auto", Method::Auto}, {"exact", Method::Exact}, {"nufft", Method::Nufft}};
const std::map<std::string, Normal> kNormals{{"toeplitz", Normal::Toeplitz}, {"direct", Normal::Direct}};
const std::map<std::string, Regularizer> kRegularizers{
    {"none", Regularizer::None}, {"tikhonov", Regularizer::Tikhonov}, {"finite-difference", Regularizer::FiniteDifference}};
const std::set<std::string> kRegularizerNames{"none", "tikhonov", "l2", "finite-difference", "wavelet", "tv"};
const std::map<std::string, ProximalAlgorithm> kProximalAlgorithms{{"auto", ProximalAlgorithm::Auto},
                                                                   {"fista", ProximalAlgorithm::Fista},
                                                                   {"admm", ProximalAlgorithm::Admm},
                                                                   {"primal-dual", ProximalAlgorithm::PrimalDual}};
const std::map<std::string, Wavelet> kWavelets{{"haar", Wavelet::Haar}, {"db2", Wavelet::Daubechies2}, {"db4", Wavelet::Daubechies4}};
const std::map<std::string, DataScaling> kDataScalings{{"bart", DataScaling::Bart}, {"none", DataScaling::None}};
const std::map<std::string, Gridding> kGriddings{{"auto", Gridding::Auto}, {"scatter", Gridding::Scatter}, {"gather", Gridding::Gather},
                                                  {"scatter-fixed", Gridding::ScatterFixed}};
const std::map<std::string, TrajUnits> kTrajUnits{
    {"auto", TrajUnits::Auto}, {"cycles", TrajUnits::CyclesPerFov}, {"normalized", TrajUnits::Normalized}};

std::vector<double> parse_sizes(const std::string &text, const std::string &option) {
  const std::string expected = option + " = " + text + ": expected 2 or 3 comma-separated positive sizes (e.g. 128,128)";
  std::vector<double> n;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception &) {
      throw UsageError(expected);
    }
    if (used != item.size() || !(v > 0) || !std::isfinite(v)) throw UsageError(expected);
    n.push_back(v);
  }
  if (n.size() < 2 || n.size() > 3) throw UsageError(expected);
  return n;
}

std::array<double, 3> parse_vector3(const std::string &text, const std::string &option) {
  const std::string expected = option + " = " + text + ": expected 3 comma-separated numbers (e.g. 0.6,-0.8,0)";
  std::array<double, 3> v{};
  std::stringstream ss(text);
  std::string item;
  int n = 0;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    double x = NAN;
    try {
      x = std::stod(item, &used);
    } catch (const std::exception &) {
    }
    if (n == 3 || used != item.size() || !std::isfinite(x)) throw UsageError(expected);
    v[static_cast<std::size_t>(n++)] = x;
  }
  if (n != 3) throw UsageError(expected);
  return v;
}

Grid parse_matrix(const std::string &text, const std::string &option) {
  const std::vector<double> n = parse_sizes(text, option);
  for (const double v : n)
    if (v != std::floor(v) || v > 65535)
      throw UsageError(option + " = " + text + ": sizes are whole numbers of voxels in 1..65535");
  const auto i64 = [](double v) { return static_cast<std::int64_t>(v); };
  return Grid(i64(n[0]), i64(n[1]), n.size() == 3 ? i64(n[2]) : 1);
}

std::filesystem::path cfl_base(const std::string &name) {
  std::filesystem::path p(name);
  if (p.extension() == ".cfl" || p.extension() == ".hdr") p.replace_extension();
  return p;
}

void write_cfl_atomic(const std::filesystem::path &base, const std::vector<std::int64_t> &dims,
                      const std::vector<cfloat> &data) {
  std::filesystem::path tmp = base;
  tmp += ".tmp-" + std::to_string(::getpid());
  const auto with = [](std::filesystem::path p, const char *ext) { return p += ext; };
  std::error_code ec;
  try {
    bart::write_cfl(tmp, dims, data);
  } catch (...) {
    std::filesystem::remove(with(tmp, ".hdr"), ec);
    std::filesystem::remove(with(tmp, ".cfl"), ec);
    throw;
  }
  // The data first: a reader that finds the new header finds its data.
  std::filesystem::rename(with(tmp, ".cfl"), with(base, ".cfl"), ec);
  if (!ec) std::filesystem::rename(with(tmp, ".hdr"), with(base, ".hdr"), ec);
  if (ec) throw IoError(base.string() + ".cfl: cannot write (" + ec.message() + ")");
}

void replace_atomically(const std::filesystem::path &path,
                        const std::function<void(const std::filesystem::path &)> &write) {
  std::string name(1, '.');
  name += path.filename().string();
  name += ".tmp-" + std::to_string(::getpid());
  const std::filesystem::path tmp = path.parent_path() / name;
  std::error_code ec;
  try {
    write(tmp);
  } catch (...) {
    std::filesystem::remove(tmp, ec);
    throw;
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw IoError(path.string() + ": cannot write (" + ec.message() + ")");
  }
}

Failure describe_failure(const std::exception_ptr &error) {
  try {
    std::rethrow_exception(error);
  } catch (const UsageError &e) {
    return {kUsageError, e.what()};
  } catch (const Unsupported &e) {
    return {kUnsupported, e.what()};
  } catch (const Error &e) { // IoError, InvalidArgument: the data or a file
    return {kDataError, e.what()};
  } catch (const std::bad_alloc &) {
    return {kInternal, "out of memory"};
  } catch (const std::exception &e) {
    return {kInternal, e.what()};
  }
}

void say(const std::string &command, const std::string &message) {
  std::fprintf(stderr, "mri %s: %s\n", command.c_str(), message.c_str());
}

} // namespace mri::cli
