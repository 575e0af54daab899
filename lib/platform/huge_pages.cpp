#include "huge_pages.hpp"

#include <cstdint>
#include <sys/mman.h>

namespace mri::detail {

void advise_huge_pages(void *data, std::size_t bytes) {
  constexpr std::uintptr_t kPage = 4096;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  // Outward to whole pages: the flag is per mapping, and a huge page needs its 2 MiB inside one
  // flagged range (malloc's large blocks start 16 bytes into their own mapping). Advice: a failure is harmless.
  const std::uintptr_t first = begin & ~(kPage - 1), last = (begin + bytes + kPage - 1) & ~(kPage - 1);
#ifdef MADV_HUGEPAGE
  madvise(reinterpret_cast<void *>(first), last - first, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
  // The pages wholly inside, faulted in by one call rather than one trap each (Linux 5.14 on).
  const std::uintptr_t inner_first = (begin + kPage - 1) & ~(kPage - 1), inner_last = (begin + bytes) & ~(kPage - 1);
  if (inner_last > inner_first)
    madvise(reinterpret_cast<void *>(inner_first), inner_last - inner_first, MADV_POPULATE_WRITE);
#endif
}

} // namespace mri::detail
