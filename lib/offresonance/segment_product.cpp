// The segmented spectral product per ISA (segment_product.hpp).
#include "segment_product.hpp"

#include <algorithm>
#include <cstring>

#include "platform/cpu_isa.hpp"
#include "segmented_kernels.hpp"

namespace mri::detail {
namespace {

#define MRI_ALWAYS_INLINE __attribute__((always_inline)) inline
// The loop's arrays do not overlap (see product_chunk).
#if defined(__clang__)
#define MRI_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define MRI_IVDEP _Pragma("GCC ivdep")
#else
#define MRI_IVDEP
#endif

// The chunk of n frequencies at y0 of each of the L lines into split arrays (C apart), and back.
MRI_ALWAYS_INLINE void split(int L, std::int64_t y0, std::int64_t n, std::complex<float> *const *lines, float *re, float *im) {
  for (int l = 0; l < L; ++l) {
    const float *v = reinterpret_cast<const float *>(lines[l] + y0);
    for (std::int64_t j = 0; j < n; ++j) {
      re[l * kSegmentChunk + j] = v[2 * j];
      im[l * kSegmentChunk + j] = v[2 * j + 1];
    }
  }
}
MRI_ALWAYS_INLINE void join(int L, std::int64_t y0, std::int64_t n, const float *re, const float *im,
                            std::complex<float> *const *lines) {
  for (int l = 0; l < L; ++l) {
    float *v = reinterpret_cast<float *>(lines[l] + y0);
    for (std::int64_t j = 0; j < n; ++j) {
      v[2 * j] = re[l * kSegmentChunk + j];
      v[2 * j + 1] = im[l * kSegmentChunk + j];
    }
  }
}

// One chunk of n <= kSegmentChunk frequencies at offset y0. The scratch arrays never overlap each
// other or the kernel (MRI_IVDEP: GCC does not vectorise the four-output loop through ten pointers
// otherwise, as it would have to check every pair at run time).
MRI_ALWAYS_INLINE void product_chunk(int L, std::int64_t y0, std::int64_t n, const float *kernel,
                                     std::complex<float> *const *lines, float *scratch) {
  constexpr std::int64_t C = kSegmentChunk;
  float *__restrict xr = scratch;
  float *__restrict xi = xr + L * C;
  float *__restrict zr = xi + L * C;
  float *__restrict zi = zr + L * C;
  split(L, y0, n, lines, xr, xi);
  std::fill_n(zr, 2 * L * C, 0.0f); // zr and zi
  const float *k = kernel;
  for (int l = 0; l < L; ++l) {
    float *__restrict zrl = zr + l * C;
    float *__restrict zil = zi + l * C;
    const float *__restrict xrl = xr + l * C;
    const float *__restrict xil = xi + l * C;
    {
      const float *__restrict kr = k;
      const float *__restrict ki = k + C;
MRI_IVDEP
      for (std::int64_t j = 0; j < n; ++j) {
        zrl[j] += kr[j] * xrl[j] - ki[j] * xil[j];
        zil[j] += kr[j] * xil[j] + ki[j] * xrl[j];
      }
      k += 2 * C;
    }
    for (int lp = l + 1; lp < L; ++lp, k += 2 * C) {
      const float *__restrict kr = k;
      const float *__restrict ki = k + C;
      float *__restrict zrp = zr + lp * C;
      float *__restrict zip = zi + lp * C;
      const float *__restrict xrp = xr + lp * C;
      const float *__restrict xip = xi + lp * C;
MRI_IVDEP
      for (std::int64_t j = 0; j < n; ++j) {
        zrl[j] += kr[j] * xrp[j] - ki[j] * xip[j]; // z_l  += K_ll' x_l'
        zil[j] += kr[j] * xip[j] + ki[j] * xrp[j];
        zrp[j] += kr[j] * xrl[j] + ki[j] * xil[j]; // z_l' += conj(K_ll') x_l
        zip[j] += kr[j] * xil[j] - ki[j] * xrl[j];
      }
    }
  }
  join(L, y0, n, zr, zi, lines);
}

MRI_ALWAYS_INLINE void product(int L, int coils, std::int64_t length, const float *kernel, std::complex<float> *const *lines,
                               float *scratch) {
  const std::int64_t chunk_floats = segment_kernel_chunk(L);
  for (std::int64_t y0 = 0; y0 < length; y0 += kSegmentChunk, kernel += chunk_floats)
    for (int c = 0; c < coils; ++c)
      product_chunk(L, y0, std::min(kSegmentChunk, length - y0), kernel, lines + c * L, scratch);
}

// 16 floats (one AVX-512 register where the entry point is compiled for it).
using Lanes = float __attribute__((vector_size(64)));
constexpr std::int64_t kLanes = 16;
MRI_ALWAYS_INLINE Lanes load_lanes(const float *p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
MRI_ALWAYS_INLINE void store_lanes(float *p, Lanes v) { std::memcpy(p, &v, sizeof v); }

// A whole chunk for a fixed L, register-blocked: 16 frequencies of all L inputs held in 2L
// registers, each output summed over l' in two more (per 16 frequencies: 4 L^2 multiply-adds,
// 2 L^2 kernel loads, 2 L stores, against product_chunk's L(L+1)/2 x 4 stores). K_l'l for l' < l
// is read as conj(K_ll'). 2L + 4 registers: AVX-512's 32 hold them up to L = 8.
template <int L>
MRI_ALWAYS_INLINE void product_chunk_blocked(std::int64_t y0, const float *kernel, std::complex<float> *const *lines, float *scratch) {
  constexpr std::int64_t C = kSegmentChunk;
  float *__restrict xr = scratch;
  float *__restrict xi = xr + L * C;
  float *__restrict zr = xi + L * C;
  float *__restrict zi = zr + L * C;
  split(L, y0, C, lines, xr, xi);
  for (std::int64_t j = 0; j < C; j += kLanes) {
    Lanes ar[L], ai[L];
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l) {
      ar[l] = load_lanes(xr + l * C + j);
      ai[l] = load_lanes(xi + l * C + j);
    }
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l) {
      Lanes sr = {}, si = {};
#pragma GCC unroll 8
      for (int lp = 0; lp < L; ++lp) {
        const float *k = kernel + static_cast<std::int64_t>(lp >= l ? segment_pair(L, l, lp) : segment_pair(L, lp, l)) * 2 * C + j;
        const Lanes kr = load_lanes(k), ki = load_lanes(k + C);
        if (lp >= l) {
          sr += kr * ar[lp] - ki * ai[lp];
          si += kr * ai[lp] + ki * ar[lp];
        } else {
          sr += kr * ar[lp] + ki * ai[lp];
          si += kr * ai[lp] - ki * ar[lp];
        }
      }
      store_lanes(zr + l * C + j, sr);
      store_lanes(zi + l * C + j, si);
    }
  }
  join(L, y0, C, zr, zi, lines);
}

// product() with the register-blocked chunks where L is 2 .. 8 and the chunk whole.
MRI_ALWAYS_INLINE void product_blocked(int L, int coils, std::int64_t length, const float *kernel,
                                       std::complex<float> *const *lines, float *scratch) {
  const std::int64_t chunk_floats = segment_kernel_chunk(L);
  for (std::int64_t y0 = 0; y0 < length; y0 += kSegmentChunk, kernel += chunk_floats)
    for (int c = 0; c < coils; ++c) {
      std::complex<float> *const *coil = lines + c * L;
      if (length - y0 < kSegmentChunk) {
        product_chunk(L, y0, length - y0, kernel, coil, scratch);
        continue;
      }
      switch (L) {
      case 2: product_chunk_blocked<2>(y0, kernel, coil, scratch); break;
      case 3: product_chunk_blocked<3>(y0, kernel, coil, scratch); break;
      case 4: product_chunk_blocked<4>(y0, kernel, coil, scratch); break;
      case 5: product_chunk_blocked<5>(y0, kernel, coil, scratch); break;
      case 6: product_chunk_blocked<6>(y0, kernel, coil, scratch); break;
      case 7: product_chunk_blocked<7>(y0, kernel, coil, scratch); break;
      case 8: product_chunk_blocked<8>(y0, kernel, coil, scratch); break;
      default: product_chunk(L, y0, kSegmentChunk, kernel, coil, scratch);
      }
    }
}

void product_generic(int L, int coils, std::int64_t length, const float *kernel, std::complex<float> *const *lines, float *scratch) {
  product(L, coils, length, kernel, lines, scratch);
}

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
#define MRI_SEGMENT_PRODUCT_X86 1
__attribute__((target("avx2,fma"))) void product_avx2(int L, int coils, std::int64_t length, const float *kernel,
                                                      std::complex<float> *const *lines, float *scratch) {
  product(L, coils, length, kernel, lines, scratch);
}
__attribute__((target("avx512f,avx512vl,avx2,fma"))) void product_avx512(int L, int coils, std::int64_t length, const float *kernel,
                                                                         std::complex<float> *const *lines, float *scratch) {
  product_blocked(L, coils, length, kernel, lines, scratch);
}
#else
#define MRI_SEGMENT_PRODUCT_X86 0
#endif

} // namespace

SegmentProduct select_segment_product() {
#if MRI_SEGMENT_PRODUCT_X86
  switch (select_cpu_isa("MRI_SEGMENT_PRODUCT", /*avx512_needs_vl=*/true)) {
  case CpuIsa::Avx512: return product_avx512;
  case CpuIsa::Avx2: return product_avx2;
  case CpuIsa::Generic: break;
  }
#endif
  return product_generic;
}

} // namespace mri::detail
