// The graph IR every importer produces and every planner pass reads: values with shape and dtype,
// program arguments, ops with operands, results and typed attributes, and outputs.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "meshplan/device/mesh_shard.hpp"
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

/// The mesh a per-device program runs on; 1x1 (the default) = a single-chip graph.
struct GraphMesh {
  int rows = 1, cols = 1;
  std::vector<std::string> axis_names;  ///< Shardy axis names, major first (may be empty).
  bool single_chip() const { return rows * cols == 1; }
  friend bool operator==(const GraphMesh&, const GraphMesh&) = default;
};

/// A validated graph: ops in a topological order, every value defined once, shapes inferred.
/// Plain data; build one with import_graph_json() or by hand followed by validate().
struct Graph {
  std::string name;
  std::vector<Value> values;
  std::vector<ValueId> arguments;
  std::vector<Op> ops;
  std::vector<ValueId> outputs;
  GraphMesh mesh;
  /// Parallel to `arguments` / `outputs` when mesh is not 1x1 (empty otherwise): how each host
  /// tensor maps onto the chips. Value shapes in the graph are ALWAYS the per-chip (local)
  /// shapes; the host (full) shape follows from device::mesh_shard_full_shape().
  std::vector<device::MeshShardSpec> argument_shards, output_shards;

  /// Deterministic text dump (one line per argument, op and output, in order).
  std::string print() const;
};

/// Checks a graph assembled by hand or by an importer and completes it: ops reordered
/// topologically, result shapes and dtypes inferred and checked against any declared ones.
/// Errors name the op and values: unknown attribute, wrong operand count, shape or dtype
/// mismatch, undefined value, cycle, duplicate name; for meshes: a collective in a 1x1 graph,
/// boundary shards missing, not parallel to arguments/outputs, or not fitting the local shapes.
Status validate(Graph& graph);

/// The op config implied by an op's attributes (transpose_a, transpose_b, activation, ...),
/// on `mesh` (collectives need it for their group sizes; other ops ignore it).
Result<device::OpConfig> op_config(const Op& op, const GraphMesh& mesh = {});

/// Host (full) shape of argument `index` (or output `index` when `output`): the local shape
/// mapped through its boundary shard; the local shape itself on a 1x1 graph.
Result<std::vector<int64_t>> boundary_full_shape(const Graph& graph, size_t index, bool output);

/// "[4x8]" style text of a shape.
std::string shape_string(std::span<const int64_t> shape);

}  // namespace meshplan::planner
