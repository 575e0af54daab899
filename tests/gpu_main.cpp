// main() for the GPU tests: without a usable CUDA device they print why and exit 77, which
// ctest reports as "skipped" (SKIP_RETURN_CODE).
#include <cstdio>

#define CATCH_CONFIG_RUNNER // Catch2 v2: this TU provides main(); v3 ignores it
#include "catch.hpp"
#include "mri/options.hpp"

int main(int argc, char **argv) {
  if (!mri::cuda_available()) {
    std::puts("SKIPPED: no usable CUDA device on this machine (GPU tests run on the device machine)");
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
