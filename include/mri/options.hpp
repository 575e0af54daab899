#pragma once
#include <string>

// Where and how an operator runs. The CUDA kernel policies are the F^H D stages (Stone et al.
// 2008; docs/architecture.md), the optimisation stages of the F^H D kernel; the CPU ignores the
// policy.
//
// Thread safety: plain values; cuda_available() may be called from any thread.
namespace mri {

enum class Backend {
  Cpu,
  Cuda, // throws Unsupported when the build has no CUDA backend or the machine no device
  Auto  // Cuda when a device is present, else Cpu
};

enum class Precision {
  Float32, // fast path: float32 storage, accurate trig, float accumulation per chunk
  Float64  // reference: sums in double (CPU: the direct O(N*M) sum; CUDA: the separable-gemm
           // policy, the same sum as complex-double matrix products on the tensor cores)
};

// The F^H D stages (one CUDA file each), plus ours (Tuned; and
// SeparableGemm, the only policy that computes in double: what Precision::Float64 runs on CUDA).
enum class KernelPolicy { Auto, ScatterAtomic, Gather, Register, ConstantChunked, SfuTrig, Tuned, SeparableGemm };

struct OperatorOptions {
  Backend backend = Backend::Cpu;
  Precision precision = Precision::Float32;
  KernelPolicy policy = KernelPolicy::Auto;
};

const char *to_string(Backend);
const char *to_string(Precision);
const char *to_string(KernelPolicy);

// True when the CUDA backend plugin (libmri_cuda.so, loaded on the first call) is found, of this
// build of mri, and a CUDA device is usable.
bool cuda_available();
// Why cuda_available() is false (no driver, the plugin's dlerror, a version mismatch, no
// device); empty when it is true.
std::string cuda_unavailable_reason();

} // namespace mri
