#pragma once
// What the acquisitions' headers say before any sample is read: which acquisitions are image
// data, the items they make (read_ismrmrd's order), each item's size and geometry, and after
// which acquisition each item is complete, so that a streaming reader can hand it over then.
#include <ismrmrd/ismrmrd.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "mri/io/geometry.hpp"

namespace mri::detail {

enum class AcquisitionKind { Imaging, Noise, Navigation, Other };
AcquisitionKind classify(std::uint64_t flags);

// Slice, contrast, repetition, average, phase, set: the items' order.
using ItemKey = std::tuple<int, int, int, int, int, int>;

struct PlannedItem {
  ItemKey key;
  std::size_t per_coil = 0; // samples per coil, after the discarded ones
  std::optional<ScannerGeometry> geometry; // of its first acquisition
};

struct IsmrmrdPlan {
  static constexpr std::uint32_t kNoItem = UINT32_MAX;
  std::vector<PlannedItem> items;  // in counter order
  std::vector<std::uint32_t> item_of; // per acquisition: its item, or kNoItem (not image data of the first encoding)
  // (acquisition, item), sorted: the item is complete once that acquisition is read, its own
  // last and every noise scan (the coils' covariance comes before any item).
  std::vector<std::pair<std::size_t, std::size_t>> completions;
  std::vector<std::size_t> starts; // the items in the order of their first acquisitions
  int coils = 0; // active channels of the first noise or image acquisition (0: none)
};

// Samples an acquisition contributes per coil, after the discarded ones.
int kept_samples(int samples, int pre, int post);

IsmrmrdPlan plan_items(const std::vector<ISMRMRD::ISMRMRD_AcquisitionHeader> &heads);

} // namespace mri::detail
