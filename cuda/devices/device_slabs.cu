// Voxel slabs of the exact sums over several devices (device_slabs.hpp).
#include <algorithm>
#include <array>
#include <chrono>
#include <utility>

#include "current_device.cuh"
#include "device_slabs.hpp"
#include "exact/dirichlet_spectrum.cuh"
#include "exact/fhd_plan.cuh"
#include "host_clock.hpp"
#include "toeplitz/normal_common.cuh"
#include "per_device.cuh"

namespace mri::cuda::detail {
namespace {

const char *axis_name(int axis) { return axis == 0 ? "x" : axis == 1 ? "y" : "z"; }

// work(i) for every slab i with planes, one host thread per device (per_device.cuh).
template <class Work> void per_slab(const std::vector<Slab> &slabs, Work &&work) {
  std::vector<int> device_of;
  for (const Slab &s : slabs) device_of.push_back(s.planes > 0 ? s.device : -1);
  per_device(device_of, slabs.front().device, std::forward<Work>(work));
}

// c_m = w_m exp(-i 2 pi k_hm s / n_h) (turns = s / n_h), in double, rounded once.
__global__ void modulate_kernel(const float *__restrict__ kh, const float *__restrict__ w, int m, double turns,
                                float2 *__restrict__ c) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const float wi = w ? w[i] : 1.0f;
  double s = 0.0, co = 1.0;
  if (kh) sincospi(-2.0 * static_cast<double>(kh[i]) * turns, &s, &co);
  c[i] = make_float2(static_cast<float>(wi * co), static_cast<float>(wi * s));
}

} // namespace

std::vector<int> recon_devices(const std::vector<int> &requested) {
  if (requested.empty()) return {current_device()};
  int count = 0;
  MRI_CUDA_CHECK(cudaGetDeviceCount(&count));
  for (std::size_t i = 0; i < requested.size(); ++i)
    if (requested[i] < 0 || requested[i] >= count)
      mri::detail::invalid_argument("options.gpu.devices[" + std::to_string(i) + "]", requested[i],
                                    "is not a CUDA device of this process, which sees " + std::to_string(count) +
                                        " (ordinals 0 to " + std::to_string(count - 1) + ")");
  if (const int current = current_device(); requested.front() != current)
    mri::detail::invalid_argument("options.gpu.devices[0]", requested.front(),
                                  "must be the calling thread's current CUDA device, " + std::to_string(current) +
                                      ": the phases that do not split, and CG, run there");
  return requested;
}

namespace {

// `planes` planes along `axis` cut into one slab per device, in groups of `unit` planes (the
// last group may be short), as even as can be (the first slabs one group more).
std::vector<Slab> split_planes(int axis, std::int64_t planes, std::int64_t unit, const std::vector<int> &devices) {
  const std::int64_t groups = (planes + unit - 1) / unit, n = static_cast<std::int64_t>(devices.size());
  std::vector<Slab> slabs;
  std::int64_t first = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t mine = std::min(planes - first, unit * (groups / n + (i < groups % n ? 1 : 0)));
    slabs.push_back({devices[static_cast<std::size_t>(i)], axis, first, mine});
    first += mine;
  }
  return slabs;
}

} // namespace

std::vector<Slab> voxel_slabs(const Grid &grid, const std::vector<int> &devices) {
  const int axis = std::max(last_axis(grid), 0);
  return split_planes(axis, grid.extent(axis), 1, devices);
}

std::string describe(const std::vector<Slab> &slabs) {
  std::string s = std::string(axis_name(slabs.front().axis)) + " planes ";
  for (std::size_t i = 0; i < slabs.size(); ++i) {
    const Slab &b = slabs[i];
    s += (i ? ", " : "") +
         (b.planes > 0 ? std::to_string(b.first) + "-" + std::to_string(b.first + b.planes - 1) : std::string("none")) +
         " on device " + std::to_string(b.device);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// SlabAdjoint

// One slab's plan and buffers, all on its device.
struct SlabAdjoint::Part {
  FhdPlan plan;
  DeviceBuffer<cfloat> c;      // the coefficients, copied over when the slab is on another device
  DeviceBuffer<cfloat> images; // count x slab voxels, unless the slab is the whole grid
};

SlabAdjoint::SlabAdjoint(const Trajectory &trajectory, const Grid &out, const Grid &period,
                         const std::vector<int> &devices)
    : slabs_(voxel_slabs(out, devices)), voxels_(out.voxels()), samples_(trajectory.size()) {
  const int axis = slabs_.front().axis;
  plane_voxels_ = out.voxels() / out.extent(axis);
  parts_.resize(slabs_.size());
  for (std::size_t i = 0; i < slabs_.size(); ++i) {
    const Slab &s = slabs_[i];
    if (s.planes == 0) continue;
    if (s.device != slabs_.front().device) { // its coefficients come from, and its planes go to, the first
      enable_peer_access(s.device, slabs_.front().device);
      enable_peer_access(slabs_.front().device, s.device);
    }
    const CurrentDevice on(s.device);
    std::array<std::int64_t, 3> e = out.extents(), first{};
    e[axis] = s.planes;
    first[axis] = s.first;
    FhdPlanOptions options;
    if (s.planes < out.extent(axis)) options.window = FhdPlanOptions::Window{out, first};
    parts_[i].reset(new Part{FhdPlan(trajectory, Grid(e[0], e[1], e[2]), period, options), {}, {}});
  }
}

SlabAdjoint::~SlabAdjoint() {
  for (std::size_t i = 0; i < parts_.size(); ++i)
    if (parts_[i]) try {
        const CurrentDevice on(slabs_[i].device); // the plan's cuBLAS handle and streams are its device's
        parts_[i].reset();
      } catch (const CudaError &) { // a destructor cannot throw: freed from the current device instead
        parts_[i].reset();
      }
}

const std::vector<Slab> &SlabAdjoint::slabs() const { return slabs_; }

void SlabAdjoint::adjoint_coils(KernelPolicy policy, const cfloat *c, int count, cfloat *result, StreamHandle after,
                                std::span<double> seconds) {
  if (seconds.size() != slabs_.size())
    mri::detail::invalid_argument("seconds.size()", seconds.size(), "must be one per slab, " + std::to_string(slabs_.size()));
  MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(after))); // c is complete
  const int home = slabs_.front().device;
  const bool whole = parts_.size() == 1;
  per_slab(slabs_, [&](std::size_t i) {
    const auto t0 = Clock::now();
    const Slab &s = slabs_[i];
    Part &p = *parts_[i];
    const cudaStream_t stream = as_stream(p.plan.stream());
    const std::size_t slab_voxels = static_cast<std::size_t>(s.planes * plane_voxels_);
    const cfloat *mine = c;
    if (s.device != home) {
      const std::size_t n = static_cast<std::size_t>(count) * samples_;
      MRI_CUDA_CHECK(cudaMemcpyPeerAsync(p.c.grow(n), s.device, c, home, n * sizeof(cfloat), stream));
      mine = p.c.get();
    }
    cfloat *images = whole ? result : p.images.grow(static_cast<std::size_t>(count) * slab_voxels);
    p.plan.adjoint_coils_device(policy, mine, count, images);
    if (!whole) // each coil's slab is one contiguous run of its image: planes along the last axis
      for (int v = 0; v < count; ++v)
        MRI_CUDA_CHECK(cudaMemcpyPeerAsync(result + v * voxels_ + s.first * plane_voxels_, home,
                                           images + v * slab_voxels, s.device, slab_voxels * sizeof(cfloat), stream));
    p.plan.synchronize();
    seconds[i] += seconds_since(t0);
  });
}

// ---------------------------------------------------------------------------------------------
// Q

void q_half_coefficients(const Trajectory &trajectory, const std::vector<float> &w, const Grid &grid, cfloat *c,
                         StreamHandle stream) {
  const cudaStream_t s = as_stream(stream);
  const int h = last_axis(grid);
  const auto m = static_cast<int>(trajectory.size());
  std::vector<float> kh;
  if (h >= 0) {
    kh.resize(trajectory.size());
    for (std::size_t i = 0; i < kh.size(); ++i) {
      const KPoint &k = trajectory[i];
      kh[i] = h == 0 ? k.kx : h == 1 ? k.ky : k.kz;
    }
  }
  DeviceBuffer<float> kh_dev(kh.size()), w_dev(w.size());
  if (!kh.empty())
    MRI_CUDA_CHECK(cudaMemcpyAsync(kh_dev.get(), kh.data(), kh.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  if (!w.empty())
    MRI_CUDA_CHECK(cudaMemcpyAsync(w_dev.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  const double turns = h >= 0 ? static_cast<double>(grid.extent(h) / 2) / static_cast<double>(grid.extent(h)) : 0.0;
  modulate_kernel<<<blocks_for(m, kThreads), kThreads, 0, s>>>(kh.empty() ? nullptr : kh_dev.get(),
                                                     w.empty() ? nullptr : w_dev.get(), m, turns,
                                                     reinterpret_cast<float2 *>(c));
  MRI_CUDA_CHECK(cudaGetLastError());
  MRI_CUDA_CHECK(cudaStreamSynchronize(s)); // kh_dev and w_dev are freed next
}

bool q_sum_splits(const Grid &grid, KernelPolicy policy) {
  return !(policy == KernelPolicy::Auto && dirichlet_spectrum_applies(grid)); // toeplitz_cuda.cu's choice
}

SlabQ slab_q(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid, KernelPolicy policy,
                   const std::vector<int> &devices, StreamHandle stream, std::span<double> seconds) {
  if (trajectory.empty()) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  trajectory.check_within(grid);
  const std::vector<float> w = checked_weights(weights, trajectory.size());
  const Grid half = q_half_grid(grid);
  SlabQ out{DeviceImage(half, stream), voxel_slabs(half, devices)};
  SlabAdjoint slabs(trajectory, half, grid, devices);
  DeviceBuffer<cfloat> c(trajectory.size());
  q_half_coefficients(trajectory, w, grid, c.get(), stream);
  slabs.adjoint_coils(policy, c.get(), 1, out.q.data(), stream, seconds); // returns with every slab in place
  return out;
}

SlabSpectrum slab_dirichlet_spectrum(const Trajectory &trajectory, std::span<const float> weights, const Grid &grid,
                                     const std::vector<int> &devices, std::span<double> seconds) {
  if (trajectory.empty()) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  trajectory.check_within(grid);
  const std::vector<float> w = checked_weights(weights, trajectory.size());
  const double w_max = w.empty() ? 1.0 : *std::max_element(w.begin(), w.end());
  const Grid padded = grid.doubled();
  const auto plane = static_cast<std::size_t>(padded.nx() * padded.ny());
  SlabSpectrum out{std::vector<float>(static_cast<std::size_t>(padded.voxels()), 0.0f),
                   split_planes(2, padded.nz(), dirichlet_spectrum_plane_block(), devices)};
  if (w_max == 0.0) return out; // all weights zero: K = 0
  per_slab(out.slabs, [&](std::size_t i) {
    const auto t0 = Clock::now();
    const Slab &s = out.slabs[i];
    const Stream stream; // on the slab's device, as everything below (plain copies: the staging
                         // ring belongs to the first device)
    DeviceBuffer<KPoint> k(trajectory.size());
    DeviceBuffer<float> w_dev(w.size());
    DeviceBuffer<float> planes(plane * static_cast<std::size_t>(s.planes));
    MRI_CUDA_CHECK(cudaMemcpyAsync(k.get(), trajectory.data(), trajectory.size() * sizeof(KPoint),
                                   cudaMemcpyHostToDevice, stream.get()));
    if (!w.empty())
      MRI_CUDA_CHECK(cudaMemcpyAsync(w_dev.get(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice,
                                     stream.get()));
    dirichlet_spectrum_planes(k.get(), w.empty() ? nullptr : w_dev.get(), trajectory.size(), w_max, grid,
                              static_cast<int>(s.first), static_cast<int>(s.planes), planes.get(), stream.get());
    MRI_CUDA_CHECK(cudaMemcpyAsync(out.spectrum.data() + static_cast<std::size_t>(s.first) * plane, planes.get(),
                                   plane * static_cast<std::size_t>(s.planes) * sizeof(float), cudaMemcpyDeviceToHost,
                                   stream.get()));
    MRI_CUDA_CHECK(cudaStreamSynchronize(stream.get())); // the buffers are freed next
    seconds[i] += seconds_since(t0);
  });
  return out;
}

} // namespace mri::cuda::detail
