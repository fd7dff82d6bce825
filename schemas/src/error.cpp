// Names of error codes.
#include "meshplan/schemas/error.hpp"

namespace meshplan {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
      return "invalid_argument";
    case ErrorCode::not_found:
      return "not_found";
    case ErrorCode::incompatible:
      return "incompatible";
    case ErrorCode::resource_exhausted:
      return "resource_exhausted";
    case ErrorCode::corrupt:
      return "corrupt";
    case ErrorCode::io:
      return "io";
    case ErrorCode::unimplemented:
      return "unimplemented";
    case ErrorCode::internal:
      return "internal";
  }
  return "unknown";
}

std::string Error::to_string() const {
  return std::string(meshplan::to_string(code)) + ": " + message;
}

}  // namespace meshplan
