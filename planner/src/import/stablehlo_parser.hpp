// The StableHLO/Shardy text parser's class, shared by its files: stablehlo_parse.cpp (module
// structure, values and scopes), stablehlo_parse_lex.cpp (characters, tokens, types,
// attributes), stablehlo_parse_sdy.cpp (Shardy attributes) and stablehlo_parse_ops.cpp (ops,
// generic and pretty forms). Internal to the planner library.
#pragma once

#include <cctype>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// Replaces every `func.call` (nested jit, custom_jvp helpers) by a copy of its callee's body,
/// callees first, and drops the private functions that were called. Errors, located at the
/// call: unknown callee, operand or result types that differ from the callee's, recursion, and
/// more than kMaxInlinedOps ops after inlining. Also unrolls every stablehlo.while whose trip
/// count is a compile-time constant (a counter from a constant, compared LT/LE with a constant,
/// incremented by a positive constant) of at most 256 iterations; more is a located error,
/// other loops stay (the lowering refuses them).
/// What the import flattens besides calls: the mesh passes want straight-line code; Shardy's
/// own propagation (the sdy-propagation stage) keeps loops and barriers as the module has them.
struct ImportOptions {
  bool unroll_loops = true;
  bool drop_barriers = true;
  bool inline_calls = true;  ///< false: func.call and the callees stay (sdy-propagation).
  bool tokens = false;       ///< Read `!stablehlo.token` (sdy-propagation only).
};
Status inline_calls(Module& m, ImportOptions options = {});
/// Rewrites the ops the spec defines by decomposition (batch_norm_*, get_dimension_size,
/// dynamic_iota of a static shape) into the StableHLO ops they stand for
/// (stablehlo_decompose.cpp).
Status decompose_ops(Module& m);
/// stablehlo.einsum / unary_einsum as reduce, dot_general and transpose
/// (stablehlo_decompose_einsum.cpp), part of decompose_ops.
bool is_einsum(std::string_view name);
Status decompose_einsum(Module& m, OpId o, std::vector<OpId>& out);
inline constexpr size_t kMaxInlinedOps = 1'000'000;

/// GSPMD annotations JAX prints: `mhlo.sharding` on arguments/results and `custom_call
/// @Sharding` are dropped with a note in Module::notes when the module has no Shardy mesh
/// (they are hints on a global program); next to Shardy meshes a non-replicated one is an
/// error. `@SPMDFullToShardShape`/`@SPMDShardToFullShape` (GSPMD shard_map) are refused.
Status drop_gspmd_annotations(Module& m);
/// GSPMD's shard_map (`custom_call @Sharding` + `@SPMDFullToShardShape` on each argument,
/// `@Sharding {manual}` + `@SPMDShardToFullShape` on each result, the body between) becomes an
/// sdy.manual_computation over every axis of a mesh `@mesh` factored from the tile assignments
/// (`"_axis_0"` major). Forms it cannot map are a located "unimplemented" error. Runs after
/// inline_calls and before drop_gspmd_annotations; a module without those calls is unchanged.
Status gspmd_shard_map_to_manual(Module& m);

}  // namespace meshplan::planner::shlo

namespace meshplan::planner::shlo::parse {

inline bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
inline bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' ||
         c == '-';
}

/// The element types the importer reads, for messages.
inline constexpr std::string_view kElementTypes =
    "supported: i1 i8 i16 i32 i64 ui8 ui16 ui32 ui64 f16 bf16 f32 f64";
bool is_element_type(std::string_view e);

/// Recursive-descent parser over characters (MLIR's lexing is context dependent: `32x48xf32`,
/// `0->1`, `p1`). One instance parses one text; not thread-safe.
class Parser {
 public:
  Parser(std::string_view text, std::string file) : t_(text) { m_.file = std::move(file); }

  Result<Module> run();
  ImportOptions import;

 private:
  // ---- characters ----
  void ws();
  bool peek(char c);
  bool peek(std::string_view s);
  bool accept(std::string_view s);
  /// Accepts a keyword only when not followed by more identifier characters.
  bool accept_word(std::string_view w);
  /// Line and column of offset `p`; scans forward from the last answer (ops are parsed in
  /// order), so locating every op stays linear in the text size.
  Location loc_at(size_t p) const;
  Location here();
  std::unexpected<Error> error(std::string_view expected);
  std::unexpected<Error> error_at(size_t p, std::string_view message);
  Status expect(std::string_view s, std::string_view what);

  // ---- tokens ----
  Result<std::string> ident(std::string_view what = "an identifier");
  Result<std::string> symbol();
  Result<std::string> string_lit();
  Result<int64_t> integer(std::string_view what = "an integer");
  /// A number: integer, float, hex bit pattern (f32 / f64 / bf16 by width). Sets is_float.
  Result<double> number(bool& is_float);

  // ---- types ----
  Result<TensorType> type();
  Result<std::vector<TensorType>> type_list_parens();
  /// Skips an unsupported element type's text (for the error message).
  Status balanced_type_text();
  /// `(T, T) -> T` or `(T) -> (T, T)`.
  Result<std::pair<std::vector<TensorType>, std::vector<TensorType>>> func_type();

  // ---- attributes ----
  /// Raw text of a balanced `<...>` (or `{...}`/`[...]`) group starting at the cursor.
  Result<std::string> balanced(char open, char close);

  bool peek_element_type();

  Result<Attr> attr();

  Status dense_elems(std::vector<double>& out, bool& is_float);

  /// `dense<"0x...">`: little-endian element bytes (as JAX prints large constants). Decoded
  /// for f32/f64/bf16/f16-free integer types; other types keep the raw text.
  Status decode_hex(Attr& a, size_t at);

  /// `dense<...> : tensor<...>` after `dense<`; `index_ok`: an attribute's literal (XLA's
  /// layouts), whose element type may be `index`.
  Result<Attr> dense(bool index_ok = false);

  Result<std::vector<NamedAttr>> attr_dict();

  // ---- Shardy attributes ----
  Result<AxisRef> axis_ref();
  Result<std::vector<AxisRef>> axis_set();
  /// `[...axes...] [, device_ids=[...]]>` of a mesh, after its `<`.
  Status mesh_body(MeshDecl& mesh);
  Result<DimSharding> dim_sharding();
  /// `<@mesh, [{...}, ...], replicated={...}>`.
  Result<TensorSharding> sharding();
  Status check_sharding(const TensorSharding& s, size_t at);
  Result<std::vector<TensorSharding>> sharding_list();

  /// Dict whose `sdy.sharding` entry is a Shardy sharding (or per-value list) moved to
  /// `*shardings`, the rest plain; shardings == null: every entry plain (attr_dict()).
  Result<std::vector<NamedAttr>> dict_with_sharding(std::vector<TensorSharding>* shardings,
                                                    bool per_value);

  // ---- values and scopes ----
  struct PendingRef {
    std::string name;
    size_t pos;
  };
  Result<PendingRef> value_name();
  Result<ValueId> use();
  Result<std::vector<ValueId>> uses_until(char close);
  Status define(const std::string& name, ValueId v, size_t at);

  // ---- structure ----
  Status top_items(std::string_view until);
  /// `call @f(%a) : (T) -> T` (also `func.call`).
  Status call_op(Op& op, std::vector<TensorType>& results);
  /// `stablehlo.custom_call @target(%a) {attrs} : (T) -> T`.
  Status tensor_empty(Op& op, std::vector<TensorType>& results);
  Status einsum_op(Op& op, std::vector<TensorType>& results);
  Status custom_call_op(Op& op, std::vector<TensorType>& results);
  /// `stablehlo.composite "name" %a, %b {decomposition = @f, ...} : (T, U) -> R`.
  Status composite_op(Op& op, std::vector<TensorType>& results);
  /// A composite means a call of its decomposition (the spec's semantics): made a func.call.
  Status composite_as_call(Op& op, size_t at);

  Status mesh_decl();

  Status func();

  Result<ResultInfo> result_info(bool allow_attrs);

  /// Parses ops into `block` until a '}' (not consumed).
  Status ops_until(Block& block);

  /// A region `{ [^bb0(args):] ops }` in generic syntax.
  Result<Block> region(bool allow_header);

  /// `(%a: T, %b: T)` block arguments defined in a new scope (the caller pops it).
  Status region_args(Block& b);

  Result<OpId> operation();
  Status normalize_generic(Op& op, const std::vector<TensorType>& results, size_t at);
  Status dot_as_dot_general(Op& op, size_t at);
  Status pretty(Op& op, std::vector<TensorType>& result_types, size_t name_pos);
  /// `loc(...)` (any location, kept only as the text position) if present.
  Status skip_loc();
  /// `#name = loc(...)`.
  Status loc_alias();

  /// Trailing `{...}` attribute dict of an op, sdy.sharding split out.
  Status op_attr_dict(Op& op);
  /// `: T` (every operand and the result) or `: (T...) -> T`.
  Status same_or_func_type(Op& op, std::vector<TensorType>& results);
  /// The tail of a pretty form: `{attrs} : (T...) -> R...`, operand types checked; `what`
  /// names the expected type in the error.
  Status attrs_and_func_type(Op& op, std::vector<TensorType>& results, std::string_view what);
  Status check_operand_types(const Op& op, const std::vector<TensorType>& ins);
  Result<std::vector<int64_t>> int_list();

  /// `open item, item... close` (or `open close`): the bracketed lists the syntax repeats;
  /// errors read "expected '<open>' opening <what>" / "'<close>' closing <what>".
  template <class F>
  auto list_of(std::string_view open, std::string_view close, std::string_view what, F item)
      -> Result<std::vector<typename std::invoke_result_t<F>::value_type>> {
    std::vector<typename std::invoke_result_t<F>::value_type> out;
    MESHPLAN_TRY(expect(open, str("'", open, "' opening ", what)));
    if (accept(close)) return out;
    do out.push_back(MESHPLAN_TRY(item()));
    while (accept(","));
    MESHPLAN_TRY(expect(close, str("'", close, "' closing ", what)));
    return out;
  }

  /// Nesting of attributes, dense literals and regions: deeper input is refused at kMaxDepth
  /// (the parser and the passes after it recurse over nesting).
  static constexpr int kMaxDepth = 256;
  class Nest {
   public:
    explicit Nest(Parser& p) : p_(p) { ++p_.depth_; }
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;
    bool too_deep() const { return p_.depth_ > kMaxDepth; }

   private:
    Parser& p_;
  };
  std::unexpected<Error> too_deep();

  std::string_view t_;
  int depth_ = 0;
  size_t pos_ = 0;
  mutable size_t cache_pos_ = 0;
  mutable int cache_line_ = 1;
  mutable int cache_col_ = 1;
  size_t type_pos_ = 0;
  bool index_elements_ = false;  ///< type() accepts `index` (attribute literals).
  Module m_;
  std::vector<std::map<std::string, ValueId>> scopes_;
};

}  // namespace meshplan::planner::shlo::parse
