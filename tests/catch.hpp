#pragma once
// Catch2 v2 (Debian 12, CI) and v3 (Ubuntu 24.04, the GPU machine) behind one include.
#include <string>
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
namespace mri::test {
inline auto contains(const std::string &s) { return Catch::Matchers::ContainsSubstring(s); }
} // namespace mri::test
#else
#include <catch2/catch.hpp>
namespace mri::test {
inline auto contains(const std::string &s) { return Catch::Matchers::Contains(s); }
} // namespace mri::test
#endif
