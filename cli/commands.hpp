#pragma once
// The subcommands of `mri`, one file each: each registers its options on the app, with the
// checks of their values that need no file as the subcommand's final callback (they run while
// the command line is parsed), and returns what runs when it was chosen. app.cpp lists them.
#include "common.hpp"

namespace mri::cli {

Runner add_traj(CLI::App &app);    // cmd_traj.cpp
Runner add_phantom(CLI::App &app); // cmd_phantom.cpp
Runner add_nufft(CLI::App &app);   // cmd_nufft.cpp
Runner add_recon(CLI::App &app);   // cmd_recon.cpp
Runner add_sens(CLI::App &app);    // cmd_sens.cpp
Runner add_motion(CLI::App &app);  // cmd_motion.cpp
Runner add_fieldmap(CLI::App &app); // cmd_fieldmap.cpp

} // namespace mri::cli
