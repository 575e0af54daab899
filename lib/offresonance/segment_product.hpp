#pragma once
// The L x L spectral product of the segmented Toeplitz normal for one line of frequencies
// (SegmentedSenseToeplitz2d's columns): z_l = sum_l' K_ll' x_l', with K_l'l = conj(K_ll') (the
// kernel matrix is Hermitian at every frequency: segmented_kernels.hpp), so only the pairs l <= l'
// are stored and each is read once for both of its products.
//
// The lines are interleaved complex (FFTW's), the kernels split (real, then imaginary): the
// product runs on chunks of kChunk frequencies deinterleaved into split scratch arrays, so that
// every inner loop is a contiguous multiply-add over floats that the compiler vectorises without
// shuffles. Compiled once per ISA (segment_product.cpp) and picked at run time as the gridding
// kernels are (platform/cpu_isa.hpp; MRI_SEGMENT_PRODUCT=generic|avx2 caps it for the tests).
#include <complex>
#include <cstdint>

namespace mri::detail {

// Frequencies per chunk: 4 L chunks of split scratch (8 KB at L = 8) and a chunk of every pair's
// kernel (36 KB at L = 8) stay in L1 while the L^2 products run over them.
inline constexpr std::int64_t kSegmentChunk = 64;

// Floats of scratch segment_product needs for L segments.
inline std::int64_t segment_product_scratch(int segments) { return 4 * segments * kSegmentChunk; }

// Floats of kernel per chunk of frequencies: every pair's kSegmentChunk real parts, then its
// kSegmentChunk imaginary parts, the pairs (l, l'), l <= l', in segment_pair's order. A chunk's
// kernels are contiguous (a pair's 256 B at a stride of a few KB instead would fall in two L1 sets).
inline std::int64_t segment_kernel_chunk(int segments) { return segments * (segments + 1) * kSegmentChunk; }
// Floats of kernel for a line of `length` frequencies: whole chunks (the last one padded).
inline std::int64_t segment_kernel_line(int segments, std::int64_t length) {
  return (length + kSegmentChunk - 1) / kSegmentChunk * segment_kernel_chunk(segments);
}

// lines[c L + l]: `length` complex values of coil c's segment l, replaced by its z_l, for `coils`
// coils: each chunk of kernels is applied to every coil while it is in L1. kernel: the line's
// kernels, chunk after chunk (segment_kernel_chunk). scratch: segment_product_scratch(L) floats.
using SegmentProduct = void (*)(int segments, int coils, std::int64_t length, const float *kernel, std::complex<float> *const *lines,
                                float *scratch);

// The best entry point for this CPU.
SegmentProduct select_segment_product();

} // namespace mri::detail
