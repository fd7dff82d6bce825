// Text pieces of a stored plan's tensors, shared by the HTML report and the Graphviz output.
#pragma once

#include <string>

#include "meshplan/schemas/schemas.hpp"

namespace meshplan::planner {

/// "64x256".
inline std::string shape_of(const fb::TensorPlan* t) {
  std::string s;
  for (uint32_t i = 0; i < t->shape()->size(); ++i)
    s += (i ? "x" : "") + std::to_string(t->shape()->Get(i));
  return s;
}

/// The tensor's name, or "?" when the plan stores none.
inline std::string name_of(const fb::TensorPlan* t) {
  return t->name() ? t->name()->str() : "?";
}

}  // namespace meshplan::planner
