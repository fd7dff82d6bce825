# Fails if meshplan::runtime's link interface names the planner or a backend (the emulator, the
# MPI mesh), if the meshplan-run binary holds any meshplan::planner symbol, or if the runtime
# library defines or uses any backend symbol. meshplan-compile must hold planner symbols and the
# C API's library (which registers the emulator) backend ones, else the nm checks prove nothing.
file(READ "${LINKS}" links)
if(links MATCHES "planner")
  message(FATAL_ERROR "meshplan::runtime links the planner: ${links}")
endif()
if(links MATCHES "emulator|device_mpi")
  message(FATAL_ERROR "meshplan::runtime links a backend: ${links}")
endif()

# Fails if `file` holds a symbol matching `forbidden` (naming `what`), or if `control` holds none
# matching `expected` (the check would be blind).
function(check_symbols file forbidden what control expected)
  execute_process(COMMAND ${NM} -C "${file}" OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${file}")
  endif()
  string(REGEX MATCHALL "${forbidden}" hits "${syms}")
  if(hits)
    list(REMOVE_DUPLICATES hits)
    message(FATAL_ERROR "${file} holds ${what} symbols: ${hits}")
  endif()
  execute_process(COMMAND ${NM} -C "${control}" OUTPUT_VARIABLE control_syms)
  if(NOT control_syms MATCHES "${expected}")
    message(FATAL_ERROR "control failed: ${control} shows no ${expected}, so the ${what} check is blind")
  endif()
endfunction()

check_symbols("${RUNTIME_LIBRARY}"
  "meshplan::device::(Emulated[A-Za-z]*|MpiMesh|register_[a-z]+_backend)" "backend"
  "${BACKEND_USER_LIBRARY}" "meshplan::device::register_emulator_backend")
check_symbols("${RUNTIME_BINARY}" "meshplan::planner::[A-Za-z_]+" "planner"
  "${PLANNER_BINARY}" "meshplan::planner::")
message(STATUS "runtime link interface: ${links}meshplan-run holds no meshplan::planner symbols; the runtime library no backend symbols")
