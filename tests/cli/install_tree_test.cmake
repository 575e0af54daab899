# ctest install-tree: installs the built SDK into a scratch prefix and runs the installed `mri`
# from there with LD_LIBRARY_PATH empty, as a user who installed to ~/opt/mri would: `--version`,
# then a small phantom -> recon whose output must exist. `ldd` must resolve libmri and libmri_io
# from the prefix (RPATH $ORIGIN/../lib), not from the build tree. The prefix is removed at the end,
# passed or failed.
# Arguments: -DBUILD_DIR=<build> -DWORK_DIR=<scratch folder> -DLIBDIR=<CMAKE_INSTALL_LIBDIR>
#            -DBINDIR=<CMAKE_INSTALL_BINDIR>
set(prefix ${WORK_DIR}/prefix)
set(mri ${prefix}/${BINDIR}/mri)
set(failure "")

# Runs the command with LD_LIBRARY_PATH empty in WORK_DIR; a failure is recorded, the rest skipped.
function(run_installed what)
  if(failure)
    return()
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH= OMP_WAIT_POLICY=passive ${ARGN}
                  WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${what}: exit ${rc}\n${out}${err}")
  if(NOT rc EQUAL 0)
    set(failure "${what} failed (exit ${rc})" PARENT_SCOPE)
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  set(failure "cmake --install failed: ${rc}")
endif()

run_installed("mri --version" ${mri} --version)
run_installed("ldd mri" ldd ${mri})
if(NOT failure)
  get_filename_component(libdir ${prefix}/${LIBDIR} REALPATH)
  foreach(lib libmri.so libmri_io.so)
    string(REGEX MATCH "${lib}[^\n]*=> ([^ \n]*)" line "${last_output}")
    get_filename_component(found "${CMAKE_MATCH_1}" DIRECTORY)
    get_filename_component(found "${found}" REALPATH) # ldd prints <prefix>/bin/../lib/...
    if(NOT found STREQUAL libdir)
      set(failure "ldd ${mri}: ${lib} resolves to '${CMAKE_MATCH_1}', not into ${libdir}")
    endif()
  endforeach()
endif()
run_installed("mri phantom" ${mri} phantom --matrix 32,32 --traj radial --spokes 32 --readout 64 --snr 30 --out raw.h5)
run_installed("mri recon" ${mri} recon --in raw.h5 --iterations 5 --quiet --out x.nii.gz)
if(NOT failure AND NOT EXISTS ${WORK_DIR}/x.nii.gz)
  set(failure "mri recon wrote no x.nii.gz")
endif()

file(REMOVE_RECURSE ${WORK_DIR})
if(failure)
  message(FATAL_ERROR "${failure}")
endif()
