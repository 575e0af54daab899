# Finds what the Python package `mri` (python/, issue 44) builds with: Debian's Python 3 and its
# NumPy-era headers (python3-dev) and pybind11 (pybind11-dev), all from scripts/install-deps.sh.
# Debian's interpreter is asked for by path (MRI_PYTHON_EXECUTABLE): a pyenv or virtualenv python
# first on PATH has another ABI and site-packages than the one the package is installed for.
# Sets MRI_PYTHON_FOUND, and Python::Module / pybind11 targets where found.
set(MRI_PYTHON_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "The Python 3 the package mri is built for (Debian's)")
set(MRI_PYTHON_FOUND OFF)
if(EXISTS "${MRI_PYTHON_EXECUTABLE}")
  set(Python_EXECUTABLE "${MRI_PYTHON_EXECUTABLE}")
  find_package(Python 3.8 COMPONENTS Interpreter Development.Module QUIET)
  if(Python_FOUND)
    # Python_FOUND set first: pybind11 uses this FindPython result instead of its own search.
    find_package(pybind11 2.6 CONFIG QUIET)
    if(pybind11_FOUND)
      set(MRI_PYTHON_FOUND ON)
    endif()
  endif()
endif()
if(MRI_PYTHON_FOUND)
  message(STATUS "Python package mri: can build (${Python_EXECUTABLE} ${Python_VERSION}, pybind11 ${pybind11_VERSION})")
else()
  message(STATUS "Python package mri: not built (needs ${MRI_PYTHON_EXECUTABLE} with python3-dev and pybind11-dev: scripts/install-deps.sh)")
endif()
