#pragma once
// What the CPU (lib/recon/recon_cpu.cpp) and GPU (cuda/recon/recon_cuda.cu) reconstructions write
// into their ReconReport alike, so that the two report the same way: a Q spectrum stored in the
// cache, the phases announced to ReconOptions::on_phase, and the conjugate gradient's outcome at
// the end.
#include <chrono>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mri/error.hpp"
#include "mri/reconstruct.hpp"
#include "mri/toeplitz_cache.hpp"

namespace mri::detail {

using ReconClock = std::chrono::steady_clock;

// Writes spectrum() to report.q_cache_file, the time counted as setup. A failure (computing the
// spectrum included) is noted in q_cache_message, not thrown: the reconstruction does not need
// the cache.
template <class Spectrum>
void store_q_spectrum(ReconReport &report, const ToeplitzCacheKey &key, const Grid &grid, Spectrum &&spectrum) {
  const auto t = ReconClock::now();
  try {
    save_toeplitz_spectrum(report.q_cache_file, key, grid, spectrum());
  } catch (const Error &e) {
    report.q_cache_message += std::string(report.q_cache_message.empty() ? "" : "; ") + "not stored: " + e.what();
  }
  report.setup_seconds += std::chrono::duration<double>(ReconClock::now() - t).count();
}

// Q through the cache, alike on CPU and GPU: when an entry exists its spectrum is read (the
// read's time is Q's phase) and from_spectrum(spectrum) makes the operator (Hit); a bad entry is
// Rejected with the reason; then (or on a Miss) compute() makes the operator from Q and
// spectrum() gives what is stored.
template <class FromSpectrum, class Compute, class Spectrum>
void toeplitz_through_cache(ReconReport &report, const ToeplitzCacheKey &key, const Grid &grid, bool entry_exists,
                            FromSpectrum &&from_spectrum, Compute &&compute, Spectrum &&spectrum) {
  report.q_cache = QCacheStatus::Miss;
  if (entry_exists) {
    const auto t = ReconClock::now();
    try {
      const std::vector<float> loaded = load_toeplitz_spectrum(report.q_cache_file, key, grid);
      report.q_seconds += std::chrono::duration<double>(ReconClock::now() - t).count();
      from_spectrum(loaded);
      report.q_cache = QCacheStatus::Hit;
      return;
    } catch (const IoError &e) {
      report.q_seconds += std::chrono::duration<double>(ReconClock::now() - t).count();
      report.q_cache = QCacheStatus::Rejected;
      report.q_cache_message = e.what();
    }
  }
  compute();
  store_q_spectrum(report, key, grid, spectrum);
}

// f() as the phase `name` of options.on_phase: announced at its start (with an estimate of its
// seconds, NaN for none) and at its end. Not at the end when f throws: the caller's progress
// display ends with the reconstruction's error.
template <class F>
decltype(auto) announced_phase(const ReconOptions &o, std::string_view name, double expected_seconds, F &&f) {
  if (o.on_phase) o.on_phase({name, 0, expected_seconds});
  struct End {
    const ReconOptions &o;
    std::string_view name;
    int unwinding = std::uncaught_exceptions();
    ~End() {
      if (o.on_phase && std::uncaught_exceptions() == unwinding) o.on_phase({name, 1, 0});
    }
  } end{o, name};
  return f();
}

// The NUFFT options of a method = Nufft reconstruction on `backend`.
inline NufftOptions recon_nufft_options(const ReconOptions &o, Backend backend) {
  NufftOptions n;
  n.tolerance = o.nufft.tolerance;
  n.precision = o.precision;
  n.gridding = o.nufft.gridding;
  n.backend = backend;
  return n;
}

// The conjugate gradient's outcome into the report.
template <class Solver> void record_cg(ReconReport &report, const Solver &cg) {
  report.iterations = cg.iterations();
  report.status = cg.info();
  report.residuals = cg.residual_history();
}

// The result: the image, and the report completed with the solver's outcome and the total time
// since t_start.
template <class Solver>
ReconResult finish_recon(Image image, ReconReport report, const Solver &cg, ReconClock::time_point t_start) {
  record_cg(report, cg);
  report.total_seconds = std::chrono::duration<double>(ReconClock::now() - t_start).count();
  return {std::move(image), std::move(report)};
}

} // namespace mri::detail
