// SENSE's normal operator split by coils over several devices (coil_split.hpp).
#include <cuda_runtime.h>

#include <string>
#include <utility>

#include "coil_split.hpp"
#include "cuda_check.cuh"
#include "current_device.cuh"
#include "mri/linear_operator.hpp"
#include "mri_backend/sense.hpp"
#include "sense_cuda.hpp"
#include "sense_toeplitz.hpp"

namespace mri::cuda::detail {
namespace {

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }

// One entry's coil sum, whichever SENSE operator computes it.
class CoilSum {
public:
  virtual ~CoilSum() = default;
  virtual void apply(const DeviceImage &x, DeviceImage &out) = 0;
};

// The operator one device would use for these coils (cuda/recon/recon_cuda.cu's with_normal): the
// coil-batched one where it applies, else the maps around the one-coil Toeplitz operator.
std::unique_ptr<CoilSum> coil_sum(const DeviceCoils &coils, const QOperator &toeplitz, const DeviceImage &like) {
  if (const int batch = sense_coil_batch(coils.grid(), coils.count()); batch > 0) {
    struct Batched final : CoilSum {
      SenseToeplitz op;
      Batched(const DeviceCoils &c, const QOperator &t, int b) : op(c, t, b) {}
      void apply(const DeviceImage &x, DeviceImage &out) override { op.apply(x, out); }
    };
    return std::make_unique<Batched>(coils, toeplitz, batch);
  }
  using Inner = decltype(mri::normal_equations(mri::ref(toeplitz)));
  struct PerCoil final : CoilSum {
    mri::detail::SenseNormal<DeviceImage, DeviceCoils, Inner> op;
    PerCoil(const DeviceCoils &c, const QOperator &t, const DeviceImage &like)
        : op(c, mri::normal_equations(mri::ref(t)), like) {}
    void apply(const DeviceImage &x, DeviceImage &out) override { op(x, out); }
  };
  return std::make_unique<PerCoil>(coils, toeplitz, like);
}

cudaEvent_t timing_event() {
  cudaEvent_t e = nullptr;
  MRI_CUDA_CHECK(cudaEventCreate(&e));
  return e;
}

double elapsed_seconds(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  MRI_CUDA_CHECK(cudaEventSynchronize(to));
  MRI_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return 1e-3 * ms;
}

} // namespace

std::vector<CoilBlock> coil_blocks(int coils, std::size_t entries) {
  std::vector<CoilBlock> blocks;
  const int n = static_cast<int>(entries);
  for (int i = 0, first = 0; i < n; ++i) {
    const int count = coils / n + (i < coils % n ? 1 : 0);
    blocks.push_back({first, count});
    first += count;
  }
  return blocks;
}

namespace {
// "0-3" or "4"
std::string coil_range(CoilBlock b) {
  return std::to_string(b.first) + (b.count > 1 ? "-" + std::to_string(b.first + b.count - 1) : std::string());
}
} // namespace

CoilLanes::CoilLanes(int coils, const std::vector<int> &devices, StreamHandle first_stream, const Grid &grid,
                     ExchangeTransport transport)
    : entries_(devices.size()), coils_(coils), grid_(grid) {
  if (devices.empty()) mri::detail::invalid_argument("devices.size()", 0, "must be at least 1");
  if (coils < 1) mri::detail::invalid_argument("coils", coils, "must be at least 1");
  const std::vector<CoilBlock> blocks = coil_blocks(coils, devices.size());
  std::vector<ExchangeSide> sides;
  try {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (blocks[i].count == 0) continue;
      Lane lane{static_cast<int>(i), devices[i], blocks[i], first_stream};
      if (i > 0) {
        const CurrentDevice on(lane.device);
        cudaStream_t s = nullptr;
        MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        lane.stream = s;
      }
      lanes_.push_back(lane);
      sides.push_back({lane.device, lane.stream});
    }
    exchange_ = make_coil_exchange(sides, grid, transport);
  } catch (...) {
    release(); // the streams made so far (a constructor that throws runs no destructor)
    throw;
  }
}

CoilLanes::~CoilLanes() { release(); }

void CoilLanes::release() noexcept {
  exchange_.reset(); // its events and communicators, before the streams they use
  for (std::size_t i = 1; i < lanes_.size(); ++i) {
    const CurrentDevice on(lanes_[i].device);
    cudaStreamDestroy(as_stream(lanes_[i].stream));
  }
  lanes_.clear();
}

std::string CoilLanes::describe() const {
  std::string s = "coils ";
  for (const Lane &l : lanes_)
    s += (l.entry == 0 ? "" : ", ") + coil_range(l.block) + " on device " + std::to_string(l.device);
  if (lanes_.size() < entries_) s += ", none on the other entries (fewer coils than devices)";
  return s + " (exchange: " + exchange_->name() + ")";
}

// One entry with coils (a lane): on the first device it works on the CG's stream and vectors;
// elsewhere on its lane's stream, with its own copy of x, its partial sum and its own Toeplitz
// operator.
struct Part {
  int entry = 0, device = 0;
  StreamHandle stream = nullptr;
  std::unique_ptr<DeviceCoils> coils;
  std::unique_ptr<QOperator> toeplitz; // null for entry 0: the CG's
  std::unique_ptr<CoilSum> sum;
  DeviceImage x, partial; // empty for entry 0
  cudaEvent_t begin = nullptr, end = nullptr;

  Part() = default;
  Part(const Part &) = delete;
  Part &operator=(const Part &) = delete;
  ~Part() { // everything freed with its device current
    const CurrentDevice on(device);
    sum.reset();
    toeplitz.reset();
    coils.reset();
    x = DeviceImage();
    partial = DeviceImage();
    if (begin) cudaEventDestroy(begin);
    if (end) cudaEventDestroy(end);
  }
};

struct CoilSplitNormal::Impl {
  std::shared_ptr<const CoilLanes> lanes; // first: outlives the parts, which use its streams
  Grid grid;
  StreamHandle stream = nullptr; // the CG's, on the first device
  std::vector<std::unique_ptr<Part>> parts;
  cudaEvent_t before_broadcast = nullptr, after_broadcast = nullptr, after_reduce = nullptr;
  Times times;
  bool pending = false; // an application's events not yet read

  ~Impl() {
    parts.clear();
    for (cudaEvent_t e : {before_broadcast, after_broadcast, after_reduce})
      if (e) cudaEventDestroy(e);
  }

  CoilExchange &exchange() const { return lanes->exchange(); }

  // The lane's part: its coils' maps, and off the first device's stream its own vectors and
  // Toeplitz operator, all copied device to device from the first device's.
  std::unique_ptr<Part> make_part(const DeviceCoils &all, const QOperator &first, const CoilLanes::Lane &lane) {
    auto p = std::make_unique<Part>();
    p->entry = lane.entry;
    p->device = lane.device;
    p->stream = lane.stream;
    const CoilBlock block = lane.block;
    const CurrentDevice on(lane.device);
    p->begin = timing_event();
    p->end = timing_event();
    if (lane.entry == 0) { // the regulariser once, in this entry's sum
      p->coils =
          std::make_unique<DeviceCoils>(all, block.first, block.count, all.regularizer(), all.lambda(), lane.stream);
      p->sum = coil_sum(*p->coils, first, first.domain_vector());
      return p;
    }
    p->coils = std::make_unique<DeviceCoils>(all, block.first, block.count, Regularizer::None, 0.0, lane.stream);
    p->toeplitz = std::make_unique<QOperator>(first, lane.stream);
    p->x = DeviceImage(grid, lane.stream);
    p->partial = DeviceImage(grid, lane.stream);
    p->sum = coil_sum(*p->coils, *p->toeplitz, p->x);
    return p;
  }

  // The last application's events, into times (they have completed: the CG read its result).
  void collect() {
    if (!pending) return;
    pending = false;
    for (const auto &p : parts) {
      const CurrentDevice on(p->device);
      times.device_seconds[static_cast<std::size_t>(p->entry)] += elapsed_seconds(p->begin, p->end);
    }
    times.exchange_seconds +=
        elapsed_seconds(before_broadcast, after_broadcast) + elapsed_seconds(parts.front()->end, after_reduce);
    ++times.applications;
  }
};

namespace {
void check_split(const DeviceCoils &coils, const QOperator &toeplitz, std::size_t entries) {
  if (entries < 2) mri::detail::invalid_argument("devices.size()", entries, "must be at least 2");
  if (coils.grid() != toeplitz.grid())
    mri::detail::invalid_argument("coils.grid().voxels()", coils.grid().voxels(), "must be the Toeplitz operator's grid");
}
} // namespace

CoilSplitNormal::CoilSplitNormal(const DeviceCoils &coils, const QOperator &toeplitz,
                                 const std::vector<int> &devices, ExchangeTransport transport)
    : CoilSplitNormal(
          [&] {
            check_split(coils, toeplitz, devices.size()); // before any stream or communicator is made
            return std::make_shared<const CoilLanes>(coils.count(), devices, toeplitz.stream(), toeplitz.grid(),
                                                     transport);
          }(),
          coils, toeplitz) {}

CoilSplitNormal::CoilSplitNormal(std::shared_ptr<const CoilLanes> lanes, const DeviceCoils &coils,
                                 const QOperator &toeplitz)
    : impl_(std::make_unique<Impl>()) {
  check_split(coils, toeplitz, lanes->entries());
  if (lanes->lanes().front().stream != toeplitz.stream())
    mri::detail::invalid_argument("lanes", "lane 0's stream", "must be the Toeplitz operator's (the CG's)");
  if (lanes->coils() != coils.count())
    mri::detail::invalid_argument("lanes->coils()", lanes->coils(), "must be coils.count(), " + std::to_string(coils.count()));
  if (lanes->grid() != toeplitz.grid())
    mri::detail::invalid_argument("lanes->grid().voxels()", lanes->grid().voxels(), "must be the Toeplitz operator's grid");
  Impl &im = *impl_;
  im.lanes = std::move(lanes);
  im.grid = toeplitz.grid();
  im.stream = toeplitz.stream();
  im.times.device_seconds.assign(im.lanes->entries(), 0.0);
  for (cudaEvent_t *e : {&im.before_broadcast, &im.after_broadcast, &im.after_reduce}) *e = timing_event();
  MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(im.stream))); // the maps' upload, before other streams copy them
  for (const CoilLanes::Lane &lane : im.lanes->lanes()) im.parts.push_back(im.make_part(coils, toeplitz, lane));
  for (const auto &p : im.parts) MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(p->stream))); // copies done
}

CoilSplitNormal::~CoilSplitNormal() = default;
CoilSplitNormal::CoilSplitNormal(CoilSplitNormal &&) noexcept = default;
CoilSplitNormal &CoilSplitNormal::operator=(CoilSplitNormal &&) noexcept = default;

void CoilSplitNormal::apply(const DeviceImage &x, DeviceImage &out) const {
  Impl &im = *impl_;
  im.collect();
  std::vector<DeviceImage *> copies;
  std::vector<const DeviceImage *> partials;
  for (const auto &p : im.parts) {
    copies.push_back(&p->x);
    partials.push_back(&p->partial);
  }
  const cudaStream_t first = as_stream(im.stream);
  MRI_CUDA_CHECK(cudaEventRecord(im.before_broadcast, first));
  im.exchange().broadcast(x, copies);
  MRI_CUDA_CHECK(cudaEventRecord(im.after_broadcast, first));
  for (const auto &p : im.parts) { // enqueued on every device before any waits: they run at once
    const CurrentDevice on(p->device);
    MRI_CUDA_CHECK(cudaEventRecord(p->begin, as_stream(p->stream)));
    p->sum->apply(p->entry == 0 ? x : p->x, p->entry == 0 ? out : p->partial);
    MRI_CUDA_CHECK(cudaEventRecord(p->end, as_stream(p->stream)));
  }
  im.exchange().reduce(out, partials);
  MRI_CUDA_CHECK(cudaEventRecord(im.after_reduce, first));
  im.pending = true;
}

DeviceImage CoilSplitNormal::domain_vector() const { return DeviceImage(impl_->grid, impl_->stream); }

std::string CoilSplitNormal::describe() const { return impl_->lanes->describe(); }

CoilSplitNormal::Times CoilSplitNormal::times() const {
  impl_->collect();
  return impl_->times;
}

} // namespace mri::cuda::detail
