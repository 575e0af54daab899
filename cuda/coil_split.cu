// SENSE's normal operator split by coils over several devices (coil_split.hpp).
#include <cuda_runtime.h>

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

// The operator one device would use for these coils (cuda/recon_cuda.cu's with_normal): the
// coil-batched one where it applies, else the maps around the one-coil Toeplitz operator.
std::unique_ptr<CoilSum> coil_sum(const DeviceCoils &coils, const ToeplitzOperator &toeplitz, const DeviceImage &like) {
  if (const int batch = sense_coil_batch(coils.grid(), coils.count()); batch > 0) {
    struct Batched final : CoilSum {
      SenseToeplitz op;
      Batched(const DeviceCoils &c, const ToeplitzOperator &t, int b) : op(c, t, b) {}
      void apply(const DeviceImage &x, DeviceImage &out) override { op.apply(x, out); }
    };
    return std::make_unique<Batched>(coils, toeplitz, batch);
  }
  using Inner = decltype(mri::normal_equations(mri::ref(toeplitz)));
  struct PerCoil final : CoilSum {
    mri::detail::SenseNormal<DeviceImage, DeviceCoils, Inner> op;
    PerCoil(const DeviceCoils &c, const ToeplitzOperator &t, const DeviceImage &like)
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

// One entry with coils: on the first device it works on the CG's stream and vectors; elsewhere
// on its own stream, with its own copy of x, its partial sum and its own Toeplitz operator.
struct Part {
  int entry = 0, device = 0;
  CoilBlock block;
  StreamHandle stream = nullptr;
  bool owns_stream = false;
  std::unique_ptr<DeviceCoils> coils;
  std::unique_ptr<ToeplitzOperator> toeplitz; // null for entry 0: the CG's
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
    if (owns_stream) cudaStreamDestroy(as_stream(stream));
  }
};

struct CoilSplitNormal::Impl {
  Grid grid;
  StreamHandle stream = nullptr; // the CG's, on the first device
  std::vector<std::unique_ptr<Part>> parts;
  std::unique_ptr<CoilExchange> exchange;
  cudaEvent_t before_broadcast = nullptr, after_broadcast = nullptr, after_reduce = nullptr;
  Times times;
  bool pending = false; // an application's events not yet read

  ~Impl() {
    exchange.reset();
    parts.clear();
    for (cudaEvent_t e : {before_broadcast, after_broadcast, after_reduce})
      if (e) cudaEventDestroy(e);
  }

  // Entry `entry`'s part: its coils' maps, and off the first device's stream its own stream,
  // vectors and Toeplitz operator, all copied device to device from the first device's.
  std::unique_ptr<Part> make_part(const DeviceCoils &all, const ToeplitzOperator &first, int entry, int device,
                                  CoilBlock block) {
    auto p = std::make_unique<Part>();
    p->entry = entry;
    p->device = device;
    p->block = block;
    const CurrentDevice on(device);
    p->begin = timing_event();
    p->end = timing_event();
    if (entry == 0) { // the regulariser once, in this entry's sum
      p->stream = stream;
      p->coils = std::make_unique<DeviceCoils>(all, block.first, block.count, all.regularizer(), all.lambda(), stream);
      p->sum = coil_sum(*p->coils, first, first.domain_vector());
      return p;
    }
    cudaStream_t s = nullptr;
    MRI_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    p->stream = s;
    p->owns_stream = true;
    p->coils = std::make_unique<DeviceCoils>(all, block.first, block.count, Regularizer::None, 0.0, s);
    p->toeplitz = std::make_unique<ToeplitzOperator>(first, s);
    p->x = DeviceImage(grid, s);
    p->partial = DeviceImage(grid, s);
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

CoilSplitNormal::CoilSplitNormal(const DeviceCoils &coils, const ToeplitzOperator &toeplitz,
                                 const std::vector<int> &devices, ExchangeTransport transport)
    : impl_(std::make_unique<Impl>()) {
  if (devices.size() < 2) mri::detail::invalid_argument("devices.size()", devices.size(), "must be at least 2");
  if (coils.grid() != toeplitz.grid())
    mri::detail::invalid_argument("coils.grid().voxels()", coils.grid().voxels(), "must be the Toeplitz operator's grid");
  Impl &im = *impl_;
  im.grid = toeplitz.grid();
  im.stream = toeplitz.stream();
  im.times.device_seconds.assign(devices.size(), 0.0);
  for (cudaEvent_t *e : {&im.before_broadcast, &im.after_broadcast, &im.after_reduce}) *e = timing_event();
  MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(im.stream))); // the maps' upload, before other streams copy them
  const std::vector<CoilBlock> blocks = coil_blocks(coils.count(), devices.size());
  std::vector<ExchangeSide> sides;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (blocks[i].count == 0) continue;
    im.parts.push_back(im.make_part(coils, toeplitz, static_cast<int>(i), devices[i], blocks[i]));
    sides.push_back({devices[i], im.parts.back()->stream});
  }
  for (const auto &p : im.parts) MRI_CUDA_CHECK(cudaStreamSynchronize(as_stream(p->stream))); // copies done
  im.exchange = make_coil_exchange(sides, im.grid, transport);
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
  im.exchange->broadcast(x, copies);
  MRI_CUDA_CHECK(cudaEventRecord(im.after_broadcast, first));
  for (const auto &p : im.parts) { // enqueued on every device before any waits: they run at once
    const CurrentDevice on(p->device);
    MRI_CUDA_CHECK(cudaEventRecord(p->begin, as_stream(p->stream)));
    p->sum->apply(p->entry == 0 ? x : p->x, p->entry == 0 ? out : p->partial);
    MRI_CUDA_CHECK(cudaEventRecord(p->end, as_stream(p->stream)));
  }
  im.exchange->reduce(out, partials);
  MRI_CUDA_CHECK(cudaEventRecord(im.after_reduce, first));
  im.pending = true;
}

DeviceImage CoilSplitNormal::domain_vector() const { return DeviceImage(impl_->grid, impl_->stream); }

std::string CoilSplitNormal::describe() const {
  std::string s = "coils ";
  for (const auto &p : impl_->parts) {
    const CoilBlock b = p->block;
    s += (p->entry == 0 ? "" : ", ") + std::to_string(b.first) +
         (b.count > 1 ? "-" + std::to_string(b.first + b.count - 1) : std::string()) + " on device " +
         std::to_string(p->device);
  }
  if (impl_->parts.size() < impl_->times.device_seconds.size()) s += ", none on the other entries (fewer coils than devices)";
  return s + " (exchange: " + impl_->exchange->name() + ")";
}

CoilSplitNormal::Times CoilSplitNormal::times() const {
  impl_->collect();
  return impl_->times;
}

} // namespace mri::cuda::detail
