#include "ismrmrd_plan.hpp"

#include <algorithm>
#include <map>

namespace mri::detail {
namespace {

ItemKey key_of(const ISMRMRD::ISMRMRD_EncodingCounters &idx) {
  return {idx.slice, idx.contrast, idx.repetition, idx.average, idx.phase, idx.set};
}

// The acquisition's directions and position; none when a direction is zero (the file does not say).
std::optional<ScannerGeometry> geometry_of(const ISMRMRD::ISMRMRD_AcquisitionHeader &h) {
  ScannerGeometry g;
  for (int a = 0; a < 3; ++a) {
    g.read_dir[a] = h.read_dir[a], g.phase_dir[a] = h.phase_dir[a];
    g.slice_dir[a] = h.slice_dir[a], g.position[a] = h.position[a];
  }
  const auto zero = [](const std::array<double, 3> &v) { return v[0] == 0 && v[1] == 0 && v[2] == 0; };
  if (zero(g.read_dir) || zero(g.phase_dir) || zero(g.slice_dir)) return std::nullopt;
  return g;
}

bool is_image_data(const ISMRMRD::ISMRMRD_AcquisitionHeader &h) {
  return classify(h.flags) == AcquisitionKind::Imaging && h.encoding_space_ref == 0;
}

} // namespace

AcquisitionKind classify(std::uint64_t flags) {
  const auto set = [flags](std::uint64_t flag) { return ISMRMRD::ismrmrd_is_flag_set(flags, flag); };
  if (set(ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT)) return AcquisitionKind::Noise;
  if (set(ISMRMRD::ISMRMRD_ACQ_IS_NAVIGATION_DATA)) return AcquisitionKind::Navigation;
  for (const auto flag : {ISMRMRD::ISMRMRD_ACQ_IS_PHASECORR_DATA, ISMRMRD::ISMRMRD_ACQ_IS_DUMMYSCAN_DATA,
                          ISMRMRD::ISMRMRD_ACQ_IS_HPFEEDBACK_DATA, ISMRMRD::ISMRMRD_ACQ_IS_RTFEEDBACK_DATA,
                          ISMRMRD::ISMRMRD_ACQ_IS_PHASE_STABILIZATION_REFERENCE,
                          ISMRMRD::ISMRMRD_ACQ_IS_PHASE_STABILIZATION})
    if (set(flag)) return AcquisitionKind::Other;
  return AcquisitionKind::Imaging;
}

int kept_samples(int samples, int pre, int post) { return std::max(0, samples - pre - post); }

IsmrmrdPlan plan_items(const std::vector<ISMRMRD::ISMRMRD_AcquisitionHeader> &heads) {
  struct Seen {
    std::size_t first = 0, last = 0, per_coil = 0;
  };
  std::map<ItemKey, Seen> seen; // ordered by the counters: the items' order
  std::size_t last_noise = 0;
  std::optional<int> coils; // the reader checks every later acquisition against the first's
  IsmrmrdPlan plan;
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const auto &h = heads[i];
    const bool noise = classify(h.flags) == AcquisitionKind::Noise, image = is_image_data(h);
    if (noise) last_noise = i;
    if ((noise || image) && !coils) coils = h.active_channels;
    if (!image) continue;
    Seen &s = seen.try_emplace(key_of(h.idx), Seen{i, i, 0}).first->second;
    s.last = i;
    s.per_coil += static_cast<std::size_t>(kept_samples(h.number_of_samples, h.discard_pre, h.discard_post));
  }
  plan.coils = coils.value_or(0);
  std::map<ItemKey, std::uint32_t> index;
  for (const auto &[key, s] : seen) {
    index[key] = static_cast<std::uint32_t>(plan.items.size());
    plan.completions.emplace_back(std::max(s.last, last_noise), plan.items.size());
    plan.items.push_back({key, s.per_coil, geometry_of(heads[s.first])});
  }
  std::sort(plan.completions.begin(), plan.completions.end());
  std::vector<std::pair<std::size_t, std::size_t>> firsts; // (first acquisition, item)
  for (const auto &[key, s] : seen) firsts.emplace_back(s.first, index[key]);
  std::sort(firsts.begin(), firsts.end());
  for (const auto &f : firsts) plan.starts.push_back(f.second);
  plan.item_of.assign(heads.size(), IsmrmrdPlan::kNoItem);
  for (std::size_t i = 0; i < heads.size(); ++i)
    if (is_image_data(heads[i])) plan.item_of[i] = index[key_of(heads[i].idx)];
  return plan;
}

} // namespace mri::detail
