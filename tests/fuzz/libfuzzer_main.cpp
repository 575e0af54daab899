// libFuzzer's entry point for one harness of fuzz_targets.hpp, chosen at compile time by
// MRI_FUZZ_ENTRY (tests/fuzz/CMakeLists.txt builds one executable per harness).
#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return mri::fuzz::MRI_FUZZ_ENTRY(data, size);
}
