// The Toeplitz normal operator on the GPU (toeplitz_cuda.hpp): Q's spectrum on the 2x grid and
// its application through cuFFT.
//
// Toeplitz application, padded grid of L voxels, image of N (L = 8N in 3D):
//   Unfused:   pad N values into Z (Z's zeros are written once, never again) -> FFT Z->W (out of
//              place) -> W *= K -> IFFT W in place -> out = crop(W) (+ lambda W^H W in)
//   Pruned:    pad into Z (the n_last nonzero slabs only) -> slab FFT Z->A on those slabs (A's
//              other slabs stay zero) -> last-axis FFT A->W -> W *= K -> last-axis IFFT W ->
//              slab IFFT of the n_last slabs the crop reads -> crop
//   Callbacks: FFT W->W whose load callback reads the image (zeros without a read) and whose
//              store callback multiplies by K -> IFFT W->W whose store callback writes only the
//              cropped voxels (+ regulariser) into out: the pad, multiply and crop passes vanish.
// Plans are made once per padded grid and kept (release_toeplitz_plans()), so the cuFFT JIT of
// the callback kernels is paid once per process.
#include <chrono>
#include <limits>
#include <memory>

#include "device.cuh"
#include "devices/device_slabs.hpp"
#include "exact/dirichlet_spectrum.cuh"
#include "exact/fhd_plan.cuh"
#include "nufft/gridding_cuda.hpp"
#include "host_clock.hpp"
#include "normal_common.cuh"
#include "toeplitz_plans.cuh"

namespace mri::cuda {
namespace {

using detail::Clock;
using detail::seconds_since;

using detail::ToeplitzCallbackParams;
using detail::acquire_plans;
using detail::PlanSet;
using detail::resolve_fft;

// ---------------------------------------------------------------------------------------------
// Kernels

// The full Q on the padded grid in FFT order (offset d at index d mod L) from the half grid:
// d_h <= 0 read directly, d_h > 0 as conj(Q(-d)); offsets with some d_a = -n_a zeroed. With
// h = -1 the "half" grid is the whole padded grid in image order (offset d at index d + n).
__global__ void expand_kernel(const float2 *__restrict__ qh, Dims d, int h, int hx, int hy, long long total,
                              float2 *__restrict__ out) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= total) return;
  const int pos[3] = {static_cast<int>(p % d.lx), static_cast<int>((p / d.lx) % d.ly),
                      static_cast<int>(p / (static_cast<long long>(d.lx) * d.ly))};
  const int n[3] = {d.nx, d.ny, d.nz}, l[3] = {d.lx, d.ly, d.lz};
  int off[3];
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    if (l[a] == 1) {
      off[a] = 0;
      continue;
    }
    off[a] = pos[a] < n[a] ? pos[a] : pos[a] - l[a];
    if (off[a] == -n[a]) {
      out[p] = make_float2(0.f, 0.f);
      return;
    }
  }
  const bool flip = h >= 0 && off[h] > 0;
  int idx[3];
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    const int o = flip ? -off[a] : off[a];
    idx[a] = l[a] == 1 ? 0 : o + n[a]; // the half grid: L_a planes (a != h) or n_h + 1 (a == h)
  }
  const float2 v = qh[idx[0] + static_cast<long long>(hx) * (idx[1] + static_cast<long long>(hy) * idx[2])];
  out[p] = flip ? make_float2(v.x, -v.y) : v;
}

__global__ void real_part_kernel(const float2 *__restrict__ w, float scale, long long total, float *__restrict__ k) {
  const long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p < total) k[p] = w[p].x * scale;
}

// Unfused pad: the image into the corner of Z (the rest of Z stays zero).
__global__ void pad_kernel(const float2 *__restrict__ in, Dims d, int n, float2 *__restrict__ z) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  int ix, iy, iz;
  image_coordinates(v, d, ix, iy, iz);
  z[padded_index(ix, iy, iz, d)] = in[v];
}

__global__ void multiply_kernel(float2 *__restrict__ w, const float *__restrict__ k, long long total) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < total; p += stride) {
    const float kp = k[p];
    const float2 v = w[p];
    w[p] = make_float2(v.x * kp, v.y * kp);
  }
}

// Unfused crop: out[v] = W[p(v)] + lambda (W^H W in)[v].
__global__ void crop_kernel(const float2 *__restrict__ w, const float2 *__restrict__ in, Dims d, int n, int reg,
                            float lambda, float2 *__restrict__ out) {
  const int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v >= n) return;
  int ix, iy, iz;
  image_coordinates(v, d, ix, iy, iz);
  const float2 c = w[padded_index(ix, iy, iz, d)];
  float rr = 0.f, ri = 0.f;
  if (reg != mri::detail::kRegNone)
    mri::detail::regularizer_normal_voxel<int>(reg, lambda, reinterpret_cast<const float *>(in), v, ix, iy, iz, d.nx,
                                               d.ny, d.nz, rr, ri);
  out[v] = make_float2(c.x + rr, c.y + ri);
}

// Where Q's spectrum comes from, decided here only: the tensor-core Dirichlet sum for 3D grids
// under KernelPolicy::Auto (about a third of the time of Q by the Tuned F^H D kernel plus its FFT
// on RECON-3D: bench_recon_gpu, docs/performance.md); a named policy sums Q with that F^H D kernel
// (the stage benchmarks and tests), as do 1D/2D grids.
bool spectrum_by_dirichlet(const Grid &grid, KernelPolicy policy) {
  return policy == KernelPolicy::Auto && detail::dirichlet_spectrum_applies(grid);
}

bool same_params(const ToeplitzCallbackParams &a, const ToeplitzCallbackParams &b) {
  return a.in == b.in && a.out == b.out && a.kernel == b.kernel && a.nx == b.nx && a.ny == b.ny && a.nz == b.nz &&
         a.lx == b.lx && a.ly == b.ly && a.lx_shift == b.lx_shift && a.ly_shift == b.ly_shift &&
         a.regularizer == b.regularizer && a.lambda == b.lambda;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// QOperator

struct QOperator::Impl {
  Grid grid, padded;
  Dims dims{};
  cudaStream_t stream = nullptr;
  std::shared_ptr<PlanSet> plans;
  DeviceBuffer<float> kernel; // L: Re(FFT(Q)) / L, FFT order
  DeviceBuffer<float2> w;     // L: the FFT array
  DeviceBuffer<float2> z;     // Unfused: L, Pruned: the n_last slabs; the zero-padded input
  DeviceBuffer<float2> a;     // Pruned: L, the slab-transformed input (slabs >= n_last stay zero)
  bool apply_ready = false;   // z and a made (prepare_apply)
  ToeplitzSetup setup;
  std::string q_path = "spectrum upload";
  cudaEvent_t event = nullptr;

  Impl(const Grid &g, StreamHandle s)
      : grid(g), padded(g.doubled()), dims(dims_of(g, padded)),
        stream(as_stream(s ? s : default_stream())) {
    if (padded.voxels() > std::numeric_limits<int>::max())
      throw Unsupported("cuda Toeplitz operator: the padded grid of " + std::to_string(padded.voxels()) +
                        " voxels exceeds the 32-bit index range of cuFFT's callbacks and the kernels");
    event = make_event();
  }
  ~Impl() { // the buffers' cudaFree waits for work in flight; no use of the stream here (it may
             // be a thread's stream already destroyed at thread or process exit)
    if (event) cudaEventDestroy(event);
  }

  // Plans + the spectrum's buffers; `kernel` must be filled by the caller.
  void prepare(ToeplitzFft requested) {
    plans = acquire_plans(padded, resolve_fft(requested, padded), stream);
    const auto l = static_cast<std::size_t>(padded.voxels());
    kernel.grow(l); // may already hold the spectrum (the Dirichlet path writes it first)
    w = DeviceBuffer<float2>(l);
  }

  // The zero-padded input buffers, at the first apply(): an operator whose spectrum only the
  // coil-batched SENSE operator reads (sense_toeplitz.hpp) never holds them.
  void prepare_apply() {
    if (apply_ready) return;
    const auto l = static_cast<std::size_t>(padded.voxels());
    if (plans->fft == ToeplitzFft::Unfused) {
      z = DeviceBuffer<float2>(l);
      MRI_CUDA_CHECK(cudaMemsetAsync(z.get(), 0, l * sizeof(float2), stream));
    } else if (plans->fft == ToeplitzFft::Pruned || plans->fft == ToeplitzFft::PrunedCallback) {
      const auto zl = static_cast<std::size_t>(plans->slabs * plans->slab_size);
      z = DeviceBuffer<float2>(zl);
      MRI_CUDA_CHECK(cudaMemsetAsync(z.get(), 0, zl * sizeof(float2), stream));
      a = DeviceBuffer<float2>(l);
      MRI_CUDA_CHECK(cudaMemsetAsync(a.get(), 0, l * sizeof(float2), stream));
    }
    apply_ready = true;
  }

  // K = Re(FFT(Q)) / L from Q on `half` (Q's offsets d_h <= 0 along axis h, or the whole padded
  // grid in image order for h = -1): expanded into the FFT array in FFT order, transformed.
  // Synchronises the stream (the caller frees Q next).
  void make_spectrum(const float2 *q, int h, const Grid &half) {
    const auto l = static_cast<long long>(padded.voxels());
    expand_kernel<<<blocks_for(l), kThreads, 0, stream>>>(q, dims, h, static_cast<int>(half.nx()),
                                                          static_cast<int>(half.ny()), l, w.get());
    MRI_CUDA_CHECK(cudaGetLastError());
    auto *buf = reinterpret_cast<cufftComplex *>(w.get());
    MRI_CUFFT_CHECK(cufftExecC2C(plans->fwd, buf, buf, CUFFT_FORWARD));
    real_part_kernel<<<blocks_for(l), kThreads, 0, stream>>>(w.get(), 1.0f / static_cast<float>(l), l, kernel.get());
    MRI_CUDA_CHECK(cudaGetLastError());
    MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
  }

  // The callbacks' operands, uploaded (stream-ordered) only when they change.
  void update_params(const float2 *src, float2 *dst, RegularizerTerm reg) {
    ToeplitzCallbackParams p{};
    p.in = src;
    p.out = dst;
    p.kernel = kernel.get();
    p.nx = dims.nx;
    p.ny = dims.ny;
    p.nz = dims.nz;
    p.lx = dims.lx;
    p.ly = dims.ly;
    p.lx_shift = log2_if_power_of_two(dims.lx);
    p.ly_shift = log2_if_power_of_two(dims.ly);
    p.regularizer = reg.regularizer;
    p.lambda = reg.lambda;
    if (!plans->params_valid || !same_params(p, plans->params_host)) {
      plans->params_host = p; // pageable source: copied to staging before cudaMemcpyAsync returns
      MRI_CUDA_CHECK(cudaMemcpyAsync(plans->params_dev, &plans->params_host, sizeof p, cudaMemcpyHostToDevice, stream));
      plans->params_valid = true;
    }
  }

  void apply(const DeviceImage &in, DeviceImage &out, RegularizerTerm reg) {
    check_image(in, grid, "in");
    check_image(out, grid, "out");
    if (in.data() == out.data()) mri::detail::invalid_argument("out", "in", "must not alias the input");
    join(as_stream(in.stream()), stream, event);
    prepare_apply();
    plans->set_stream(stream);
    const auto l = static_cast<long long>(padded.voxels());
    const int n = static_cast<int>(grid.voxels());
    const auto *src = reinterpret_cast<const float2 *>(in.data());
    auto *dst = reinterpret_cast<float2 *>(out.data());
    if (plans->fft == ToeplitzFft::Callbacks) {
      update_params(src, dst, reg);
      auto *buf = reinterpret_cast<cufftComplex *>(w.get());
      MRI_CUFFT_CHECK(cufftExecC2C(plans->cb_fwd, buf, buf, CUFFT_FORWARD));
      MRI_CUFFT_CHECK(cufftExecC2C(plans->cb_inv, buf, buf, CUFFT_INVERSE));
    } else if (plans->fft == ToeplitzFft::Pruned || plans->fft == ToeplitzFft::PrunedCallback) {
      auto *zc = reinterpret_cast<cufftComplex *>(z.get());
      auto *ac = reinterpret_cast<cufftComplex *>(a.get());
      auto *wc = reinterpret_cast<cufftComplex *>(w.get());
      pad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dims, n, z.get());
      MRI_CUDA_CHECK(cudaGetLastError());
      MRI_CUFFT_CHECK(cufftExecC2C(plans->slab, zc, ac, CUFFT_FORWARD));
      if (plans->fft == ToeplitzFft::PrunedCallback) {
        update_params(src, dst, reg);
        MRI_CUFFT_CHECK(cufftExecC2C(plans->last_cb, ac, wc, CUFFT_FORWARD)); // multiplied on store
      } else {
        MRI_CUFFT_CHECK(cufftExecC2C(plans->last, ac, wc, CUFFT_FORWARD));
        multiply_kernel<<<static_cast<int>(std::min<long long>(blocks_for(l), 16LL * detail::multiprocessor_count())), kThreads, 0, stream>>>(
            w.get(), kernel.get(), l);
        MRI_CUDA_CHECK(cudaGetLastError());
      }
      MRI_CUFFT_CHECK(cufftExecC2C(plans->last, wc, wc, CUFFT_INVERSE));
      MRI_CUFFT_CHECK(cufftExecC2C(plans->slab, wc, wc, CUFFT_INVERSE));
      crop_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w.get(), src, dims, n, reg.regularizer, reg.lambda, dst);
      MRI_CUDA_CHECK(cudaGetLastError());
    } else {
      pad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dims, n, z.get());
      MRI_CUDA_CHECK(cudaGetLastError());
      MRI_CUFFT_CHECK(cufftExecC2C(plans->fwd, reinterpret_cast<cufftComplex *>(z.get()),
                                   reinterpret_cast<cufftComplex *>(w.get()), CUFFT_FORWARD));
      multiply_kernel<<<static_cast<int>(std::min<long long>(blocks_for(l), 16LL * detail::multiprocessor_count())), kThreads, 0, stream>>>(
          w.get(), kernel.get(), l);
      MRI_CUDA_CHECK(cudaGetLastError());
      MRI_CUFFT_CHECK(cufftExecC2C(plans->inv, reinterpret_cast<cufftComplex *>(w.get()),
                                   reinterpret_cast<cufftComplex *>(w.get()), CUFFT_INVERSE));
      crop_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w.get(), src, dims, n, reg.regularizer, reg.lambda, dst);
      MRI_CUDA_CHECK(cudaGetLastError());
    }
    join(stream, as_stream(out.stream()), event);
  }
};

QOperator::QOperator(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
                                   KernelPolicy policy, ToeplitzFft fft, StreamHandle stream) {
  if (trajectory.empty()) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  trajectory.check_within(grid);
  const std::vector<float> w = checked_weights(weights, trajectory.size());
  impl_ = std::make_unique<Impl>(grid, stream);
  Impl &im = *impl_;

  if (spectrum_by_dirichlet(grid, policy)) {
    // The spectrum directly (no Q, no FFT of Q): the tensor-core sum of dirichlet_spectrum.cu.
    auto t = Clock::now();
    const detail::DevicePoints k(trajectory);
    DeviceBuffer<float> w_dev(w.size());
    if (!w.empty())
      MRI_CUDA_CHECK(cudaMemcpyAsync(w_dev.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice, im.stream));
    const double w_max = w.empty() ? 1.0 : *std::max_element(w.begin(), w.end());
    const auto l = static_cast<std::size_t>(im.padded.voxels());
    im.kernel.grow(l);
    if (w_max > 0.0)
      detail::dirichlet_spectrum(k.data(), w.empty() ? nullptr : w_dev.get(), trajectory.size(), w_max, grid,
                                 im.kernel.get(), im.stream);
    else
      MRI_CUDA_CHECK(cudaMemsetAsync(im.kernel.get(), 0, l * sizeof(float), im.stream));
    MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream)); // k and w_dev are freed next
    im.setup.q_seconds = seconds_since(t);
    t = Clock::now();
    im.prepare(fft);
    MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream));
    im.setup.fft_setup_seconds = seconds_since(t);
    im.q_path = "dirichlet-tensor-cores";
    return;
  }
  im.q_path = std::string("q-sum/") + mri::to_string(policy) + " + fft";

  auto t = Clock::now();
  const int h = last_axis(grid);
  const Grid half = q_half_grid(grid);
  detail::FhdPlan plan(trajectory, half, grid);
  detail::q_half_coefficients(trajectory, w, grid, plan.device_samples(), plan.stream()); // device_slabs.hpp
  plan.adjoint_device(policy, plan.device_samples(), plan.device_image());
  plan.synchronize();
  im.setup.q_seconds = seconds_since(t);

  // Plans, Hermitian completion into the FFT array, FFT(Q) -> the real spectrum.
  t = Clock::now();
  im.prepare(fft);
  im.make_spectrum(reinterpret_cast<const float2 *>(plan.device_image()), h, half); // synchronises: the
  im.setup.fft_setup_seconds = seconds_since(t);                                   // FhdPlan's image is freed next
}

QOperator::QOperator(const Grid &grid, const DeviceImage &q, ToeplitzFft fft, StreamHandle stream) {
  const Grid half = q_half_grid(grid);
  const bool whole = q.grid() == grid.doubled();
  if (q.data() == nullptr || (!whole && q.grid() != half))
    mri::detail::invalid_argument("q.grid().voxels()", q.grid().voxels(),
                                  "must be grid.doubled() (" + std::to_string(grid.doubled().voxels()) +
                                      " voxels) or Q's half grid (" + std::to_string(half.voxels()) + " voxels)");
  impl_ = std::make_unique<Impl>(grid, stream);
  Impl &im = *impl_;
  const auto t = Clock::now();
  join(as_stream(q.stream()), im.stream, im.event);
  im.prepare(fft);
  // The whole grid needs no completion (h = -1); the half is completed as the exact sum's own.
  im.make_spectrum(reinterpret_cast<const float2 *>(q.data()), whole ? -1 : last_axis(grid), whole ? im.padded : half);
  im.q_path = "device q + fft";
  im.setup.fft_setup_seconds = seconds_since(t);
}

QOperator::QOperator(const Grid &grid, std::span<const float> spectrum, ToeplitzFft fft,
                                   StreamHandle stream) {
  const Grid padded = grid.doubled();
  if (spectrum.size() != static_cast<std::size_t>(padded.voxels()))
    mri::detail::invalid_argument("spectrum.size()", spectrum.size(),
                                  "must be grid.doubled().voxels() = " + std::to_string(padded.voxels()));
  impl_ = std::make_unique<Impl>(grid, stream);
  Impl &im = *impl_;
  auto t = Clock::now();
  im.prepare(fft);
  MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream));
  im.setup.fft_setup_seconds = seconds_since(t);
  t = Clock::now();
  MRI_CUDA_CHECK(cudaMemcpyAsync(im.kernel.get(), spectrum.data(), spectrum.size_bytes(), cudaMemcpyHostToDevice,
                                 im.stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream));
  im.setup.transfer_seconds = seconds_since(t);
}

QOperator::QOperator(const QOperator &source, StreamHandle stream) {
  impl_ = std::make_unique<Impl>(source.grid(), stream);
  Impl &im = *impl_;
  auto t = Clock::now();
  im.prepare(source.fft());
  MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream));
  im.setup.fft_setup_seconds = seconds_since(t);
  t = Clock::now();
  int here = 0;
  MRI_CUDA_CHECK(cudaGetDevice(&here));
  cudaPointerAttributes from{};
  MRI_CUDA_CHECK(cudaPointerGetAttributes(&from, source.device_spectrum()));
  MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(source.stream()))); // its spectrum complete (any device's stream)
  MRI_CUDA_CHECK(cudaMemcpyPeerAsync(im.kernel.get(), here, source.device_spectrum(), from.device,
                                     static_cast<std::size_t>(im.padded.voxels()) * sizeof(float), im.stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(im.stream));
  im.setup.transfer_seconds = seconds_since(t);
  im.q_path = "spectrum copy";
}

QOperator::~QOperator() = default;
QOperator::QOperator(QOperator &&) noexcept = default;
QOperator &QOperator::operator=(QOperator &&) noexcept = default;

const Grid &QOperator::grid() const { return impl_->grid; }
ToeplitzFft QOperator::fft() const { return impl_->plans->fft; }
const std::string &QOperator::fft_note() const { return impl_->plans->note; }
const std::string &QOperator::q_path() const { return impl_->q_path; }
const ToeplitzSetup &QOperator::setup() const { return impl_->setup; }
StreamHandle QOperator::stream() const { return impl_->stream; }

void QOperator::apply(const DeviceImage &in, DeviceImage &out) const { impl_->apply(in, out, {}); }
void QOperator::apply_regularized(const DeviceImage &in, DeviceImage &out, Regularizer r, double lambda) const {
  impl_->apply(in, out, regularizer_term(r, lambda));
}
DeviceImage QOperator::domain_vector() const { return DeviceImage(impl_->grid, impl_->stream); }

std::vector<float> QOperator::spectrum() const {
  std::vector<float> s(static_cast<std::size_t>(impl_->padded.voxels()));
  MRI_CUDA_CHECK(cudaMemcpyAsync(s.data(), impl_->kernel.get(), s.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                 impl_->stream));
  MRI_CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
  return s;
}

const float *QOperator::device_spectrum() const { return impl_->kernel.get(); }

} // namespace mri::cuda
