// The acquisitions' time stamps of an ISMRMRD file, per item (include/mri/io/ismrmrd.hpp): the
// acquisitions' headers alone, through the reader's guards (the same checks before HDF5 reads).
#include "mri/io/ismrmrd.hpp"

#include <ismrmrd/ismrmrd.h>

#include <hdf5.h>

#include "ismrmrd_blocks.hpp"
#include "ismrmrd_common.hpp"
#include "ismrmrd_guard.hpp"
#include "ismrmrd_plan.hpp"
#include "mri/error.hpp"

namespace mri {

std::vector<IsmrmrdTimeStamps> read_ismrmrd_time_stamps(const std::filesystem::path &path,
                                                        const IsmrmrdReadOptions &options) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) detail::ismrmrd_io_error(path, "no such file");
  if (options.group.empty() || options.group.find('/') != std::string::npos)
    detail::invalid_argument("IsmrmrdReadOptions::group", options.group, "one HDF5 group name, without '/'");
  const auto lock = detail::lock_hdf5(); // held until the file is closed (declared first)
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  if (H5Fis_hdf5(path.c_str()) <= 0) detail::ismrmrd_io_error(path, "not an HDF5 file (ISMRMRD raw data is HDF5)");
  const detail::IsmrmrdGuard guard(path, options.group);
  detail::AcquisitionBlocks acquisitions(path, options.group);
  const std::vector<ISMRMRD::ISMRMRD_AcquisitionHeader> heads = acquisitions.headers();
  const detail::IsmrmrdPlan plan = detail::plan_items(heads);
  std::vector<IsmrmrdTimeStamps> stamps(plan.items.size());
  for (std::size_t i = 0; i < heads.size(); ++i) {
    if (plan.item_of[i] == detail::IsmrmrdPlan::kNoItem) continue;
    IsmrmrdTimeStamps &s = stamps[plan.item_of[i]];
    s.acquisition.push_back(heads[i].acquisition_time_stamp);
    s.physiology.push_back({heads[i].physiology_time_stamp[0], heads[i].physiology_time_stamp[1],
                            heads[i].physiology_time_stamp[2]});
  }
  return stamps;
}

} // namespace mri
