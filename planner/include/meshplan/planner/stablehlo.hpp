// The StableHLO + Shardy module IR: what the .mlir importer reads, the mesh passes rewrite and
// the printer writes back in the same textual syntax (pretty forms where StableHLO and Shardy
// have them, the generic `"dialect.op"(...)` form otherwise).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "meshplan/schemas/error.hpp"

namespace meshplan::planner::shlo {

using ValueId = uint32_t;
using OpId = uint32_t;
inline constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

/// Where something was written: "file:line:col".
struct Location {
  std::string file;
  int line = 0;
  int col = 0;
  std::string str() const;
};

/// `tensor<2x3xf32>`: a static shape and an element type name ("f32", "bf16", "i1", "i64"...).
struct TensorType {
  std::vector<int64_t> shape;
  std::string element = "f32";
  bool operator==(const TensorType&) const = default;
  int64_t volume() const;
};
std::string type_string(const TensorType& type);
/// The element of the rank-0 type standing for `!stablehlo.token` (read only by the
/// sdy-propagation stage, which gives tokens no sharding).
inline constexpr std::string_view kTokenType = "!stablehlo.token";

/// A mesh axis or a sub-axis of it: `"x"` (size 0 = the whole axis) or `"x":(pre)size`.
struct AxisRef {
  std::string name;
  int64_t pre_size = 1;
  int64_t size = 0;
  bool operator==(const AxisRef&) const = default;
};

/// One dimension of a sharding: the axes it is split over, major first. Open dims (`?`) may be
/// further sharded by propagation; closed ones may not. priority < 0: none given.
struct DimSharding {
  std::vector<AxisRef> axes;
  bool open = false;
  int64_t priority = -1;
  bool operator==(const DimSharding&) const = default;
};

/// `#sdy.sharding<@mesh, [{"x", ?}, {}], replicated={"y"}>`.
struct TensorSharding {
  std::string mesh;
  std::vector<DimSharding> dims;
  std::vector<AxisRef> replicated;
  std::vector<AxisRef> unreduced;
  /// How the unreduced partial values combine: "" (a sum), "max" or "min" (`unreduced=max{...}`).
  /// Only sums reach the mesh pipeline (verify_shardings refuses the others).
  std::string unreduced_kind;
  bool operator==(const TensorSharding&) const = default;
};

/// `sdy.mesh @name = <["x"=2, "y"=4]>`.
struct MeshDecl {
  std::string name;
  std::vector<std::pair<std::string, int64_t>> axes;
  std::vector<int64_t> device_ids;
  /// Size of axis `name`, or 0 when the mesh has no such axis.
  int64_t axis_size(std::string_view axis) const;
  /// Size an axis reference stands for (whole axis or sub-axis).
  int64_t size_of(const AxisRef& ref) const;
  int64_t devices() const;
};

/// An attribute value, kept structured enough to be queried and printed back unchanged.
struct Attr {
  enum class Kind : uint8_t {
    unit,
    integer,
    floating,
    boolean,
    string,
    keyword,
    array,
    dense_array,
    dense,
    symbol,
    opaque,
    dict,
    type
  };
  Kind kind = Kind::unit;
  int64_t i = 0;
  double f = 0;
  /// string contents, keyword, symbol name, opaque raw text, or the element type of
  /// integer/floating/dense_array attributes ("" when none was written).
  std::string text;
  std::vector<Attr> list;
  std::vector<int64_t> ints;
  std::vector<std::pair<std::string, Attr>> dict;
  TensorType type;             ///< dense: the tensor type; type: the type itself.
  std::vector<double> values;  ///< dense: row-major values (one value when written as a splat).

  static Attr integer(int64_t v, std::string type = "i64");
  static Attr ints_array(std::vector<int64_t> v);  ///< array<i64: ...>
  static Attr keyword(std::string word);
  bool operator==(const Attr&) const = default;
};
using NamedAttr = std::pair<std::string, Attr>;
std::string attr_string(const Attr& attr);

struct Value {
  TensorType type;
  OpId def = kNone;                        ///< Producing op, or kNone for a block argument.
  uint32_t index = 0;                      ///< Result index, or argument index in its block.
  std::optional<TensorSharding> sharding;  ///< Function arguments: their sdy.sharding.
};

/// A single-block region: arguments and ops in order.
struct Block {
  std::vector<ValueId> args;
  std::vector<OpId> ops;
};

struct Op {
  std::string name;  ///< "stablehlo.add", "sdy.reshard", "func.return"...
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  std::vector<NamedAttr> props;  ///< Inherent attributes (`<{...}>` or the pretty fields).
  std::vector<NamedAttr> attrs;  ///< Discardable attributes (`{...}`), without sdy.sharding.
  std::vector<TensorSharding> shardings;  ///< sdy.sharding per result (empty: none).
  std::vector<Block> regions;
  // Shardy ops: sharding_constraint/reshard/collectives use `sharding` (the target or out
  // sharding); manual_computation uses in/out shardings and manual axes; all_gather/all_slice
  // use per-dim axes, all_reduce the reduction axes, all_to_all the (axis, src, tgt) params.
  std::optional<TensorSharding> sharding;
  std::vector<TensorSharding> in_shardings;
  std::vector<TensorSharding> out_shardings;
  std::vector<std::string> manual_axes;
  std::vector<std::vector<AxisRef>> dim_axes;
  std::vector<AxisRef> reduce_axes;
  struct AllToAllParam {
    std::vector<AxisRef> axes;
    int64_t src = 0, tgt = 0;
    bool operator==(const AllToAllParam&) const = default;
  };
  std::vector<AllToAllParam> all_to_all;
  Location loc;

  const Attr* prop(std::string_view name) const;
  const Attr* attr(std::string_view name) const;
  void set_prop(std::string name, Attr value);
};

struct ArgInfo {
  ValueId value = kNone;
  std::vector<NamedAttr> attrs;  ///< Without sdy.sharding (kept in Value::sharding).
};
struct ResultInfo {
  TensorType type;
  std::vector<NamedAttr> attrs;
  std::optional<TensorSharding> sharding;
};

struct Func {
  std::string name;
  std::string visibility;  ///< "", "public" or "private".
  std::vector<ArgInfo> args;
  std::vector<ResultInfo> results;
  std::vector<NamedAttr> attrs;  ///< `attributes {...}`
  Block body;
  bool paren_results = false;  ///< The source wrote `-> (t)` for a single plain result.
  Location loc;
};

/// A parsed module. Values and ops live in arenas addressed by id; blocks list them in order.
struct Module {
  bool has_module_op = false;
  std::string module_name;
  std::vector<NamedAttr> module_attrs;
  std::vector<MeshDecl> meshes;
  std::vector<Func> funcs;
  std::vector<Value> values;
  std::vector<Op> ops;
  std::string file;  ///< Source file name, for messages.
  /// "file:line:col: note: ..." for input the import accepted but ignored (not printed back).
  std::vector<std::string> notes;

  ValueId add_value(TensorType type, OpId def, uint32_t index);
  /// Appends a new op (not yet in any block) with results of the given types.
  OpId add_op(std::string name, std::vector<ValueId> operands,
              const std::vector<TensorType>& result_types, Location loc = {});
  const MeshDecl* mesh(std::string_view name) const;
  /// The first mesh, or null.
  const MeshDecl* main_mesh() const { return meshes.empty() ? nullptr : &meshes.front(); }
  /// Entry function: "main" if present, else the first public one, else the first.
  Func* entry();
  const Func* entry() const;
};

/// Parses the textual form (pretty or generic syntax). `file` names the source in errors,
/// which read "file:line:col: expected ..., found '...'".
Result<Module> parse_module(std::string_view text, std::string file = "<input>");
Result<Module> parse_module_file(const std::string& path);

/// Prints a module in the same syntax; deterministic, and parse_module(print_module(m)) prints
/// back identically.
std::string print_module(const Module& module);

/// `#sdy.sharding<...>`'s inner text form: `<@mesh, [{"x", ?}, {}]>` (with the angle brackets).
std::string sharding_string(const TensorSharding& sharding);
std::string axis_string(const AxisRef& axis);

}  // namespace meshplan::planner::shlo
