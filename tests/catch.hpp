#pragma once
// Catch2 v2 (Debian 12, CI) and v3 (Ubuntu 24.04, the GPU machine) behind one include.
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
