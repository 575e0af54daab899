#pragma once
// What every subcommand of `mri` shares: the exit codes, usage errors, the option parsers of
// SDK enums and matrices, and BART file names.
#include <CLI/CLI.hpp>

#include <array>
#include <exception>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include <mri/io.hpp>
#include <mri/mri.hpp>

namespace mri::cli {

// Exit codes (docs/cli.md): 0 success; 1 data error (a file or its content: mri::IoError,
// mri::InvalidArgument); 2 usage error (options: CLI11's parse errors, UsageError);
// 3 unsupported here (mri::Unsupported: no GPU, a feature not built yet); 4 internal error.
enum Exit : int { kOk = 0, kDataError = 1, kUsageError = 2, kUnsupported = 3, kInternal = 4 };

// Options that contradict each other or a value the tool cannot use.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A failure as main() reports it: its exit code (the table above) and its message.
struct Failure {
  int code;
  std::string message;
};
Failure describe_failure(const std::exception_ptr &error);

// A subcommand: registered on the app, run after parsing when it was given.
using Runner = std::function<int()>;

// "1.5,2" -> {1.5, 2}: 2 or 3 comma-separated positive numbers. Throws UsageError naming `option`.
std::vector<double> parse_sizes(const std::string &text, const std::string &option);
// "0.6,-0.8,0": 3 comma-separated finite numbers (a direction or a position). Throws UsageError.
std::array<double, 3> parse_vector3(const std::string &text, const std::string &option);
// "128,128" or "64,64,64" -> Grid (whole numbers in 1..65535). Throws UsageError naming `option`.
Grid parse_matrix(const std::string &text, const std::string &option);

// CLI11 transformers for the SDK's enums: "cpu" -> Backend::Cpu ...
template <class Enum> CLI::Option *add_enum(CLI::App &app, const std::string &name, Enum &value,
                                            const std::map<std::string, Enum> &names, const std::string &help) {
  std::string current, choices;
  for (const auto &[text, v] : names) {
    if (v == value) current = text;
    choices += (choices.empty() ? "{" : "|") + text;
  }
  return app.add_option(name, value, help)
      ->transform(CLI::CheckedTransformer(names).description(""))
      ->type_name(choices + "}")
      ->default_str(current);
}
extern const std::map<std::string, Backend> kBackends;
extern const std::map<std::string, Precision> kPrecisions;
extern const std::map<std::string, KernelPolicy> kPolicies;
extern const std::map<std::string, Method> kMethods;
extern const std::map<std::string, Normal> kNormals;
extern const std::map<std::string, Regularizer> kRegularizers;
extern const std::set<std::string> kRegularizerNames; // --regularizer's values
extern const std::map<std::string, ProximalAlgorithm> kProximalAlgorithms;
extern const std::map<std::string, Wavelet> kWavelets;
extern const std::map<std::string, DataScaling> kDataScalings;
extern const std::map<std::string, Gridding> kGriddings;
extern const std::map<std::string, TrajUnits> kTrajUnits;

// BART's base name "x" of "x", "x.cfl" or "x.hdr".
std::filesystem::path cfl_base(const std::string &name);
// Writes base.hdr/base.cfl through temporary files renamed at the end.
void write_cfl_atomic(const std::filesystem::path &base, const std::vector<std::int64_t> &dims,
                      const std::vector<cfloat> &data);

// Calls write(tmp) for a temporary sibling of `path`, then renames it to `path`: a failure leaves
// nothing half-written (the temporary is removed). IoError when the rename fails.
void replace_atomically(const std::filesystem::path &path,
                        const std::function<void(const std::filesystem::path &)> &write);

// One line on stderr: "mri <command>: <message>".
void say(const std::string &command, const std::string &message);

} // namespace mri::cli
