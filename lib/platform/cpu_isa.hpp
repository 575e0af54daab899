#pragma once
// Which vector extension a family of CPU kernels runs (lib/exact/separable_dft.cpp,
// lib/nufft/gridding_cpu.cpp): the best this CPU has, lowered (never raised) by the family's
// environment variable, so that the tests can run each path the machine supports.
#include <cstdlib>
#include <string_view>

namespace mri::detail {

enum class CpuIsa { Generic, Avx2, Avx512 };

// cap_env: the variable's name; "generic", "avx2" or "avx512" cap the choice, other values are
// ignored. avx512_needs_vl: the family's AVX-512 code also uses AVX-512VL instructions.
inline CpuIsa select_cpu_isa(const char *cap_env, bool avx512_needs_vl) {
  CpuIsa best = CpuIsa::Generic;
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && (!avx512_needs_vl || __builtin_cpu_supports("avx512vl")))
    best = CpuIsa::Avx512;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    best = CpuIsa::Avx2;
#else
  (void)avx512_needs_vl;
#endif
  if (const char *env = std::getenv(cap_env)) {
    const std::string_view v(env);
    CpuIsa want = best;
    if (v == "generic") want = CpuIsa::Generic;
    else if (v == "avx2") want = CpuIsa::Avx2;
    else if (v == "avx512") want = CpuIsa::Avx512;
    if (static_cast<int>(want) < static_cast<int>(best)) best = want;
  }
  return best;
}

} // namespace mri::detail
