# Script mode: writes OUT, a C++ source defining `std::string_view NAME` holding the
# concatenation of INPUTS with their `include "...";` lines removed, so that a schema and the
# schemas it includes can be parsed from memory by flatbuffers::Parser.
set(text "")
foreach(f ${INPUTS})
  file(READ "${f}" part)
  string(REGEX REPLACE "include \"[^\"]*\";" "" part "${part}")
  string(APPEND text "${part}\n")
endforeach()
file(WRITE "${OUT}" "// Generated from ${INPUTS}; do not edit.\n#include <string_view>\nnamespace meshplan::schemas {\nextern const std::string_view ${NAME};\nconst std::string_view ${NAME} = R\"MPSCHEMA(${text})MPSCHEMA\";\n}  // namespace meshplan::schemas\n")
