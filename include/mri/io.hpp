#pragma once
// libmri_io (target mri::io): ISMRMRD raw data in and out, NIfTI images in and out. A library of
// its own so that programs linking only libmri do not load HDF5 and its dependencies.
#include "mri/io/geometry.hpp"
#include "mri/io/ismrmrd.hpp"
#include "mri/io/nifti.hpp"
