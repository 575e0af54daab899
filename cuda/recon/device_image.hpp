#pragma once
// Device vectors for the GPU reconstruction, as plain C++ (no CUDA types): what lib/, the tests
// and the benchmarks use. mri::cuda::DeviceImage is an RAII complex-float array of one Grid in
// device memory; VectorOps<DeviceImage> gives ConjugateGradient (the one CG template of
// mri/conjugate_gradient.hpp) its dot/norm/axpy on the device. Reductions accumulate in double
// (deterministic: fixed block count, fixed-order final sum) and only the scalar crosses to the
// host; the two updates and the residual norm of a CG iteration run as one pass (update_norm2).
//
// Streams: every DeviceImage carries the stream its operations are ordered on (a cudaStream_t as
// void*); by default the calling thread's reconstruction stream (default_stream(), created on
// first use, non-blocking). Operations on vectors of one stream are ordered; the reductions
// synchronise that stream to return their scalar.
#include <complex>
#include <cstddef>

#include "mri/grid.hpp"
#include "mri/image.hpp"
#include "mri/vector_ops.hpp"

namespace mri::cuda {

using StreamHandle = void *; // cudaStream_t

// The calling thread's reconstruction stream (non-blocking, created on first use, destroyed at
// thread exit). Throws Unsupported when no CUDA device is usable.
StreamHandle default_stream();

// Free and total device memory of the current device, in bytes.
struct DeviceMemory {
  std::size_t free = 0, total = 0;
};
DeviceMemory device_memory();

// CUDA-event timing of the work enqueued on a stream between start() and stop_ms() (benchmarks).
class StreamTimer {
public:
  explicit StreamTimer(StreamHandle stream = nullptr); // nullptr: default_stream()
  ~StreamTimer();
  StreamTimer(const StreamTimer &) = delete;
  StreamTimer &operator=(const StreamTimer &) = delete;
  void start();
  double stop_ms(); // records the stop event, waits for it, returns the elapsed milliseconds

private:
  StreamHandle stream_;
  void *start_ = nullptr, *stop_ = nullptr;
};

// The bandwidth of a device-to-device copy of `bytes` bytes (bytes read + bytes written per
// second; median of `repeats`), the memory ceiling the benchmarks compare against.
double measure_copy_bandwidth(std::size_t bytes, int repeats = 7);

class DeviceImage {
public:
  DeviceImage() = default;
  // Allocates grid.voxels() values on `stream` (nullptr: default_stream()); contents undefined.
  explicit DeviceImage(const Grid &grid, StreamHandle stream = nullptr);
  // Uploads a host image (blocks until copied).
  explicit DeviceImage(const Image &host, StreamHandle stream = nullptr);
  ~DeviceImage();
  DeviceImage(DeviceImage &&other) noexcept;
  DeviceImage &operator=(DeviceImage &&other) noexcept;
  DeviceImage(const DeviceImage &) = delete;
  DeviceImage &operator=(const DeviceImage &) = delete;

  const Grid &grid() const { return grid_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  cfloat *data() { return data_; }
  const cfloat *data() const { return data_; }
  StreamHandle stream() const { return stream_; }

  // Blocking copies of size() values.
  void upload(const cfloat *host);
  void download(cfloat *host) const;
  Image to_host() const;

private:
  void release() noexcept;
  Grid grid_;
  std::size_t size_ = 0;
  cfloat *data_ = nullptr;
  StreamHandle stream_ = nullptr;
};

} // namespace mri::cuda

namespace mri {

template <> struct VectorOps<cuda::DeviceImage> {
  using Vec = cuda::DeviceImage;
  static Vec like(const Vec &v) { return Vec(v.grid(), v.stream()); }
  static void copy(const Vec &from, Vec &to);
  static std::complex<double> dot(const Vec &a, const Vec &b); // sum conj(a) b, double accumulation
  static double norm2(const Vec &a);                           // sum |a|^2, double accumulation
  static void axpy(std::complex<double> alpha, const Vec &x, Vec &y); // y += alpha x
  static void xpay(const Vec &x, std::complex<double> beta, Vec &y);  // y = x + beta y
  static void zero(Vec &v);
  static bool all_finite(const Vec &v);
  // One pass: x += alpha p, r -= alpha ap; returns ||r||^2 (ConjugateGradient's fused update).
  static double update_norm2(std::complex<double> alpha, const Vec &p, const Vec &ap, Vec &x, Vec &r);
};

} // namespace mri
