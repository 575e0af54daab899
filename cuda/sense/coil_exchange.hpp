#pragma once
// The image exchange of SENSE split by coils (coil_split.hpp), once per CG iteration: the iterate
// from the first side to every other side, then the sides' partial coil sums back to the first,
// added there in side order. A side is one entry of ReconOptions::gpu.devices: a device and a stream
// on it. Two transports:
//   Nccl  ncclBroadcast and ncclReduce, one rank per side (libnccl.so.2, loaded with dlopen the
//         first time it is asked for: a machine without it runs everything else). Needs every
//         side on a distinct device (NCCL refuses two ranks on one GPU). Its communicators are
//         non-blocking: every NCCL call, and the reduce's completion, is waited for against a
//         deadline (kExchangeTimeoutSeconds); past it the communicators are aborted and the call
//         throws CudaError naming the step, never a hang.
//   Peer  cudaMemcpyPeerAsync to each side, and back into one buffer on the first device that a
//         kernel adds to the sum, side after side. Any sides, the same device twice included
//         (how one GPU tests the split).
// Both sum in side order on the first device (NCCL's sum of two ranks is one addition; with more
// it follows NCCL's own order): each deterministic, the two equal to float rounding.
// Plain C++ (no CUDA or NCCL types).
#include <memory>
#include <string>
#include <vector>

#include "recon/device_image.hpp"

namespace mri::cuda::detail {

inline constexpr double kExchangeTimeoutSeconds = 120;

struct ExchangeSide {
  int device = 0;
  StreamHandle stream = nullptr; // a stream of `device`
};

enum class ExchangeTransport {
  Auto, // Nccl where a collective runs (two or more distinct devices) and NCCL loads, else Peer;
        // one device never initialises NCCL. MRI_COIL_EXCHANGE=peer or =nccl in the environment
        // forces one, for comparisons.
  Nccl,
  Peer
};

class CoilExchange {
public:
  virtual ~CoilExchange() = default;
  // e.g. "nccl 2.28.9", "peer copies (NCCL not used: sides share a device)".
  virtual const std::string &name() const = 0;
  // *copies[i] = x for every side i >= 1 (x on side 0's stream, copies[i] an image of the grid on
  // side i's: its later work sees the copy; copies[0] is not used).
  virtual void broadcast(const DeviceImage &x, const std::vector<DeviceImage *> &copies) = 0;
  // out += *parts[1] + *parts[2] + ... on side 0's stream (out on it; parts[i] on side i's stream,
  // complete once the work queued there so far is; parts[0] is not used: out holds side 0's part).
  virtual void reduce(DeviceImage &out, const std::vector<const DeviceImage *> &parts) = 0;
};

// The exchange of images of `grid` between `sides` (at least one; side 0 on the current device).
// Nccl asked where it cannot run (a device twice, libnccl.so.2 missing or failing): Unsupported
// naming why. Auto falls back to Peer and says why in name(). Throws CudaError.
std::unique_ptr<CoilExchange> make_coil_exchange(const std::vector<ExchangeSide> &sides, const Grid &grid,
                                                 ExchangeTransport transport = ExchangeTransport::Auto);

} // namespace mri::cuda::detail
