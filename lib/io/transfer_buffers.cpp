#include "transfer_buffers.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "platform/huge_pages.hpp"
#include "mri/error.hpp"

namespace mri::detail {
namespace {

constexpr std::size_t kAlign = alignof(std::max_align_t);
constexpr std::size_t kConversionBytes = std::size_t{1} << 20; // HDF5's default size

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

} // namespace

TransferBuffers::TransferBuffers() : transfer_(H5Pcreate(H5P_DATASET_XFER)) {
  if (transfer_ < 0 || H5Pset_vlen_mem_manager(transfer_, allocate, this, release, this) < 0) {
    if (transfer_ >= 0) H5Pclose(transfer_);
    throw IoError("HDF5 cannot make a transfer property list");
  }
}

TransferBuffers::~TransferBuffers() { H5Pclose(transfer_); }

void TransferBuffers::restart(std::size_t conversion_bytes) {
  grow_conversion(std::min(conversion_bytes, kConversionBytes));
  if (wanted_ > capacity_) {
    buffer_.reset(); // the old one first: the two need not be held at once
    buffer_.reset(new std::byte[wanted_]); // uninitialised: HDF5 writes every byte it hands out
    capacity_ = wanted_;
    advise_huge_pages(buffer_.get(), capacity_);
  }
  used_ = wanted_ = 0;
}

// Sized by the block rather than 1 MiB each from the start: a file of a few acquisitions (the
// fuzzer's) made every reader allocate, fault in and unmap 4 MiB it hardly touched (under ASan,
// 18 % of an execution in perf).
void TransferBuffers::grow_conversion(std::size_t bytes) {
  if (bytes <= conversion_capacity_) return;
  conversion_.reset(); // the old ones first: the two pairs need not be held at once
  background_.reset();
  conversion_.reset(new std::byte[bytes]);
  background_.reset(new std::byte[bytes]);
  conversion_capacity_ = bytes;
  if (H5Pset_buffer(transfer_, bytes, conversion_.get(), background_.get()) < 0)
    throw IoError("HDF5 cannot take type-conversion buffers of " + std::to_string(bytes) + " bytes");
}

void *TransferBuffers::allocate(std::size_t bytes, void *self) {
  auto &a = *static_cast<TransferBuffers *>(self);
  const std::size_t size = aligned(std::max<std::size_t>(bytes, 1));
  a.wanted_ += size;
  if (a.used_ + size > a.capacity_) return std::malloc(bytes);
  void *p = a.buffer_.get() + a.used_;
  a.used_ += size;
  return p;
}

void TransferBuffers::release(void *p, void *self) {
  const auto &a = *static_cast<const TransferBuffers *>(self);
  const auto at = reinterpret_cast<std::uintptr_t>(p), first = reinterpret_cast<std::uintptr_t>(a.buffer_.get());
  if (at < first || at >= first + a.capacity_) std::free(p); // not the arena's: malloc's
}

} // namespace mri::detail
