# Finds FFTW3 in single and double precision (Debian's libfftw3-dev) and defines
# FFTW::Float and FFTW::Double (with their OpenMP-threaded libraries when present).
find_path(FFTW_INCLUDE_DIR fftw3.h)
find_library(FFTW_DOUBLE_LIBRARY fftw3)
find_library(FFTW_FLOAT_LIBRARY fftw3f)
find_library(FFTW_FLOAT_OMP_LIBRARY fftw3f_omp)
find_library(FFTW_DOUBLE_OMP_LIBRARY fftw3_omp)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(FFTW REQUIRED_VARS FFTW_INCLUDE_DIR FFTW_DOUBLE_LIBRARY
                                  FFTW_FLOAT_LIBRARY FFTW_FLOAT_OMP_LIBRARY FFTW_DOUBLE_OMP_LIBRARY)
if(FFTW_FOUND AND NOT TARGET FFTW::Float)
  add_library(FFTW::Float UNKNOWN IMPORTED)
  set_target_properties(FFTW::Float PROPERTIES IMPORTED_LOCATION ${FFTW_FLOAT_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${FFTW_INCLUDE_DIR}
                        INTERFACE_LINK_LIBRARIES ${FFTW_FLOAT_OMP_LIBRARY})
  add_library(FFTW::Double UNKNOWN IMPORTED)
  set_target_properties(FFTW::Double PROPERTIES IMPORTED_LOCATION ${FFTW_DOUBLE_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${FFTW_INCLUDE_DIR}
                        INTERFACE_LINK_LIBRARIES ${FFTW_DOUBLE_OMP_LIBRARY})
endif()
mark_as_advanced(FFTW_INCLUDE_DIR FFTW_DOUBLE_LIBRARY FFTW_FLOAT_LIBRARY FFTW_FLOAT_OMP_LIBRARY
                 FFTW_DOUBLE_OMP_LIBRARY)
