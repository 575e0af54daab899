#pragma once
// `--report FILE.json`: every ReconReport field, per reconstruction, with nlohmann-json.
#include <nlohmann/json.hpp>

#include <string>

#include "common.hpp"

namespace mri::cli {

nlohmann::json to_json(const ReconReport &report);
nlohmann::json to_json(const IsmrmrdData &data); // header facts, counts, units, notes (no samples)
// Writes the document through a temporary file renamed at the end; IoError on failure.
void write_json(const std::string &path, const nlohmann::json &document);

} // namespace mri::cli
