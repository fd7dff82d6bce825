# Finds meshplan's dependencies (all from Debian packages); a missing one stops configuration
# with the name of the package that provides it.
include_guard(GLOBAL)
find_package(PkgConfig QUIET)

macro(meshplan_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "meshplan: ${what} not found. Install it with: apt-get install ${package}\n"
                        "(or run 'make test' as root, which installs every missing package)")
  endif()
endmacro()

find_package(FlatBuffers CONFIG QUIET)
meshplan_require(FlatBuffers_FOUND "FlatBuffers library" libflatbuffers-dev)
find_program(MESHPLAN_FLATC flatc)
meshplan_require(MESHPLAN_FLATC "flatc (FlatBuffers compiler)" flatbuffers-compiler)

find_package(xxHash QUIET)
meshplan_require(xxHash_FOUND "xxHash" libxxhash-dev)

# mimalloc serves the tools only (they link it and replace operator new/delete); the libraries
# never link an allocator, so a program embedding them keeps its own.
find_package(mimalloc CONFIG QUIET)
meshplan_require(mimalloc_FOUND "mimalloc" libmimalloc-dev)

# CLI11 (header only) parses every tool's command line: one convention for all of them.
find_package(CLI11 CONFIG QUIET)
meshplan_require(CLI11_FOUND "CLI11" libcli11-dev)

find_package(doctest CONFIG QUIET)
meshplan_require(doctest_FOUND "doctest" doctest-dev)

find_package(benchmark CONFIG QUIET)
meshplan_require(benchmark_FOUND "Google Benchmark" libbenchmark-dev)

# The Python module (python/): pybind11 against Debian's python3 (/usr/bin/python3 unless
# Python_EXECUTABLE is given: a PATH python from pyenv or a venv lacks Debian's numpy and pytest).
if(MESHPLAN_PYTHON)
  if(NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
    set(Python_EXECUTABLE /usr/bin/python3)
  endif()
  find_package(Python 3 COMPONENTS Interpreter Development.Module QUIET)
  meshplan_require(Python_FOUND "Python 3 and its headers" python3-dev)
  set(PYBIND11_FINDPYTHON ON)
  find_package(pybind11 CONFIG QUIET)
  meshplan_require(pybind11_FOUND "pybind11" pybind11-dev)
  foreach(pair "numpy;python3-numpy" "pytest;python3-pytest")
    list(GET pair 0 module)
    list(GET pair 1 package)
    execute_process(COMMAND ${Python_EXECUTABLE} -c "import ${module}" RESULT_VARIABLE rc
                    OUTPUT_QUIET ERROR_QUIET)
    if(rc EQUAL 0)
      set(have_module TRUE)
    else()
      set(have_module FALSE)
    endif()
    meshplan_require(have_module "Python module ${module} (for ${Python_EXECUTABLE})" ${package})
  endforeach()
endif()
