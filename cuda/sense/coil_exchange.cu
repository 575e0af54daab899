// The coil split's image exchange: NCCL or peer copies (coil_exchange.hpp).
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>

#include "coil_exchange.hpp"
#include "cuda_check.cuh"
#include "current_device.cuh"

namespace mri::cuda::detail {
namespace {

cudaStream_t as_stream(StreamHandle s) { return static_cast<cudaStream_t>(s); }

// Records an event on side i's stream (a timing-free marker other streams can wait for).
class Markers {
public:
  explicit Markers(const std::vector<ExchangeSide> &sides) : sides_(sides) {
    for (const ExchangeSide &s : sides_) {
      const CurrentDevice on(s.device);
      cudaEvent_t e = nullptr;
      MRI_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      events_.push_back(e);
    }
  }
  ~Markers() {
    for (std::size_t i = 0; i < events_.size(); ++i) {
      const CurrentDevice on(sides_[i].device);
      cudaEventDestroy(events_[i]);
    }
  }
  Markers(const Markers &) = delete;
  Markers &operator=(const Markers &) = delete;

  // Marks the work queued so far on side i's stream; query(i): cudaSuccess once it has all run.
  void record(std::size_t i) {
    const CurrentDevice on(sides_[i].device);
    MRI_CUDA_CHECK(cudaEventRecord(events_[i], as_stream(sides_[i].stream)));
  }
  cudaError_t query(std::size_t i) const { return cudaEventQuery(events_[i]); }
  // Side `waiter`'s stream waits for the work queued so far on side `done`'s.
  void order(std::size_t done, std::size_t waiter) {
    record(done);
    const CurrentDevice on(sides_[waiter].device);
    MRI_CUDA_CHECK(cudaStreamWaitEvent(as_stream(sides_[waiter].stream), events_[done], 0));
  }

private:
  std::vector<ExchangeSide> sides_;
  std::vector<cudaEvent_t> events_;
};

// ---- Peer copies ----------------------------------------------------------------------------

class PeerExchange final : public CoilExchange {
public:
  PeerExchange(const std::vector<ExchangeSide> &sides, const Grid &grid, std::string name)
      : sides_(sides), markers_(sides), name_(std::move(name)) {
    for (const ExchangeSide &s : sides_) {
      enable_peer_access(s.device, sides_.front().device);
      enable_peer_access(sides_.front().device, s.device);
      if (s.device != sides_.front().device && staging_.empty()) staging_ = DeviceImage(grid, sides_.front().stream);
    }
  }
  const std::string &name() const override { return name_; }

  void broadcast(const DeviceImage &x, const std::vector<DeviceImage *> &copies) override {
    for (std::size_t i = 1; i < sides_.size(); ++i) {
      markers_.order(0, i);
      const CurrentDevice on(sides_[i].device);
      MRI_CUDA_CHECK(cudaMemcpyPeerAsync(copies[i]->data(), sides_[i].device, x.data(), sides_[0].device,
                                         x.size() * sizeof(cfloat), as_stream(sides_[i].stream)));
    }
  }

  // Each part added as it is, when it lives on the first device; else through the staging image.
  void reduce(DeviceImage &out, const std::vector<const DeviceImage *> &parts) override {
    for (std::size_t i = 1; i < sides_.size(); ++i) {
      markers_.order(i, 0);
      if (sides_[i].device == sides_[0].device) {
        VectorOps<DeviceImage>::axpy(1.0, *parts[i], out); // y + 1 x: the exact sum
        continue;
      }
      MRI_CUDA_CHECK(cudaMemcpyPeerAsync(staging_.data(), sides_[0].device, parts[i]->data(), sides_[i].device,
                                         out.size() * sizeof(cfloat), as_stream(sides_[0].stream)));
      VectorOps<DeviceImage>::axpy(1.0, staging_, out);
    }
  }

private:
  std::vector<ExchangeSide> sides_;
  Markers markers_;
  std::string name_;
  DeviceImage staging_; // on the first device, when a side is on another
};

// ---- NCCL -----------------------------------------------------------------------------------

// libnccl.so.2's entry points, resolved once per process.
struct NcclApi {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  decltype(&::ncclBroadcast) Broadcast = nullptr;
  decltype(&::ncclReduce) Reduce = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommFinalize) CommFinalize = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  std::string version; // "2.28.9"
  std::string missing; // why it is not usable; empty when it is
};

template <class F> bool resolve(void *lib, const char *symbol, F &f) {
  f = reinterpret_cast<F>(dlsym(lib, symbol));
  return f != nullptr;
}

NcclApi load_nccl() {
  NcclApi api;
  void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL); // kept for the process
  if (!lib) {
    const char *why = dlerror();
    api.missing = std::string("libnccl.so.2 did not load: ") + (why ? why : "unknown reason");
    return api;
  }
  const bool all = resolve(lib, "ncclGetVersion", api.GetVersion) && resolve(lib, "ncclGetUniqueId", api.GetUniqueId) &&
                   resolve(lib, "ncclCommInitRankConfig", api.CommInitRankConfig) &&
                   resolve(lib, "ncclGroupStart", api.GroupStart) && resolve(lib, "ncclGroupEnd", api.GroupEnd) &&
                   resolve(lib, "ncclBroadcast", api.Broadcast) && resolve(lib, "ncclReduce", api.Reduce) &&
                   resolve(lib, "ncclCommGetAsyncError", api.CommGetAsyncError) &&
                   resolve(lib, "ncclCommFinalize", api.CommFinalize) &&
                   resolve(lib, "ncclCommDestroy", api.CommDestroy) && resolve(lib, "ncclCommAbort", api.CommAbort) &&
                   resolve(lib, "ncclGetErrorString", api.GetErrorString);
  if (!all) {
    api.missing = "libnccl.so.2 lacks an entry point this build uses (NCCL >= 2.14 needed)";
    return api;
  }
  int code = 0;
  api.GetVersion(&code);
  api.version = std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
  if (code < 21400) api.missing = "NCCL " + api.version + " is older than 2.14 (non-blocking communicators)";
  return api;
}

const NcclApi &nccl() {
  static const NcclApi api = load_nccl();
  return api;
}

using ExchangeClock = std::chrono::steady_clock;

class NcclExchange final : public CoilExchange {
public:
  NcclExchange(const std::vector<ExchangeSide> &sides) : sides_(sides), markers_(sides), api_(nccl()) {
    name_ = "nccl " + api_.version;
    setenv("NCCL_NVLS_ENABLE", "0", 0); // no NVLink multicast (docs/scaling.md), unless the caller set it
    ncclUniqueId id;
    check(api_.GetUniqueId(&id), "ncclGetUniqueId");
    comms_.assign(sides_.size(), nullptr);
    check(api_.GroupStart(), "ncclGroupStart");
    for (std::size_t i = 0; i < sides_.size(); ++i) {
      const CurrentDevice on(sides_[i].device);
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      check(api_.CommInitRankConfig(&comms_[i], static_cast<int>(sides_.size()), id, static_cast<int>(i), &config),
            "ncclCommInitRankConfig");
    }
    check(api_.GroupEnd(), "ncclGroupEnd (communicators)");
    settle("ncclCommInitRankConfig");
  }
  ~NcclExchange() override {
    for (std::size_t i = 0; i < comms_.size(); ++i) {
      if (!comms_[i]) continue;
      const CurrentDevice on(sides_[i].device);
      if (!finalized(comms_[i])) api_.CommAbort(comms_[i]);
    }
  }
  const std::string &name() const override { return name_; }

  void broadcast(const DeviceImage &x, const std::vector<DeviceImage *> &copies) override {
    collective("ncclBroadcast", [&](std::size_t i) {
      void *buffer = i == 0 ? const_cast<cfloat *>(x.data()) : copies[i]->data();
      return api_.Broadcast(buffer, buffer, floats(x), ncclFloat, 0, comms_[i], as_stream(sides_[i].stream));
    });
  }

  // In place on side 0 (NCCL's reduce reads and writes out there); the others only send.
  void reduce(DeviceImage &out, const std::vector<const DeviceImage *> &parts) override {
    collective("ncclReduce", [&](std::size_t i) {
      void *buffer = i == 0 ? out.data() : const_cast<cfloat *>(parts[i]->data());
      return api_.Reduce(buffer, buffer, floats(out), ncclFloat, ncclSum, 0, comms_[i], as_stream(sides_[i].stream));
    });
    finish();
  }

private:
  static std::size_t floats(const DeviceImage &x) { return 2 * x.size(); }

  void check(ncclResult_t r, const char *call) {
    if (r == ncclSuccess || r == ncclInProgress) return;
    abort_all();
    throw CudaError(std::string(call) + " failed: " + api_.GetErrorString(r));
  }

  // One collective over every side, enqueued as one NCCL group.
  template <class Call> void collective(const char *what, Call &&call) {
    check(api_.GroupStart(), "ncclGroupStart");
    for (std::size_t i = 0; i < sides_.size(); ++i) {
      const CurrentDevice on(sides_[i].device);
      check(call(i), what);
    }
    check(api_.GroupEnd(), what);
    settle(what);
  }

  // Waits until no communicator is in progress (a non-blocking call's enqueueing), against the
  // deadline; NCCL's asynchronous errors become CudaError.
  void settle(const char *what) {
    const auto deadline = ExchangeClock::now() + timeout();
    for (std::size_t i = 0; i < comms_.size(); ++i) {
      for (ncclResult_t state = ncclInProgress;;) {
        check(api_.CommGetAsyncError(comms_[i], &state), "ncclCommGetAsyncError");
        if (state == ncclSuccess) break;
        if (state != ncclInProgress) check(state, what);
        pause(deadline, what, i);
      }
    }
  }

  // The reduce done on side 0's stream (the CG reads it next), against the deadline: a stalled
  // peer aborts the communicators instead of hanging the stream's next synchronisation.
  void finish() {
    markers_.record(0);
    const auto deadline = ExchangeClock::now() + timeout();
    for (cudaError_t e = markers_.query(0); e != cudaSuccess; e = markers_.query(0)) {
      if (e != cudaErrorNotReady) ::mri::cuda::detail::check(e, "cudaEventQuery (the NCCL reduce)", __FILE__, __LINE__);
      for (ncclComm_t c : comms_) {
        ncclResult_t state = ncclSuccess;
        api_.CommGetAsyncError(c, &state);
        if (state != ncclSuccess && state != ncclInProgress) check(state, "ncclReduce (asynchronous)");
      }
      pause(deadline, "ncclReduce", 0);
    }
  }

  static ExchangeClock::duration timeout() {
    return std::chrono::duration_cast<ExchangeClock::duration>(std::chrono::duration<double>(kExchangeTimeoutSeconds));
  }

  void pause(ExchangeClock::time_point deadline, const char *what, std::size_t side) {
    if (ExchangeClock::now() > deadline) {
      abort_all();
      throw CudaError(std::string(what) + " did not finish within " + std::to_string(kExchangeTimeoutSeconds) +
                      " s (device " + std::to_string(sides_[side].device) + "): the NCCL communicators were aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }

  // Finalises and destroys c (waiting for its last work, against the deadline); false if it could not.
  bool finalized(ncclComm_t c) {
    if (const ncclResult_t r = api_.CommFinalize(c); r != ncclSuccess && r != ncclInProgress) return false;
    const auto deadline = ExchangeClock::now() + timeout();
    ncclResult_t state = ncclInProgress;
    while (api_.CommGetAsyncError(c, &state) == ncclSuccess && state == ncclInProgress && ExchangeClock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    return state == ncclSuccess && api_.CommDestroy(c) == ncclSuccess;
  }

  void abort_all() {
    if (aborted_) return;
    aborted_ = true;
    for (std::size_t i = 0; i < comms_.size(); ++i)
      if (comms_[i]) {
        const CurrentDevice on(sides_[i].device);
        api_.CommAbort(comms_[i]);
        comms_[i] = nullptr;
      }
  }

  std::vector<ExchangeSide> sides_;
  Markers markers_; // side 0's: the reduce's completion
  const NcclApi &api_;
  std::string name_;
  std::vector<ncclComm_t> comms_;
  bool aborted_ = false;
};

std::size_t distinct_devices(const std::vector<ExchangeSide> &sides) {
  std::set<int> devices;
  for (const ExchangeSide &s : sides) devices.insert(s.device);
  return devices.size();
}

// Why NCCL cannot serve these sides ("" when it can).
std::string nccl_refusal(const std::vector<ExchangeSide> &sides) {
  std::set<int> devices;
  for (const ExchangeSide &s : sides)
    if (!devices.insert(s.device).second) return "device " + std::to_string(s.device) + " listed twice (NCCL takes one rank per GPU)";
  return nccl().missing;
}

ExchangeTransport from_environment(ExchangeTransport asked) {
  if (asked != ExchangeTransport::Auto) return asked;
  const char *env = std::getenv("MRI_COIL_EXCHANGE");
  if (!env || !*env) return asked;
  if (std::strcmp(env, "nccl") == 0) return ExchangeTransport::Nccl;
  if (std::strcmp(env, "peer") == 0) return ExchangeTransport::Peer;
  mri::detail::invalid_argument("MRI_COIL_EXCHANGE", std::string(env), "must be nccl or peer (or unset)");
}

} // namespace

std::unique_ptr<CoilExchange> make_coil_exchange(const std::vector<ExchangeSide> &sides, const Grid &grid,
                                                 ExchangeTransport transport) {
  if (sides.empty()) mri::detail::invalid_argument("sides.size()", 0, "must be at least 1");
  transport = from_environment(transport);
  if (transport == ExchangeTransport::Peer) return std::make_unique<PeerExchange>(sides, grid, "peer copies");
  // NCCL's initialisation costs time and device state: Auto asks for it only where data crosses
  // devices. Asked for explicitly, one rank runs it (how one GPU tests the NCCL path).
  if (transport == ExchangeTransport::Auto && distinct_devices(sides) < 2)
    return std::make_unique<PeerExchange>(sides, grid, "peer copies (one device: no collective)");
  const std::string refusal = nccl_refusal(sides);
  if (refusal.empty()) return std::make_unique<NcclExchange>(sides);
  if (transport == ExchangeTransport::Nccl) throw Unsupported("the coil exchange by NCCL: " + refusal);
  return std::make_unique<PeerExchange>(sides, grid, "peer copies (NCCL not used: " + refusal + ")");
}

} // namespace mri::cuda::detail
