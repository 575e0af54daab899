#include "item_memory.hpp"

#include "platform/huge_pages.hpp"

namespace mri::detail {

ItemMemory::ItemMemory(std::vector<std::size_t> sizes, std::size_t coils, std::size_t ahead)
    : sizes_(std::move(sizes)), coils_(coils), ahead_(ahead), thread_(&ItemMemory::prepare, this) {}

ItemMemory::~ItemMemory() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void ItemMemory::prepare() {
  for (const std::size_t per_coil : sizes_) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stop_ || ready_.size() < ahead_; });
      if (stop_) return;
    }
    Arrays a;
    try {
      reserve_on_huge_pages(a.points, per_coil);
      reserve_on_huge_pages(a.samples, per_coil * coils_);
      a.samples.resize(per_coil * coils_);
    } catch (...) {
      const std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    {
      const std::lock_guard lock(mutex_);
      ready_.push_back(std::move(a));
    }
    changed_.notify_all();
  }
}

ItemMemory::Arrays ItemMemory::take() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty() || error_; });
  if (ready_.empty()) std::rethrow_exception(error_);
  Arrays a = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();
  return a;
}

} // namespace mri::detail
