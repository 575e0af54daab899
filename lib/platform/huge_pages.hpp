#pragma once
// Large buffers filled once (the ISMRMRD reader's items, the NUFFT's coil grids): the first touch
// of each fresh 4 KiB page is a page fault, slow on virtual machines (microseconds each: up to half
// the time of reading a large ISMRMRD file; docs/sense.md, "Performance"). Asking for transparent
// huge pages (madvise, where the kernel's setting is "madvise", as Debian's and Ubuntu's) makes one
// fault map 2 MiB, and populating the pages with one madvise call (MADV_POPULATE_WRITE, Linux 5.14
// on) spares the trap per fault.
#include <cstddef>
#include <vector>

namespace mri::detail {

// Advises [data, data + bytes) as huge pages and faults its pages in; advice only: where the
// kernel does not know it, the pages fault in on first touch as usual.
void advise_huge_pages(void *data, std::size_t bytes);

// v.reserve(n) with the new storage advised before anything touches it.
template <class T> void reserve_on_huge_pages(std::vector<T> &v, std::size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
}

// v.resize(n) of an empty vector, its storage advised first.
template <class T> void resize_on_huge_pages(std::vector<T> &v, std::size_t n) {
  reserve_on_huge_pages(v, n);
  v.resize(n);
}

} // namespace mri::detail
