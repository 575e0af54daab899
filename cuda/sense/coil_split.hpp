#pragma once
// SENSE's CG normal operator with the coils split over several devices (ReconOptions::gpu.devices,
// docs/scaling.md):
//   out = sum_d [ sum_{c in C_d} conj(S_c) .* N(S_c .* x) ] + lambda R^H R x
// Entry d of the devices owns a contiguous block C_d of the coils (as even as can be; entries
// beyond the coil count get none and take no part): their maps, its own Toeplitz operator N (the
// first device's spectrum, copied once), its own stream (CoilLanes), and the coil-batched SENSE operator
// where one device would use it (sense_toeplitz.hpp), else the maps around N. Per application:
// x from the first device to the others, every entry's coil sum at once on its device, the
// partial sums added on the first device in entry order (coil_exchange.hpp: NCCL, or peer
// copies), the regulariser once (in entry 0's sum). CG stays on the first device, its scalars
// computed once from vectors that live there: nothing but the two images crosses devices.
// Plain C++ (no CUDA types).
#include <memory>
#include <string>
#include <vector>

#include "coil_exchange.hpp"
#include "recon/device_image.hpp"
#include "sense_cuda.hpp"
#include "toeplitz/toeplitz_cuda.hpp"

namespace mri::cuda::detail {

// Coil blocks per entry: [first, first + count) for entry i of `entries`, as even as can be (the
// first ones one coil more).
struct CoilBlock {
  int first = 0, count = 0;
};
std::vector<CoilBlock> coil_blocks(int coils, std::size_t entries);

// The entries of a split by coils that hold coils (coil_blocks; entries beyond the coil count get
// none and no lane), each with a stream on its device, and the image exchange between them. Made
// once per reconstruction and shared by the split F^H D (coil_split_fhd.hpp) and the split CG
// normal: NCCL's communicators are made once, and both splits order their work on the same
// streams. Lane 0 is entry 0, on the first device, on the stream it is given.
class CoilLanes {
public:
  struct Lane {
    int entry = 0, device = 0;
    CoilBlock block;
    StreamHandle stream = nullptr;
  };
  // devices: at least 1 entry, recon_devices-checked, the first the current device; first_stream:
  // a stream of it (the reconstruction's). The other lanes get non-blocking streams of their own.
  // Throws InvalidArgument (no entry, fewer than 1 coil), Unsupported (transport = Nccl where it
  // cannot run), CudaError.
  CoilLanes(int coils, const std::vector<int> &devices, StreamHandle first_stream, const Grid &grid,
            ExchangeTransport transport = ExchangeTransport::Auto);
  ~CoilLanes();
  CoilLanes(const CoilLanes &) = delete;
  CoilLanes &operator=(const CoilLanes &) = delete;

  const std::vector<Lane> &lanes() const { return lanes_; }
  std::size_t entries() const { return entries_; } // devices.size(), lanes or not
  int coils() const { return coils_; }
  const Grid &grid() const { return grid_; }
  CoilExchange &exchange() const { return *exchange_; }
  // "coils 0-3 on device 0, 4-7 on device 1 (exchange: nccl 2.28.9)"
  std::string describe() const;

private:
  void release() noexcept;
  std::vector<Lane> lanes_;
  std::size_t entries_ = 0;
  int coils_ = 0;
  Grid grid_;
  std::unique_ptr<CoilExchange> exchange_;
};

class CoilSplitNormal : public SelfAdjointOnDevice<CoilSplitNormal> {
public:
  // coils: every coil's map with the regulariser (the one-device SENSE's; uploaded on toeplitz's
  // stream or before), and toeplitz, both on the first device (the current one), toeplitz on the
  // CG's stream (entry 0's coils run there);
  // each entry's maps and spectrum are copied from them device to device. devices: at least 2
  // entries, recon_devices-checked, the first the current device. Throws InvalidArgument (fewer
  // than 2 entries, maps not on toeplitz's grid), Unsupported (transport = Nccl where it cannot
  // run), CudaError.
  CoilSplitNormal(const DeviceCoils &coils, const QOperator &toeplitz, const std::vector<int> &devices,
                  ExchangeTransport transport = ExchangeTransport::Auto);
  // The same on lanes already made (reconstruct's, shared with its split F^H D; first, so that a
  // braced list of devices never reads as lanes): lane 0's stream must be toeplitz's, the lanes of
  // at least 2 entries, of coils.count() coils and toeplitz's grid (InvalidArgument otherwise).
  CoilSplitNormal(std::shared_ptr<const CoilLanes> lanes, const DeviceCoils &coils, const QOperator &toeplitz);
  ~CoilSplitNormal();
  CoilSplitNormal(CoilSplitNormal &&) noexcept;
  CoilSplitNormal &operator=(CoilSplitNormal &&) noexcept;

  // out = the SENSE normal of x (distinct images on the maps' grid, on the CG's stream). Not
  // re-entrant: one call at a time.
  void apply(const DeviceImage &x, DeviceImage &out) const;
  DeviceImage domain_vector() const;

  // "coils 0-3 on device 0, 4-7 on device 1 (exchange: nccl 2.28.9)"
  std::string describe() const;
  // Device seconds of the applications so far: per entry of `devices`, its coil sums (CUDA events
  // around them on its stream; 0 for an entry without coils), and the exchange's on the first
  // device's stream (the iterate's broadcast, and the reduce from the end of entry 0's coil sum:
  // the wait for a slower device's coils included).
  struct Times {
    std::vector<double> device_seconds;
    double exchange_seconds = 0;
    int applications = 0;
  };
  Times times() const;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

} // namespace mri::cuda::detail
