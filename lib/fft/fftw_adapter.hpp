#pragma once
// FFTW's two precisions behind one interface: in-place complex transforms of a grid (the NUFFT's
// oversampled grid, the Toeplitz embedding). Plan creation and destruction must hold
// fftw_planner_mutex() (FFTW's planner is not thread-safe); execution needs no lock.
#include <fftw3.h>

#include <array>
#include <complex>
#include <cstdint>

#include "fftw_lock.hpp"

namespace mri::detail {

template <class T> struct Fftw;
template <> struct Fftw<float> {
  using plan = fftwf_plan;
  static std::complex<float> *alloc(std::size_t n) { return reinterpret_cast<std::complex<float> *>(fftwf_alloc_complex(n)); }
  static void free(std::complex<float> *p) { fftwf_free(p); }
  static plan make(int rank, const int *d, std::complex<float> *b, int sign, int threads) {
    fftwf_plan_with_nthreads(threads); // fftwf_init_threads ran with the planner lock's creation
    auto *f = reinterpret_cast<fftwf_complex *>(b);
    return fftwf_plan_dft(rank, d, f, f, sign, FFTW_ESTIMATE);
  }
  // howmany contiguous in-place transforms of length n, `distance` values apart (GridFft's
  // lines); single-threaded (GridFft runs the lines on its OpenMP team).
  static plan make_lines(int n, int howmany, int distance, std::complex<float> *b, int sign) {
    fftwf_plan_with_nthreads(1);
    auto *f = reinterpret_cast<fftwf_complex *>(b);
    return fftwf_plan_many_dft(1, &n, howmany, f, nullptr, 1, distance, f, nullptr, 1, distance, sign, FFTW_ESTIMATE);
  }
  static void execute(plan p) { fftwf_execute(p); }
  // The plan on another array of the same size and alignment (FFTW's new-array execute).
  static void execute(plan p, std::complex<float> *data) {
    auto *f = reinterpret_cast<fftwf_complex *>(data);
    fftwf_execute_dft(p, f, f);
  }
  static void destroy(plan p) { fftwf_destroy_plan(p); }
};
template <> struct Fftw<double> {
  using plan = fftw_plan;
  static std::complex<double> *alloc(std::size_t n) { return reinterpret_cast<std::complex<double> *>(fftw_alloc_complex(n)); }
  static void free(std::complex<double> *p) { fftw_free(p); }
  static plan make(int rank, const int *d, std::complex<double> *b, int sign, int threads) {
    with_threads(threads);
    auto *f = reinterpret_cast<fftw_complex *>(b);
    return fftw_plan_dft(rank, d, f, f, sign, FFTW_ESTIMATE);
  }
  static plan make_lines(int n, int howmany, int distance, std::complex<double> *b, int sign) {
    with_threads(1);
    auto *f = reinterpret_cast<fftw_complex *>(b);
    return fftw_plan_many_dft(1, &n, howmany, f, nullptr, 1, distance, f, nullptr, 1, distance, sign, FFTW_ESTIMATE);
  }
  static void execute(plan p) { fftw_execute(p); }
  static void execute(plan p, std::complex<double> *data) {
    auto *f = reinterpret_cast<fftw_complex *>(data);
    fftw_execute_dft(p, f, f);
  }
  static void destroy(plan p) { fftw_destroy_plan(p); }

private:
  // The next plan's threads; FFTW's double threads are initialised on first use (under the
  // planner lock, as every plan is made).
  static void with_threads(int threads) {
    static const bool initialised = fftw_init_threads() != 0;
    (void)initialised;
    fftw_plan_with_nthreads(threads);
  }
};

// FFTW's row-major extents of a grid of `rank` axes: ours reversed (x fastest). dims() points
// at the `rank` that FFTW takes.
struct FftwShape {
  int rank = 0;
  int n[3] = {1, 1, 1};
  const int *dims() const { return n + (3 - rank); }
};
inline FftwShape fftw_shape(int rank, const std::array<std::int64_t, 3> &extents) {
  return {rank, {static_cast<int>(extents[2]), static_cast<int>(extents[1]), static_cast<int>(extents[0])}};
}

} // namespace mri::detail
