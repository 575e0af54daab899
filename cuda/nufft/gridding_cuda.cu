// The CUDA gridding NUFFT: scatter (GA, atomics) and reverse gridding (RGA, gather; Yang, Feng and
// Zhao, Magn. Reson. Imaging 2013), cuFFT, deapodization. See gridding_cuda.hpp for the algorithm;
// lib/nufft/nufft_plan.cpp for the maths
// (kernel polynomial, window convention j0 = ceil(t - W/2), s = 2 (j0 - (t - W/2)) - 1).
#include "gridding_cuda.hpp"

#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <cufft.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.cuh"
#include "cufft_check.cuh"
#include "recon/device_memory_ledger.cuh"
#include "mri/error.hpp"
#include "nufft/gridding_dispatch.cuh"
#include "gridding_resources.cuh"
#include "host_clock.hpp"
#include "caller_memory.cuh"
#include "staged_upload.cuh"

namespace mri::cuda::detail {
namespace {

void check_launch(const char *kernel) { check(cudaGetLastError(), kernel, __FILE__, __LINE__); }

// Auto reaches a device plan only from callers that pass it as given (NufftOperator's options
// resolve it): the gather, as before Gridding::ScatterFixed existed.
bool gathers(Gridding g) { return g == Gridding::Gather || g == Gridding::Auto; }

[[noreturn]] void throw_outside(const GriddingSetup &setup) {
  mri::detail::invalid_argument("trajectory", "device points",
                                "a sample lies outside [-n/2, n/2) of the grid " + std::to_string(setup.n[0]) + "x" +
                                    std::to_string(setup.n[1]) + "x" + std::to_string(setup.n[2]) +
                                    " (or is not finite)");
}
double ms_since(Clock::time_point t) { return 1e3 * seconds_since(t); }
} // namespace

struct NufftDevicePlan::State {
  GriddingSetup setup;
  Dev dev{};
  Kernels k{};
  ScatterMethod scatter = ScatterMethod::Shared;
  int m = 0;
  std::int64_t points = 0, voxels = 0;
  unsigned tiles_x = 1, tiles_y = 1, tiles = 1;
  bool within = true;
  Clock::time_point t_start;             // MRI_GRIDDING_TRACE: when the constructor began,
  double t_stream = 0, t_fft = 0, t_alloc = 0; // and its host phases (ms since then)
  cudaStream_t stream = nullptr;
  cudaMemPool_t pool = nullptr;
  FftPlan fft;
  bool fft_held = false;
  // adjoint_coils_device's batched inverse transforms (set_batched_fft): per grid count of a chunk,
  // a plan of that many grids (checked out on first use, returned with the plan); state 0: not
  // tried, 1: held, -1: not used (batching off, 3D, a single grid, or a work area above both
  // buffers it may borrow).
  bool batch_fft = false;
  std::array<FftPlan, kCoilBlock + 1> batched{};
  std::array<signed char, kCoilBlock + 1> batched_state{};
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  mutable float setup_ms = -1;
  DeviceBuffer<unsigned> keys, perm, offsets;
  DeviceBuffer<uint2> subproblems; // SM's work items (scatter_shared.cuh: kSubproblem)
  DeviceBuffer<int> jxs;
  DeviceBuffer<float4> rec;
  DeviceBuffer<float> consts, wts; // consts: kernel polynomial (kMaxCoef floats), then deapodization
  DeviceBuffer<float2> grid, sorted, samples, image;
  DeviceBuffer<float2> coil_grids, coil_sorted; // adjoint_coils_device: kCoilBlock grids and sorted coils
  DeviceBuffer<float2> coil_samples, coil_images; // adjoint_coils (host arrays): a block's uploads and results
  DeviceBuffer<unsigned char> fft_work;
  // Gridding::ScatterFixed: the grid in fixed point (two integers a point), the values'
  // max(|re|, |im|) and the scale; made on its first use.
  DeviceBuffer<unsigned long long> fixed_grid;
  DeviceBuffer<unsigned> max_abs;
  DeviceBuffer<FixedScale> fixed_scale;
  // RGA's items (gather_rga.cuh: kGatherRun<D> points of a row): whether each is dense, and
  // the dense ones' list followed by their count (and that count here); made on the first gather.
  DeviceBuffer<unsigned char> gather_dense;
  DeviceBuffer<unsigned> gather_list;
  unsigned dense_items = 0;
  bool gather_classified = false;

  // SM's subproblem table (scatter_shared.cuh) from the per-cell offsets, enqueued: per tile
  // ceil(samples / kSubproblem) entries, in tile order; the rest of the table kNoTile. The launch
  // takes the table's whole length (no wait for the count): at most tiles + M / kSubproblem + 1.
  std::size_t subproblem_bound() const { return tiles + static_cast<std::size_t>(m) / kSubproblem + 1; }
  // counts: the offsets' count buffer (points + 1 >= tiles entries), reused; temp: the offsets'
  // scan storage, sized for points + 1 items (cub's scan needs no more for fewer items).
  void plan_subproblems(unsigned *counts, void *temp, std::size_t temp_bytes) {
    DeviceBuffer<unsigned> first;
    first.allocate(tiles, pool, stream);
    MRI_CUDA_CHECK(cudaMemsetAsync(subproblems.get(), 0xff, subproblem_bound() * sizeof(uint2), stream));
    count_subproblems_kernel<<<blocks(tiles, 256), 256, 0, stream>>>(offsets.get(), dev, k.tx, k.ty, k.tz,
                                                                     static_cast<int>(tiles_x),
                                                                     static_cast<int>(tiles_y), tiles, counts);
    check_launch("count_subproblems_kernel");
    MRI_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, counts, first.get(), static_cast<int>(tiles), stream));
    fill_subproblems_kernel<<<blocks(tiles, 256), 256, 0, stream>>>(counts, first.get(), tiles, subproblems.get());
    check_launch("fill_subproblems_kernel");
    first.release();
  }

  unsigned gather_items_x() const { return blocks(dev.gx, k.gather_run); }
  unsigned gather_items() const { return gather_items_x() * dev.gy * dev.gz; }

  // Once per plan, on its first gather (a plan that only scatters never pays it): waits for the
  // classification to read how many items are dense (a few microseconds, once), so that a gather
  // launches the dense kernel only where there are any, with no more blocks than items.
  void classify_gather() {
    if (gather_classified) return;
    const unsigned items = gather_items();
    gather_dense.allocate(items, pool, stream);
    gather_list.allocate(std::size_t{items} + 1, pool, stream);
    unsigned *count = gather_list.get() + items;
    MRI_CUDA_CHECK(cudaMemsetAsync(count, 0, sizeof(unsigned), stream));
    k.classify<<<blocks(items, 256), 256, 0, stream>>>(offsets.get(), dev, gather_dense.get(), gather_list.get(),
                                                       count);
    check_launch("classify_gather_kernel");
    // Pageable destination: the copy returns once complete.
    MRI_CUDA_CHECK(cudaMemcpyAsync(&dense_items, count, sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
    gather_classified = true;
  }

  // SM's spread of the sorted values into `grid` (zeroed here): float tiles, or (fixed) fixed-point
  // tiles and grid converted to float at the end (deterministic; scatter_shared.cuh, SmAcc).
  void shared_scatter(const float2 *val, float2 *out, bool fixed) {
    const auto points_ = static_cast<std::size_t>(points);
    const auto launch = [&](auto kernel, std::size_t shared, unsigned long long *fixed) {
      kernel<<<static_cast<unsigned>(subproblem_bound()), 256, shared, stream>>>(
          jxs.get(), wts.get(), val, offsets.get(), subproblems.get(), dev, static_cast<int>(tiles_x),
          static_cast<int>(tiles_y), out, fixed, fixed_scale.get());
      check_launch("sm_scatter_kernel");
    };
    if (!fixed) {
      MRI_CUDA_CHECK(cudaMemsetAsync(out, 0, points_ * sizeof(float2), stream));
      launch(k.sm, k.sm_shared, nullptr);
      return;
    }
    if (!fixed_grid.get()) {
      MRI_CUDA_CHECK(cudaFuncSetAttribute(k.sm_fixed, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(k.sm_fixed_shared)));
      fixed_grid.allocate(2 * points_, pool, stream);
      max_abs.allocate(1, pool, stream);
      fixed_scale.allocate(1, pool, stream);
    }
    MRI_CUDA_CHECK(cudaMemsetAsync(max_abs.get(), 0, sizeof(unsigned), stream));
    max_abs_kernel<<<std::min(blocks(m, 256), 1024u), 256, 0, stream>>>(val, static_cast<std::size_t>(m), max_abs.get());
    check_launch("max_abs_kernel");
    fixed_scale_kernel<<<1, 1, 0, stream>>>(max_abs.get(), m, fixed_scale.get());
    check_launch("fixed_scale_kernel");
    MRI_CUDA_CHECK(cudaMemsetAsync(fixed_grid.get(), 0, 2 * points_ * sizeof(unsigned long long), stream));
    launch(k.sm_fixed, k.sm_fixed_shared, fixed_grid.get());
    fixed_to_float_kernel<<<blocks(points, 256), 256, 0, stream>>>(fixed_grid.get(), points_, fixed_scale.get(), out);
    check_launch("fixed_to_float_kernel");
  }

  // RGA of `coils` sorted coils (val + c m) into their grids (out + c points): a thread per
  // sparse item, then a block per dense item. Coils > 1: kCoilBlock at most, the coil-batched
  // kernels, which sum each coil in the same order as one coil alone.
  void gather(const float2 *val, float2 *out, int coils) {
    classify_gather();
    const bool batched = coils > 1;
    const GatherInputs in{jxs.get(), wts.get(), val, coils, static_cast<unsigned>(m)};
    const auto points_ = static_cast<std::size_t>(points);
    // 3D: 8 x 8 x 4 items (64 x 8 x 4 points), whose windows' samples a block shares, where 32 x 8 x
    // 1 (256 x 8 x 1 points) spanned twice the cells (faster on koosh most; bench_nufft_front_gpu).
    const dim3 block = setup.dims == 3 ? dim3(8, 8, 4) : dim3(32, 8, 1);
    const dim3 grid_dims(blocks(gather_items_x(), static_cast<int>(block.x)), blocks(dev.gy, static_cast<int>(block.y)),
                         blocks(dev.gz, static_cast<int>(block.z)));
    (batched ? k.gather_coils : k.gather)<<<grid_dims, block, 0, stream>>>(in, offsets.get(), gather_dense.get(), dev,
                                                                          out, points_);
    check_launch("gather_kernel");
    if (dense_items == 0) return;
    constexpr unsigned kMaxDenseBlocks = mri::detail::tuning::Gpu::gather_dense_max_blocks;
    (batched ? k.gather_dense_coils : k.gather_dense)<<<std::min(dense_items, kMaxDenseBlocks), kGatherDenseThreads, 0,
                                                        stream>>>(in, offsets.get(), gather_list.get(), dense_items,
                                                                  dev, out, points_);
    check_launch("gather_dense_kernel");
  }

  const float *coef() const { return consts.get(); }
  const float *deapod() const { return consts.get() + kMaxCoef; }

  // The plan of `count` grids for a chunk's inverse transforms, or null (one transform at a time).
  // Its work area is borrowed, so the plan's device memory stays as counted (cuda/recon's
  // device_memory_estimate: the grid, its work area): the plan's own work area where it is large
  // enough, else the single grid `grid`, which the coil-batched gather path does not use (stream
  // order separates it from adjoint_device's and forward_device's uses); larger than both: unbatched.
  const FftPlan *batched_fft(int count) {
    if (!batch_fft || count < 2 || count > kCoilBlock || setup.dims == 3 || dev.gy < 2) return nullptr;
    signed char &state = batched_state[static_cast<std::size_t>(count)];
    if (state == 0) {
      const FftPlan p = acquire_fft(setup.dims, dev.gx, dev.gy, dev.gz, dev.nz, count);
      const std::size_t grid_bytes = static_cast<std::size_t>(points) * sizeof(float2);
      void *area = p.work <= fft.work ? static_cast<void *>(fft_work.get())
                   : p.work <= grid_bytes ? static_cast<void *>(grid.get())
                                          : nullptr;
      if (trace_enabled())
        std::fprintf(stderr,
                     "[gridding plan] batched cuFFT of %d grids %dx%d: work area %zu B (the plan's %zu B, its grid %zu "
                     "B): %s\n",
                     count, dev.gx, dev.gy, p.work, fft.work, grid_bytes,
                     p.work > 0 && area == nullptr ? "too large, unbatched" : "batched");
      if (p.work > 0 && area == nullptr) {
        return_fft(p);
        state = -1;
        return nullptr;
      }
      p.bind(area, stream);
      batched[static_cast<std::size_t>(count)] = p;
      state = 1;
    }
    return state > 0 ? &batched[static_cast<std::size_t>(count)] : nullptr;
  }

  // The inverse transforms of `count` contiguous grids: one batched execution, or one each.
  void inverse_fft_grids(float2 *grids, int count) {
    if (const FftPlan *b = batched_fft(count)) {
      b->execute(grids, CUFFT_INVERSE);
      return;
    }
    for (int c = 0; c < count; ++c) fft.execute(grids + static_cast<std::size_t>(c) * points, CUFFT_INVERSE);
  }

  ~State() {
    // Buffers go back to the pool in this stream's order, then the stream (its work finishes).
    for (auto *b : {&keys, &perm, &offsets}) b->release();
    subproblems.release();
    fixed_grid.release();
    max_abs.release();
    fixed_scale.release();
    gather_dense.release();
    gather_list.release();
    jxs.release();
    rec.release();
    consts.release();
    wts.release();
    for (auto *b : {&grid, &sorted, &samples, &image, &coil_grids, &coil_sorted, &coil_samples, &coil_images})
      b->release();
    fft_work.release();
    if (fft_held) return_fft(fft);
    for (std::size_t c = 0; c < batched.size(); ++c)
      if (batched_state[c] > 0) return_fft(batched[c]);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (stream) cudaStreamDestroy(stream);
  }
};

NufftDevicePlan::NufftDevicePlan(const Trajectory &trajectory, const GriddingSetup &setup)
    : NufftDevicePlan(setup, trajectory.size()) {
  State &s = *s_;
  const std::size_t m = trajectory.size();
  if (s.setup.dims == 3) {
    DeviceBuffer<KPoint> traj;
    traj.allocate(m, s.pool, s.stream);
    upload_staged(traj.get(), trajectory.data(), m * sizeof(KPoint), s.stream);
    set_points(traj.get(), {1.0f, 1.0f, 1.0f}); // outside: s.within false, said by the caller
    return;
  }
  // 2D: (kx, ky) only, packed as they are staged: the upload, which bounds a 2D plan from host
  // points, moves 8 bytes a sample instead of 12 (kz is not read in 2D).
  DeviceBuffer<float2> traj;
  traj.allocate(m, s.pool, s.stream);
  const auto pack = [](char *pinned, std::size_t first, std::size_t n, const void *points) {
    const KPoint *k = static_cast<const KPoint *>(points) + first / sizeof(float2);
    auto *out = reinterpret_cast<float2 *>(pinned);
    for (std::size_t i = 0; i < n / sizeof(float2); ++i) out[i] = make_float2(k[i].kx, k[i].ky);
  };
  upload_staged_fill(traj.get(), m * sizeof(float2), pack, trajectory.data(), s.stream);
  set_points(traj.get(), {1.0f, 1.0f, 1.0f});
}

NufftDevicePlan::NufftDevicePlan(const KPoint *d_points, std::size_t m, const GriddingSetup &setup,
                                 std::array<float, 3> scale)
    : NufftDevicePlan(setup, m) {
  set_points(d_points, scale);
  if (!s_->within) throw_outside(setup);
}

NufftDevicePlan::NufftDevicePlan(const GriddingSetup &setup, std::size_t samples) : s_(std::make_unique<State>()) {
  State &s = *s_;
  s.t_start = Clock::now();
  s.setup = setup;
  const auto &g = setup.g;
  s.points = g[0] * g[1] * g[2];
  s.voxels = setup.n[0] * setup.n[1] * setup.n[2];
  if (samples == 0) mri::detail::invalid_argument("trajectory.size()", 0, "needs at least one sample");
  if (s.points >= (std::int64_t{1} << 31) || samples >= (std::size_t{1} << 31))
    throw Unsupported("NufftOperator on cuda: oversampled grid or trajectory above 2^31 elements");
  if (setup.width > kMaxDeviceWidth)
    throw Unsupported("NufftOperator on cuda: kernel width " + std::to_string(setup.width) + " above " +
                      std::to_string(kMaxDeviceWidth) + " (tolerance below what float32 reaches)");
  if (setup.coef.size() > static_cast<std::size_t>(kMaxCoef))
    throw Unsupported("NufftOperator on cuda: kernel polynomial of degree " + std::to_string(setup.degree) +
                      " above 24");
  s.k = setup.dims == 3 ? pick<3>(setup.width) : pick<2>(setup.width);
  s.scatter = resolved_scatter(ScatterMethod::Auto, setup.dims, static_cast<std::int64_t>(samples), s.points);
  s.m = static_cast<int>(samples);
  s.dev = {static_cast<int>(g[0]), static_cast<int>(g[1]), static_cast<int>(g[2]),
           static_cast<int>(setup.n[0]), static_cast<int>(setup.n[1]), static_cast<int>(setup.n[2]), setup.degree};
  s.tiles_x = blocks(g[0], s.k.tx);
  s.tiles_y = blocks(g[1], s.k.ty);
  s.tiles = s.tiles_x * s.tiles_y * blocks(g[2], s.k.tz);
  MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  MRI_CUDA_CHECK(cudaEventCreate(&s.e0));
  MRI_CUDA_CHECK(cudaEventCreate(&s.e1));
  s.pool = plan_pool();
  s.t_stream = ms_since(s.t_start);

  // cuFFT plan (cached per shape) with its work area from the pool.
  s.fft = acquire_fft(setup.dims, s.dev.gx, s.dev.gy, s.dev.gz, s.dev.nz);
  s.fft_held = true;
  s.fft_work.allocate(s.fft.work, s.pool, s.stream);
  s.fft.bind(s.fft_work.get(), s.stream);
  s.t_fft = ms_since(s.t_start);

  // Buffers, then the constants in one copy.
  const int m = s.m;
  const auto M = static_cast<std::size_t>(m);
  const auto points = static_cast<std::size_t>(s.points);
  s.keys.allocate(M, s.pool, s.stream);
  s.perm.allocate(M, s.pool, s.stream);
  s.rec.allocate(M, s.pool, s.stream);
  s.jxs.allocate(M, s.pool, s.stream);
  s.wts.allocate(M * static_cast<std::size_t>(setup.dims * setup.width), s.pool, s.stream);
  s.offsets.allocate(points + 1, s.pool, s.stream);
  s.subproblems.allocate(s.subproblem_bound(), s.pool, s.stream);
  s.grid.allocate(points, s.pool, s.stream);
  s.sorted.allocate(M, s.pool, s.stream);
  s.samples.allocate(M, s.pool, s.stream);
  s.image.allocate(static_cast<std::size_t>(s.voxels), s.pool, s.stream);
  std::vector<float> consts(static_cast<std::size_t>(kMaxCoef), 0.f);
  std::copy(setup.coef.begin(), setup.coef.end(), consts.begin());
  for (int a = 0; a < 3; ++a) {
    const auto &d = setup.deapod[static_cast<std::size_t>(a)];
    if (d.size() != static_cast<std::size_t>(setup.n[static_cast<std::size_t>(a)]))
      throw Unsupported("NufftOperator on cuda: deapodization of axis " + std::to_string(a) + " has " +
                        std::to_string(d.size()) + " values for " + std::to_string(setup.n[static_cast<std::size_t>(a)]) +
                        " voxels");
    consts.insert(consts.end(), d.begin(), d.end());
  }
  s.consts.allocate(consts.size(), s.pool, s.stream);
  MRI_CUDA_CHECK(cudaMemcpyAsync(s.consts.get(), consts.data(), consts.size() * sizeof(float), cudaMemcpyHostToDevice,
                                 s.stream));
  s.t_alloc = ms_since(s.t_start);
}

// Per-sample setup from device points (k times `scale` per axis), the range check (waited
// for: s.within), then the sort, records and offsets, enqueued and not waited for.
template <class Point> void NufftDevicePlan::set_points(const Point *d_points, std::array<float, 3> scale) {
  State &s = *s_;
  const GriddingSetup &setup = s.setup;
  const int m = s.m;
  const auto M = static_cast<std::size_t>(m);
  const auto points = static_cast<std::size_t>(s.points);
  const double t_upload = ms_since(s.t_start);
  MRI_CUDA_CHECK(cudaEventRecord(s.e0, s.stream));
  DeviceBuffer<unsigned> keys_in, idx_in, outside;
  DeviceBuffer<float4> rec_in;
  keys_in.allocate(M, s.pool, s.stream);
  idx_in.allocate(M, s.pool, s.stream);
  rec_in.allocate(M, s.pool, s.stream);
  outside.allocate(1, s.pool, s.stream);
  MRI_CUDA_CHECK(cudaMemsetAsync(outside.get(), 0, sizeof(unsigned), s.stream));
  setup_points_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(d_points, make_float3(scale[0], scale[1], scale[2]), m,
                                                             setup.width, setup.dims, s.dev, keys_in.get(),
                                                             idx_in.get(), rec_in.get(), outside.get());
  check_launch("setup_points_kernel");
  unsigned outside_host = 0; // pageable destination: the copy returns once complete
  MRI_CUDA_CHECK(cudaMemcpyAsync(&outside_host, outside.get(), sizeof(unsigned), cudaMemcpyDeviceToHost, s.stream));
  outside.release();
  s.within = outside_host == 0;
  if (!s.within) return; // the constructor names the problem
  const double t_check = ms_since(s.t_start);
  cudaEvent_t marks[4] = {};
  const bool trace = trace_enabled();
  if (trace)
    for (cudaEvent_t &e : marks) {
      MRI_CUDA_CHECK(cudaEventCreate(&e));
    }
  if (trace) MRI_CUDA_CHECK(cudaEventRecord(marks[0], s.stream));

  // Stable sort by cell, records and weights in cell order, per-cell offsets: enqueued, not waited.
  int bits = 1;
  while ((std::int64_t{1} << bits) < s.points) ++bits;
  std::size_t sort_bytes = 0, scan_bytes = 0;
  MRI_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys_in.get(), s.keys.get(), idx_in.get(),
                                                 s.perm.get(), m, 0, bits, s.stream));
  DeviceBuffer<unsigned> counts;
  counts.allocate(points + 1, s.pool, s.stream);
  MRI_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts.get(), s.offsets.get(),
                                               static_cast<int>(s.points) + 1, s.stream));
  DeviceBuffer<unsigned char> temp;
  temp.allocate(std::max(sort_bytes, scan_bytes), s.pool, s.stream);
  MRI_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.get(), sort_bytes, keys_in.get(), s.keys.get(), idx_in.get(),
                                                 s.perm.get(), m, 0, bits, s.stream));
  if (trace) MRI_CUDA_CHECK(cudaEventRecord(marks[1], s.stream));
  keys_in.release();
  idx_in.release();
  s.k.prep<<<blocks(m, 256), 256, 0, s.stream>>>(rec_in.get(), s.perm.get(), m, s.dev, s.coef(), s.rec.get(),
                                                 s.jxs.get(), s.wts.get());
  check_launch("prep_kernel");
  rec_in.release();
  if (trace) MRI_CUDA_CHECK(cudaEventRecord(marks[2], s.stream));
  MRI_CUDA_CHECK(cudaMemsetAsync(counts.get(), 0, (points + 1) * sizeof(unsigned), s.stream));
  count_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(s.keys.get(), m, counts.get());
  check_launch("count_kernel");
  MRI_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp.get(), scan_bytes, counts.get(), s.offsets.get(),
                                               static_cast<int>(s.points) + 1, s.stream));
  s.plan_subproblems(counts.get(), temp.get(), scan_bytes);
  MRI_CUDA_CHECK(cudaEventRecord(s.e1, s.stream));
  if (trace) {
    const double t_end = ms_since(s.t_start);
    MRI_CUDA_CHECK(cudaEventSynchronize(s.e1));
    float dev[4] = {};
    MRI_CUDA_CHECK(cudaEventElapsedTime(&dev[0], s.e0, marks[0]));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&dev[1], marks[0], marks[1]));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&dev[2], marks[1], marks[2]));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&dev[3], marks[2], s.e1));
    for (cudaEvent_t e : marks) cudaEventDestroy(e);
    std::fprintf(stderr,
                 "[gridding plan] %dD M=%d G=%dx%dx%d host: stream %.3f, fft %.3f, alloc+consts %.3f, upload "
                 "%.3f, check %.3f, enqueue %.3f ms; device: setup %.3f, sort %.3f, prep %.3f, offsets %.3f ms\n",
                 setup.dims, m, s.dev.gx, s.dev.gy, s.dev.gz, s.t_stream, s.t_fft - s.t_stream, s.t_alloc - s.t_fft,
                 t_upload - s.t_alloc, t_check - t_upload, t_end - t_check, dev[0], dev[1], dev[2], dev[3]);
  }
}

DevicePoints::DevicePoints(std::size_t size) : size_(size) {
  MRI_CUDA_CHECK(cudaGetDevice(&device_));
  data_ = static_cast<KPoint *>(device_malloc(std::max<std::size_t>(size_, 1) * sizeof(KPoint)));
}

namespace {
// Runs fill(stream) on a stream of its own and waits for it; the stream is destroyed either way.
template <class Fill> void on_own_stream(Fill &&fill) {
  cudaStream_t stream = nullptr;
  MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  try {
    fill(stream);
    MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  MRI_CUDA_CHECK(cudaStreamDestroy(stream));
}
} // namespace

// Delegating: should the upload throw, the destructor frees the points (the target constructor
// has completed).
DevicePoints::DevicePoints(const Trajectory &trajectory) : DevicePoints(trajectory.size()) {
  on_own_stream([&](cudaStream_t s) { upload_staged(data_, trajectory.data(), size_ * sizeof(KPoint), s); });
}

std::unique_ptr<DevicePoints> DevicePoints::copy_here(const DevicePoints &from) {
  std::unique_ptr<DevicePoints> p(new DevicePoints(from.size_));
  on_own_stream([&](cudaStream_t s) {
    MRI_CUDA_CHECK(cudaMemcpyPeerAsync(p->data_, p->device_, from.data_, from.device_, from.size_ * sizeof(KPoint), s));
  });
  return p;
}

DevicePoints::~DevicePoints() { device_free(data_); }

NufftDevicePlan::~NufftDevicePlan() {
  if (s_ && s_->stream) cudaStreamSynchronize(s_->stream);
}

bool NufftDevicePlan::samples_within_grid() const { return s_->within; }

void NufftDevicePlan::set_scatter_method(ScatterMethod method) {
  s_->scatter = resolved_scatter(method, s_->setup.dims, s_->m, s_->points);
}

ScatterMethod NufftDevicePlan::scatter_method() const { return s_->scatter; }

unsigned NufftDevicePlan::dense_gather_items() {
  s_->classify_gather();
  return s_->dense_items;
}

void NufftDevicePlan::adjoint_device(const cfloat *d_samples, cfloat *d_image, Gridding gridding) {
  State &s = *s_;
  const int m = s.m;
  permute_kernel<<<blocks(m, 256), 256, 0, s.stream>>>(reinterpret_cast<const float2 *>(d_samples), s.perm.get(),
                                                        m, s.sorted.get());
  check_launch("permute_kernel");
  if (gathers(gridding)) {
    s.gather(s.sorted.get(), s.grid.get(), 1);
  } else if (gridding == Gridding::Scatter && s.scatter == ScatterMethod::Global) {
    MRI_CUDA_CHECK(cudaMemsetAsync(s.grid.get(), 0, static_cast<std::size_t>(s.points) * sizeof(float2), s.stream));
    s.k.scatter<<<blocks(m, 256), 256, 0, s.stream>>>(s.rec.get(), s.keys.get(), s.sorted.get(), m, s.dev, s.coef(),
                                                      s.grid.get());
    check_launch("scatter_kernel");
  } else {
    s.shared_scatter(s.sorted.get(), s.grid.get(), gridding == Gridding::ScatterFixed);
  }
  s.fft.execute(s.grid.get(), CUFFT_INVERSE);
  crop_kernel<<<blocks(s.voxels, 256), 256, 0, s.stream>>>(s.grid.get(), s.dev, s.deapod(),
                                                            reinterpret_cast<float2 *>(d_image));
  check_launch("crop_kernel");
}

void NufftDevicePlan::adjoint_coils_device(const cfloat *d_samples, int coils, cfloat *d_images, Gridding gridding) {
  State &s = *s_;
  const std::size_t m = static_cast<std::size_t>(s.m), n = static_cast<std::size_t>(s.voxels),
                    points = static_cast<std::size_t>(s.points);
  if (!gathers(gridding) || coils == 1) {
    for (int c = 0; c < coils; ++c) adjoint_device(d_samples + c * m, d_images + c * n, gridding);
    return;
  }
  if (s.coil_grids.size() < kCoilBlock * points) s.coil_grids.allocate(kCoilBlock * points, s.pool, s.stream);
  if (s.coil_sorted.size() < kCoilBlock * m) s.coil_sorted.allocate(kCoilBlock * m, s.pool, s.stream);
  // Per chunk of kCoilBlock vectors (the grids the plan holds): one permute launch, the gather,
  // the inverse transforms (batched or one each) and one crop launch, each vector's values as
  // adjoint_device's.
  for (int c0 = 0; c0 < coils; c0 += kCoilBlock) {
    const int count = std::min(kCoilBlock, coils - c0);
    const dim3 chunk_blocks(blocks(s.m, 256), static_cast<unsigned>(count));
    permute_vectors_kernel<<<chunk_blocks, 256, 0, s.stream>>>(reinterpret_cast<const float2 *>(d_samples) + c0 * m,
                                                               s.perm.get(), s.m, s.coil_sorted.get());
    check_launch("permute_vectors_kernel");
    s.gather(s.coil_sorted.get(), s.coil_grids.get(), count);
    s.inverse_fft_grids(s.coil_grids.get(), count);
    const dim3 crop_blocks(blocks(s.voxels, 256), static_cast<unsigned>(count));
    crop_vectors_kernel<<<crop_blocks, 256, 0, s.stream>>>(s.coil_grids.get(), points, s.dev, s.deapod(),
                                                           reinterpret_cast<float2 *>(d_images) + c0 * n);
    check_launch("crop_vectors_kernel");
  }
  // Back to the pool in stream order: a plan kept for the direct normal operator holds no more.
  s.coil_grids.release();
  s.coil_sorted.release();
}

void NufftDevicePlan::set_batched_fft(bool on) { s_->batch_fft = on; }

int NufftDevicePlan::fft_batch(int vectors) {
  const int count = std::clamp(vectors, 1, kCoilBlock);
  return s_->batched_fft(count) ? count : 1;
}

void NufftDevicePlan::forward_device(const cfloat *d_image, cfloat *d_samples) {
  State &s = *s_;
  const dim3 pad_blocks(blocks(s.dev.gx, 256), static_cast<unsigned>(s.dev.gy), static_cast<unsigned>(s.dev.gz));
  pad_grid_kernel<<<pad_blocks, 256, 0, s.stream>>>(reinterpret_cast<const float2 *>(d_image), s.dev, s.deapod(),
                                                    s.grid.get());
  check_launch("pad_grid_kernel");
  s.fft.execute(s.grid.get(), CUFFT_FORWARD);
  s.k.interp<<<blocks(s.m, 256), 256, 0, s.stream>>>(s.rec.get(), s.keys.get(), s.perm.get(), s.m, s.dev, s.coef(),
                                                     s.grid.get(), reinterpret_cast<float2 *>(d_samples));
  check_launch("interp_kernel");
}

void NufftDevicePlan::synchronize() { MRI_CUDA_CHECK(cudaStreamSynchronize(s_->stream)); }
void *NufftDevicePlan::stream() const { return s_->stream; }

void NufftDevicePlan::upload_samples(const cfloat *samples) {
  upload_staged(s_->samples.get(), samples, static_cast<std::size_t>(s_->m) * sizeof(float2), s_->stream);
  synchronize();
}
void NufftDevicePlan::upload_image(const cfloat *image) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(s_->image.get(), image, static_cast<std::size_t>(s_->voxels) * sizeof(float2),
                                 cudaMemcpyHostToDevice, s_->stream));
  synchronize();
}
void NufftDevicePlan::download_image(cfloat *image) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(image, s_->image.get(), static_cast<std::size_t>(s_->voxels) * sizeof(float2),
                                 cudaMemcpyDeviceToHost, s_->stream));
  synchronize();
}
void NufftDevicePlan::download_samples(cfloat *samples) {
  MRI_CUDA_CHECK(cudaMemcpyAsync(samples, s_->samples.get(), static_cast<std::size_t>(s_->m) * sizeof(float2),
                                 cudaMemcpyDeviceToHost, s_->stream));
  synchronize();
}

void NufftDevicePlan::adjoint(const cfloat *samples, cfloat *image, Gridding gridding) {
  upload_samples(samples);
  adjoint_device(reinterpret_cast<const cfloat *>(s_->samples.get()), reinterpret_cast<cfloat *>(s_->image.get()),
                 gridding);
  download_image(image);
}

void NufftDevicePlan::adjoint_coils(const cfloat *samples, int coils, cfloat *images, Gridding gridding) {
  State &s = *s_;
  const auto m = static_cast<std::size_t>(s.m), n = static_cast<std::size_t>(s.voxels);
  const int block = std::min(coils, kCoilBlock);
  // The plan's own buffers from its pool, kept for the next call (as adjoint_coils_device's).
  if (s.coil_samples.size() < block * m) s.coil_samples.allocate(block * m, s.pool, s.stream);
  if (s.coil_images.size() < block * n) s.coil_images.allocate(block * n, s.pool, s.stream);
  for (int c0 = 0; c0 < coils; c0 += block) {
    const int count = std::min(block, coils - c0);
    upload_staged(s.coil_samples.get(), samples + c0 * m, count * m * sizeof(float2), s.stream);
    adjoint_coils_device(reinterpret_cast<const cfloat *>(s.coil_samples.get()), count,
                         reinterpret_cast<cfloat *>(s.coil_images.get()), gridding);
    MRI_CUDA_CHECK(cudaMemcpyAsync(images + c0 * n, s.coil_images.get(), count * n * sizeof(float2),
                                   cudaMemcpyDeviceToHost, s.stream));
    synchronize(); // the buffers are reused by the next block
  }
}

void NufftDevicePlan::forward(const cfloat *image, cfloat *samples) {
  upload_image(image);
  forward_device(reinterpret_cast<const cfloat *>(s_->image.get()), reinterpret_cast<cfloat *>(s_->samples.get()));
  download_samples(samples);
}

void NufftDevicePlan::forward_on_device(const cfloat *image, cfloat *samples) {
  run_on_caller_memory(s_->stream, {{image, "image"}, {samples, "samples"}}, [&] { forward_device(image, samples); });
}

void NufftDevicePlan::adjoint_on_device(const cfloat *samples, cfloat *image, Gridding gridding) {
  run_on_caller_memory(s_->stream, {{samples, "samples"}, {image, "image"}},
                       [&] { adjoint_device(samples, image, gridding); });
}

namespace {
template <class F> double median_event_ms(cudaStream_t stream, cudaEvent_t e0, cudaEvent_t e1, int reps, F &&f) {
  f(); // warm-up
  MRI_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> t;
  for (int r = 0; r < std::max(1, reps); ++r) {
    MRI_CUDA_CHECK(cudaEventRecord(e0, stream));
    f();
    MRI_CUDA_CHECK(cudaEventRecord(e1, stream));
    MRI_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    MRI_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
} // namespace

double NufftDevicePlan::time_adjoint_ms(Gridding gridding, int repetitions) {
  State &s = *s_;
  return median_event_ms(s.stream, s.e0, s.e1, repetitions, [&] {
    adjoint_device(reinterpret_cast<const cfloat *>(s.samples.get()), reinterpret_cast<cfloat *>(s.image.get()),
                   gridding);
  });
}

double NufftDevicePlan::time_adjoint_coils_ms(Gridding gridding, int repetitions) {
  State &s = *s_;
  const auto m = static_cast<std::size_t>(s.m), n = static_cast<std::size_t>(s.voxels);
  if (s.coil_samples.size() < kCoilBlock * m) s.coil_samples.allocate(kCoilBlock * m, s.pool, s.stream);
  if (s.coil_images.size() < kCoilBlock * n) s.coil_images.allocate(kCoilBlock * n, s.pool, s.stream);
  for (int c = 0; c < kCoilBlock; ++c)
    MRI_CUDA_CHECK(cudaMemcpyAsync(s.coil_samples.get() + c * m, s.samples.get(), m * sizeof(float2),
                                   cudaMemcpyDeviceToDevice, s.stream));
  return median_event_ms(s.stream, s.e0, s.e1, repetitions, [&] {
    adjoint_coils_device(reinterpret_cast<const cfloat *>(s.coil_samples.get()), kCoilBlock,
                         reinterpret_cast<cfloat *>(s.coil_images.get()), gridding);
  });
}

double NufftDevicePlan::time_forward_ms(int repetitions) {
  State &s = *s_;
  return median_event_ms(s.stream, s.e0, s.e1, repetitions, [&] {
    forward_device(reinterpret_cast<const cfloat *>(s.image.get()), reinterpret_cast<cfloat *>(s.samples.get()));
  });
}

double NufftDevicePlan::setup_ms() const {
  if (s_->setup_ms < 0) {
    MRI_CUDA_CHECK(cudaEventSynchronize(s_->e1));
    MRI_CUDA_CHECK(cudaEventElapsedTime(&s_->setup_ms, s_->e0, s_->e1));
  }
  return s_->setup_ms;
}

} // namespace mri::cuda::detail
