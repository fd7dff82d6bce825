// The graph IR every importer produces and every planner pass reads: values with shape and dtype,
// program arguments, ops with operands, results and typed attributes, and outputs.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "meshplan/device/types.hpp"
#include "meshplan/schemas/error.hpp"

namespace meshplan::planner {

using device::DType;
using device::OpKind;
using ValueId = uint32_t;
using OpId = uint32_t;
inline constexpr OpId kNoOp = std::numeric_limits<OpId>::max();

/// How a program argument reaches the device (values match fb::ArgKind).
enum class ArgKind : uint8_t { input = 0, parameter = 1, constant = 2 };
std::string_view arg_kind_name(ArgKind kind);

struct Value {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::bf16;
  OpId producer = kNoOp;  ///< kNoOp for program arguments.
  int argument = -1;      ///< Index in Graph::arguments, or -1.
  ArgKind kind = ArgKind::input;
  std::vector<float> data;  ///< Constants only: row-major values.
};

/// A typed attribute value.
using AttrValue =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;

struct Attribute {
  std::string name;
  AttrValue value;
};

struct Op {
  std::string name;
  OpKind kind = OpKind::add;
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  std::vector<Attribute> attributes;  ///< Sorted by name.

  const Attribute* attribute(std::string_view attr_name) const;
};

/// A validated graph: ops in a topological order, every value defined once, shapes inferred.
/// Plain data; build one with import_graph_json() or by hand followed by validate().
struct Graph {
  std::string name;
  std::vector<Value> values;
  std::vector<ValueId> arguments;
  std::vector<Op> ops;
  std::vector<ValueId> outputs;

  /// Deterministic text dump (one line per argument, op and output, in order).
  std::string print() const;
};

/// Checks a graph assembled by hand or by an importer and completes it: ops reordered
/// topologically, result shapes and dtypes inferred and checked against any declared ones.
/// Errors name the op and values: unknown attribute, wrong operand count, shape or dtype
/// mismatch, undefined value, cycle, duplicate name.
Status validate(Graph& graph);

/// The op config implied by an op's attributes (transpose_a, transpose_b, activation).
Result<device::OpConfig> op_config(const Op& op);

/// "[4x8]" style text of a shape.
std::string shape_string(std::span<const int64_t> shape);

}  // namespace meshplan::planner
