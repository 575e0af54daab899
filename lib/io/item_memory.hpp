#pragma once
// The arrays of a file's items, allocated and faulted in by a thread of their own, a few items
// ahead of the reader that fills them: fresh memory costs a page fault and the kernel's zeroing
// per page, then std::vector's own zero-fill (KSpaceData takes a std::vector), a third of the
// reading of the 64-slice file on one thread. The reader takes them in the order it meets the
// items' first acquisitions.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "mri/kspace.hpp"

namespace mri::detail {

class ItemMemory {
public:
  struct Arrays {
    std::vector<KPoint> points;  // capacity for the item's points, empty
    std::vector<cfloat> samples; // the item's samples, zeros
  };
  // sizes[n]: the points per coil of the n-th item to be taken; `ahead`: items prepared at most
  // before they are taken.
  ItemMemory(std::vector<std::size_t> sizes, std::size_t coils, std::size_t ahead);
  ~ItemMemory(); // stops the thread
  ItemMemory(const ItemMemory &) = delete;
  ItemMemory &operator=(const ItemMemory &) = delete;

  // The next item's arrays (waits for them). Rethrows the thread's allocation failure.
  Arrays take();

private:
  void prepare();

  const std::vector<std::size_t> sizes_;
  const std::size_t coils_, ahead_;
  std::deque<Arrays> ready_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::thread thread_; // last: started once the rest is
};

} // namespace mri::detail
