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

find_package(doctest CONFIG QUIET)
meshplan_require(doctest_FOUND "doctest" doctest-dev)

find_package(benchmark CONFIG QUIET)
meshplan_require(benchmark_FOUND "Google Benchmark" libbenchmark-dev)

