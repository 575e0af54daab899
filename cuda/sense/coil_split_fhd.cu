// SENSE's F^H D by the NUFFT split by coils over several devices (coil_split_fhd.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <utility>

#include "coil_split_fhd.hpp"
#include "cuda_check.cuh"
#include "current_device.cuh"
#include "device_buffer.cuh"
#include "host_clock.hpp"
#include "mri/error.hpp"
#include "devices/per_device.cuh"
#include "staged_upload.cuh"

namespace mri::cuda::detail {
namespace {
cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }
} // namespace

void wait_for(const DeviceImage &image) { MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(image.stream()))); }

// One lane: its coils' maps (lane 0: the first device's, read in place), its NUFFT plan, and off
// the first device its partial sum on the lane's stream; all on the lane's device.
struct CoilSplitFhd::Part {
  CoilLanes::Lane lane;
  std::unique_ptr<DeviceCoils> own_maps;  // lanes other than 0: a copy of the block's maps
  std::unique_ptr<DevicePoints> points;   // lanes other than 0: the trajectory, copied over
  CoilRange coils;                        // the block, in own_maps or the first device's maps
  std::shared_ptr<NufftDevicePlan> plan;  // lane 0: reconstruct's
  DeviceImage partial;                    // lanes other than 0 (lane 0 sums into the rhs)

  Part() = default;
  Part(const Part &) = delete;
  Part &operator=(const Part &) = delete;
  ~Part() { // freed with its device current (the plan's stream, pool buffers and cuFFT plan are its)
    const CurrentDevice on(lane.device);
    plan.reset();
    points.reset();
    own_maps.reset();
    partial = DeviceImage();
  }
};

namespace {

// Lane `lane`'s part. Off the first device: its maps and points copied device to device on its
// stream and its own plan (its setup on the plan's stream); the caller waits for the copies.
std::unique_ptr<CoilSplitFhd::Part> make_part(const CoilLanes::Lane &lane, const DeviceCoils &maps,
                                              const std::shared_ptr<NufftDevicePlan> &first, const DevicePoints &points,
                                              const Grid &grid, const NufftOptions &options) {
  auto p = std::make_unique<CoilSplitFhd::Part>();
  p->lane = lane;
  if (lane.entry == 0) {
    p->coils = {&maps, lane.block};
    p->plan = first;
    return p;
  }
  const CurrentDevice on(lane.device);
  p->own_maps = std::make_unique<DeviceCoils>(maps, lane.block.first, lane.block.count, Regularizer::None, 0.0,
                                              lane.stream);
  p->coils = {p->own_maps.get(), {0, lane.block.count}};
  p->points = DevicePoints::copy_here(points);
  p->plan = make_device_nufft_plan(p->points->data(), p->points->size(), grid, options, {1.0f, 1.0f, 1.0f});
  p->partial = DeviceImage(grid, lane.stream);
  return p;
}

} // namespace

CoilSplitFhd::CoilSplitFhd(std::shared_ptr<const CoilLanes> lanes, const DeviceCoils &coils,
                           std::shared_ptr<NufftDevicePlan> first, const DevicePoints &points, const Grid &grid,
                           const NufftOptions &options)
    : lanes_(std::move(lanes)), samples_(points.size()) {
  if (!first) mri::detail::invalid_argument("first", "null", "must be the first device's NUFFT plan");
  if (coils.grid() != grid)
    mri::detail::invalid_argument("coils.grid().voxels()", coils.grid().voxels(), "must be the grid's");
  if (lanes_->grid() != grid)
    mri::detail::invalid_argument("lanes->grid().voxels()", lanes_->grid().voxels(), "must be the grid's");
  if (lanes_->coils() != coils.count())
    mri::detail::invalid_argument("lanes->coils()", lanes_->coils(), "must be coils.count(), " + std::to_string(coils.count()));
  MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(lanes_->lanes().front().stream))); // the maps' upload
  for (const CoilLanes::Lane &lane : lanes_->lanes())
    parts_.push_back(make_part(lane, coils, first, points, grid, options));
  for (const auto &p : parts_) { // the maps' copies done before apply's threads read them
    const CurrentDevice on(p->lane.device);
    MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(p->lane.stream)));
  }
}

CoilSplitFhd::~CoilSplitFhd() = default;

void CoilSplitFhd::apply(const cfloat *samples, Gridding gridding, DeviceImage &rhs, std::span<double> seconds) const {
  if (seconds.size() != lanes_->entries())
    mri::detail::invalid_argument("seconds.size()", seconds.size(),
                                  "must be one per entry of the devices, " + std::to_string(lanes_->entries()));
  if (rhs.grid() != lanes_->grid() || rhs.stream() != lanes_->lanes().front().stream)
    mri::detail::invalid_argument("rhs", "an image", "must be of the lanes' grid, on lane 0's stream");
  std::vector<int> device_of;
  for (const auto &p : parts_) device_of.push_back(p->lane.device);
  per_device(device_of, device_of.front(), [&](std::size_t i) {
    const auto t0 = Clock::now();
    Part &p = *parts_[i];
    DeviceImage &out = i == 0 ? rhs : p.partial;
    const int block = std::min(NufftDevicePlan::kCoilBlock, p.lane.block.count); // coils per gridding pass
    DeviceBuffer<cfloat> staged(static_cast<std::size_t>(block) * samples_);
    DeviceBuffer<cfloat> images(static_cast<std::size_t>(block) * out.size());
    const cfloat *mine = samples + static_cast<std::size_t>(p.lane.block.first) * samples_;
    const cudaStream_t plan_stream = as_stream(p.plan->stream());
    combine_coil_adjoints(p.coils, block, images.get(), out, [&](int c0, int count, cfloat *to) {
      const std::size_t m = static_cast<std::size_t>(count) * samples_;
      upload_staged(staged.get(), mine + static_cast<std::size_t>(c0) * samples_, m * sizeof(cfloat), plan_stream);
      p.plan->adjoint_coils_device(staged.get(), count, to, gridding);
      p.plan->synchronize(); // `staged` is written again next
    });
    seconds[static_cast<std::size_t>(p.lane.entry)] += seconds_since(t0);
  });
  std::vector<const DeviceImage *> partials; // entry 0's part is the rhs itself
  for (const auto &p : parts_) partials.push_back(p->lane.entry == 0 ? nullptr : &p->partial);
  lanes_->exchange().reduce(rhs, partials);
  wait_for(rhs);
}

std::string CoilSplitFhd::describe() const { return lanes_->describe(); }

} // namespace mri::cuda::detail
