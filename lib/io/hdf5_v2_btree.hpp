#pragma once
// A version 2 B-tree (a dense group's index of its links by name hash or creation order) checked
// in the file's bytes before HDF5 1.10.8 walks it (hdf5_group_guard.hpp). A node does not store
// its own record count: HDF5 takes it from the parent (the root's from the header) and verifies a
// node's checksum over that many records, so a count past what the node holds reads past it
// before any check. It sizes its per-level tables by the header's depth and builds a table of the
// header's total record count when it iterates.
#include <cstddef>
#include <cstdint>
#include <functional>

#include "hdf5_object_header.hpp"

namespace mri::detail {

// Walks the B-tree whose header is at `address`, of record `type` and `record_size` bytes, calling
// record(bytes) for each record. Refused: a header or node that is not one of that type inside the
// file, a depth that nodes of its size cannot hold, a node with more records than it holds or
// reached twice, and record counts (a child's total, the tree's) that are not what the nodes hold.
// `what` names the tree ("its link name index").
void walk_v2_btree(FileBytes &bytes, const Format &format, std::uint64_t address, unsigned type,
                   std::size_t record_size, const char *what, const std::function<void(const unsigned char *)> &record);

} // namespace mri::detail
