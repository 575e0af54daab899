#pragma once
// Large host-to-device copies from pageable memory at several host threads' memcpy speed. A
// pageable cudaMemcpy goes through the driver's staging at one thread's memcpy speed; here up to
// kUploadThreads threads each copy chunks into two slots of a small process-wide pinned ring and
// start each chunk's DMA at once, reusing a slot when its previous DMA has finished (its event).
// The ring is small because pinning is slow (of the order of a millisecond per MB, paid once per
// process: a buffer as large as a trajectory would cost more than the copies it speeds up;
// docs/history.md, "Gridding NUFFT", GPU). Copies under 1 MB take the pageable path, and so do
// copies to a device other than the ring's (its events belong to the device it was pinned for),
// without waiting for the ring's lock: several devices' uploads run at once (the F^H D coil split,
// sense/coil_split_fhd.hpp). Used for trajectories, coil samples and coil maps.
#include <cuda_runtime.h>

#include <cstddef>

namespace mri::cuda::detail {

// Copies `bytes` from host `src` to device `dst`, ordered on `stream`; src may be reused on
// return (the DMA of the last chunks may still run: later work on `stream` is ordered after it).
// Throws CudaError.
void upload_staged(void *dst, const void *src, std::size_t bytes, cudaStream_t stream);

// The same ring, the device bytes made on the host as they are staged: fill(pinned, first, n)
// writes device bytes [first, first + n) into `pinned` (n <= 384 KB, first a multiple of 384 KB).
// For uploads that drop fields on the way (a 2D trajectory as (kx, ky) only: 8 bytes a sample
// instead of 12). Runs fill on up to 8 threads at once.
using StagedFill = void (*)(char *pinned, std::size_t first, std::size_t n, const void *context);
void upload_staged_fill(void *dst, std::size_t bytes, StagedFill fill, const void *context, cudaStream_t stream);

// Frees the pinned ring (after its pending copies finished); the next large upload makes it anew.
void release_staging();

} // namespace mri::cuda::detail
