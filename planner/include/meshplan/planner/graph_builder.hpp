// GraphBuilder: build a planner::Graph in code. Result shapes are inferred as ops are added (so
// later ops can use them); the first error is remembered and returned by build(), which also
// validates the whole graph.
//
//   GraphBuilder b("mlp");
//   Value x = b.input("x", {64, 256});
//   Value w = b.parameter("w1", {256, 512});
//   Value h = b.op("matmul", {x, w}, {attr("activation", "relu")}, "fc1");
//   b.output(h);
//   Result<Graph> g = b.build();
#pragma once

#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "meshplan/planner/graph.hpp"

namespace meshplan::planner {

/// An attribute for GraphBuilder::op.
Attribute attr(std::string name, int64_t v);
Attribute attr(std::string name, int v);
Attribute attr(std::string name, double v);
Attribute attr(std::string name, bool v);
Attribute attr(std::string name, const char* v);
Attribute attr(std::string name, std::string v);
Attribute attr(std::string name, std::vector<int64_t> v);
Attribute attr(std::string name, std::vector<double> v);

/// Builds one graph. Not thread-safe. Names must be unique; unnamed ops and results get
/// "<kind>_<n>" names.
class GraphBuilder {
 public:
  /// A value handle: an index into the graph being built (kInvalid after an error).
  using Value = ValueId;
  static constexpr Value kInvalid = std::numeric_limits<ValueId>::max();

  explicit GraphBuilder(std::string name);

  Value input(std::string name, std::vector<int64_t> shape, DType dtype = DType::bf16);
  Value parameter(std::string name, std::vector<int64_t> shape, DType dtype = DType::bf16);
  Value constant(std::string name, std::vector<int64_t> shape, std::vector<float> data,
                 DType dtype = DType::bf16);

  /// Adds an op of `kind` (a name from ops.def) and returns its (first) result.
  Value op(std::string_view kind, std::vector<Value> operands,
           std::vector<Attribute> attributes = {}, std::string name = "");

  /// Convenience wrappers for common ops.
  Value matmul(Value a, Value b, std::string name = "") {
    return op("matmul", {a, b}, {}, std::move(name));
  }
  Value add(Value a, Value b, std::string name = "") {
    return op("add", {a, b}, {}, std::move(name));
  }
  Value relu(Value a, std::string name = "") { return op("relu", {a}, {}, std::move(name)); }

  void output(Value v);

  /// Mesh programs: the mesh the per-device graph runs on (set it before adding collectives),
  /// and the boundary shard of an argument or output. Arguments and outputs given no shard are
  /// replicated. Shapes given to input()/parameter() and inferred are per-chip (local) shapes.
  void mesh(int rows, int cols, std::vector<std::string> axis_names = {});
  void shard(Value argument, device::MeshShardSpec spec);
  void output(Value v, device::MeshShardSpec spec);

  /// Shape of a value built so far (empty for kInvalid).
  const std::vector<int64_t>& shape(Value v) const;
  /// The first error so far, if any.
  const std::optional<Error>& error() const { return error_; }

  /// Validates and returns the graph; the builder is left empty.
  Result<Graph> build();

 private:
  Value argument(std::string name, std::vector<int64_t> shape, DType dtype, ArgKind kind,
                 std::vector<float> data);
  void set_error(Error e);

  Graph graph_;
  std::optional<Error> error_;
  /// Boundary shards given so far: (argument or output index, is output, spec).
  std::vector<std::tuple<size_t, bool, device::MeshShardSpec>> shards_;
  static const std::vector<int64_t> kNoShape;
};

}  // namespace meshplan::planner
