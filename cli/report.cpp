#include "report.hpp"

#include <fstream>

namespace mri::cli {

namespace {

// One object per device used (ReconReport::device_seconds): [] on the CPU.
nlohmann::json device_seconds_json(const std::vector<DevicePhaseSeconds> &devices) {
  nlohmann::json out = nlohmann::json::array();
  for (const DevicePhaseSeconds &d : devices)
    out.push_back({{"device", d.device}, {"fhd_seconds", d.fhd_seconds}, {"q_seconds", d.q_seconds}, {"cg_seconds", d.cg_seconds}});
  return out;
}

} // namespace

nlohmann::json to_json(const ReconReport &r) {
  return {{"backend", to_string(r.backend)},
          {"backend_note", r.backend_note},
          {"wrapped_samples", r.wrapped_samples},
          {"normal", to_string(r.normal)},
          {"method", to_string(r.method)},
          {"method_note", r.method_note},
          {"acquired_coils", r.acquired_coils},
          {"coils", r.coils},
          {"coil_energy_kept", r.coil_energy_kept},
          {"maps", r.maps},
          {"coil_seconds", r.coil_seconds},
          {"setup_seconds", r.setup_seconds},
          {"transfer_seconds", r.transfer_seconds},
          {"fhd_seconds", r.fhd_seconds},
          {"q_seconds", r.q_seconds},
          {"fft_setup_seconds", r.fft_setup_seconds},
          {"cg_seconds", r.cg_seconds},
          {"total_seconds", r.total_seconds},
          {"iterations", r.iterations},
          {"status", to_string(r.status)},
          {"residuals", r.residuals},
          {"solver", r.solver},
          {"objective", r.objective},
          {"step", r.step},
          {"lipschitz", r.lipschitz},
          {"lipschitz_cached", r.lipschitz_cached},
          {"rejected_steps", r.rejected_steps},
          {"step_raises", r.step_raises},
          {"data_scale", r.data_scale},
          {"q_cache", to_string(r.q_cache)},
          {"q_cache_message", r.q_cache_message},
          {"q_cache_file", r.q_cache_file.string()},
          {"device_bytes", r.device_bytes},
          {"toeplitz_fft", r.toeplitz_fft},
          {"q_method", r.q_method},
          {"device_seconds", device_seconds_json(r.device_seconds)},
          {"device_note", r.device_note},
          {"exchange_seconds", r.exchange_seconds},
          {"offresonance", r.offresonance},
          {"segments", r.segments},
          {"segment_interpolator", r.segment_interpolator},
          {"segment_error", r.segment_error},
          {"segment_max_error", r.segment_max_error},
          {"offresonance_note", r.offresonance_note}};
}

nlohmann::json to_json(const IsmrmrdData &d) {
  const IsmrmrdHeader &h = d.header;
  const IsmrmrdCounts &c = d.counts;
  return {{"encoded_matrix", h.encoded_matrix},
          {"recon_matrix", h.recon_matrix},
          {"encoded_fov_mm", h.encoded_fov_mm},
          {"recon_fov_mm", h.recon_fov_mm},
          {"trajectory", h.trajectory},
          {"coils", h.coils},
          {"encodings", h.encodings},
          {"items", d.items.size()},
          {"acquisitions",
           {{"total", c.acquisitions}, {"imaging", c.imaging}, {"noise", c.noise}, {"navigation", c.navigation},
            {"other_skipped", c.other}, {"other_encoding_skipped", c.other_encoding}}},
          {"trajectory_units", to_string(d.units)},
          {"max_abs_k_in_file", d.max_abs_k},
          {"notes", d.notes}};
}

void write_json(const std::string &path, const nlohmann::json &document) {
  replace_atomically(path, [&](const std::filesystem::path &tmp) {
    std::ofstream out(tmp, std::ios::trunc);
    out << document.dump(2) << '\n';
    if (!out.flush()) throw IoError(path + ": cannot write the report");
  });
}

} // namespace mri::cli
