// The parser's ops: one operation in generic (`"dialect.op"(...) <{...}> {...} : type`) or
// pretty form, generic forms normalised to the pretty forms' properties.
#include <algorithm>
#include <charconv>

#include "import/stablehlo_ops.hpp"
#include "import/stablehlo_parser.hpp"

namespace meshplan::planner::shlo::parse {

Result<OpId> Parser::operation() {
  Location loc = here();
  // Results: %a, %b:2 = ...
  std::vector<std::pair<PendingRef, int64_t>> defs;
  if (peek('%')) {
    do {
      PendingRef r = MESHPLAN_TRY(value_name());
      int64_t count = 1;
      if (pos_ < t_.size() && t_[pos_] == ':' && pos_ + 1 < t_.size() &&
          std::isdigit(static_cast<unsigned char>(t_[pos_ + 1]))) {
        ++pos_;
        count = MESHPLAN_TRY(integer());
      }
      defs.emplace_back(r, count);
    } while (accept(","));
    MESHPLAN_TRY(expect("=", "'=' after the op results"));
  }
  Op op;
  op.loc = loc;
  std::vector<TensorType> result_types;
  ws();
  size_t name_pos = pos_;
  bool generic = peek('"');
  if (generic) {
    op.name = MESHPLAN_TRY(string_lit());
  } else {
    op.name = MESHPLAN_TRY(ident("an op name"));
    // stablehlo.constant's own parser also reads the generic body after the bare name:
    // `stablehlo.constant() <{value = dense<...> : tensor<...>}> : () -> tensor<...>`.
    generic = op.name == "stablehlo.constant" && peek('(');
  }
  if (generic) {
    MESHPLAN_TRY(expect("(", "'(' opening the operands"));
    op.operands = MESHPLAN_TRY(uses_until(')'));
    MESHPLAN_TRY(expect(")", "')' closing the operands"));
    if (accept("<")) {
      op.props = MESHPLAN_TRY(attr_dict());
      MESHPLAN_TRY(expect(">", "'>' closing the properties"));
    }
    if (accept("(")) {
      do op.regions.push_back(MESHPLAN_TRY(region(true)));
      while (accept(","));
      MESHPLAN_TRY(expect(")", "')' closing the regions"));
    }
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the op's function type"));
    auto [ins, outs] = MESHPLAN_TRY(func_type());
    MESHPLAN_TRY(check_operand_types(op, ins));
    result_types = outs;
    MESHPLAN_TRY(normalize_generic(op, result_types, name_pos));
  } else {
    MESHPLAN_TRY(pretty(op, result_types, name_pos));
  }
  if (op.name == "stablehlo.composite") MESHPLAN_TRY(composite_as_call(op, name_pos));
  MESHPLAN_TRY(skip_loc());
  int64_t declared = 0;
  for (const auto& d : defs) declared += d.second;
  if (declared != static_cast<int64_t>(result_types.size()))
    return error_at(name_pos, str(op.name, " has ", result_types.size(), " results but ", declared,
                                  " are named"));
  OpId id = static_cast<OpId>(m_.ops.size());
  for (uint32_t i = 0; i < result_types.size(); ++i)
    op.results.push_back(m_.add_value(result_types[i], id, i));
  size_t r = 0;
  for (const auto& [ref, count] : defs) {
    if (count == 1) MESHPLAN_TRY(define(ref.name, op.results[r], ref.pos));
    for (int64_t k = 0; k < count; ++k)
      if (count > 1)
        MESHPLAN_TRY(define(ref.name + "#" + std::to_string(k), op.results[r + k], ref.pos));
    r += count;
  }
  // An op without results may carry one rank-0 sharding (maximal or replicated, as Shardy
  // allows on a side-effecting op such as a host callback); more, or one with dims, is an
  // error.
  bool resultless_maximal =
      op.results.empty() && op.shardings.size() == 1 && op.shardings[0].dims.empty();
  if (!op.shardings.empty() && op.shardings.size() != op.results.size() && !resultless_maximal)
    return error_at(name_pos, str(op.name, ": sdy.sharding lists ", op.shardings.size(),
                                  " shardings for ", op.results.size(), " results"));
  m_.ops.push_back(std::move(op));
  return id;
}

/// Generic-form ops as older exporters write them: inherent attributes in the trailing dict,
/// dot_general's `#stablehlo.dot<...>`, compare's `#stablehlo<comparison_direction GT>`. Brought
/// to the canonical properties the passes and the pretty printer use.
Status Parser::normalize_generic(Op& op, const std::vector<TensorType>& results, size_t at) {
  if (!std::string_view(op.name).starts_with("stablehlo.")) return {};
  static const char* kInherent[] = {"dimensions",
                                    "broadcast_dimensions",
                                    "permutation",
                                    "dimension",
                                    "iota_dimension",
                                    "start_indices",
                                    "limit_indices",
                                    "strides",
                                    "comparison_direction",
                                    "compare_type",
                                    "dot_dimension_numbers",
                                    "precision_config",
                                    "value",
                                    "all_gather_dim",
                                    "replica_groups",
                                    "channel_handle",
                                    "use_global_device_ids",
                                    "scatter_dimension",
                                    "split_dimension",
                                    "concat_dimension",
                                    "split_count",
                                    "source_target_pairs",
                                    "is_stable"};
  // gather's and scatter's own attributes (other ops' `dimension_numbers` stay where they are).
  static const char* kIndexing[] = {"dimension_numbers", "scatter_dimension_numbers",
                                    "slice_sizes", "indices_are_sorted", "unique_indices"};
  const bool indexing = op.name == "stablehlo.gather" || op.name == "stablehlo.scatter";
  for (auto it = op.attrs.begin(); it != op.attrs.end();) {
    if (std::find(std::begin(kInherent), std::end(kInherent), it->first) != std::end(kInherent) ||
        (indexing && std::find(std::begin(kIndexing), std::end(kIndexing), it->first) !=
                         std::end(kIndexing))) {
      op.set_prop(it->first, it->second);
      it = op.attrs.erase(it);
    } else {
      ++it;
    }
  }
  auto keyword_of = [](const Attr& a) {
    std::string t = a.text;
    size_t sp = t.rfind(' ');
    if (a.kind != Attr::Kind::opaque || sp == std::string::npos || !t.ends_with(">"))
      return std::string();
    return t.substr(sp + 1, t.size() - sp - 2);
  };
  for (const char* k : {"comparison_direction", "compare_type"})
    if (const Attr* a = op.prop(k); a && !keyword_of(*a).empty())
      op.set_prop(k, Attr::keyword(keyword_of(*a)));
  if (const Attr* a = op.prop("precision_config"); a && a->kind == Attr::Kind::array) {
    Attr list = *a;
    for (Attr& e : list.list)
      if (!keyword_of(e).empty()) e = Attr::keyword(keyword_of(e));
    op.set_prop("precision_config", list);
  }
  if (const Attr* a = op.prop("dot_dimension_numbers"); a && a->kind == Attr::Kind::opaque) {
    // #stablehlo.dot<lhs_batching_dimensions = [0], ..., rhs_contracting_dimensions = [1]>
    std::string t = a->text;
    std::vector<NamedAttr> dims;
    for (const char* k : {"lhs_batching_dimensions", "rhs_batching_dimensions",
                          "lhs_contracting_dimensions", "rhs_contracting_dimensions"}) {
      std::vector<int64_t> v;
      size_t key = t.find(k);
      if (key != std::string::npos) {
        size_t open = t.find('[', key), close = t.find(']', key);
        if (open == std::string::npos || close == std::string::npos || close < open)
          return error_at(at, str("#stablehlo.dot: expected '", k, " = [...]'"));
        std::string body = t.substr(open + 1, close - open - 1);
        for (size_t p = 0; p < body.size();) {
          size_t c = body.find(',', p);
          if (c == std::string::npos) c = body.size();
          std::string num = body.substr(p, c - p);
          size_t b = num.find_first_not_of(' '), e = num.find_last_not_of(' ');
          if (b != std::string::npos) {
            int64_t x = 0;
            auto [end, ec] = std::from_chars(num.data() + b, num.data() + e + 1, x);
            if (ec != std::errc() || end != num.data() + e + 1)
              return error_at(at, str("#stablehlo.dot: '", num, "' in ", k, " is not an integer"));
            v.push_back(x);
          }
          p = c + 1;
        }
      }
      dims.emplace_back(k, Attr::ints_array(v));
    }
    op.props.erase(
        std::remove_if(op.props.begin(), op.props.end(),
                       [](const NamedAttr& p) { return p.first == "dot_dimension_numbers"; }),
        op.props.end());
    for (auto& [k, v] : dims) op.set_prop(k, v);
  }
  if (op.name == "stablehlo.dot") MESHPLAN_TRY(dot_as_dot_general(op, at));
  if (const Attr* v = op.prop("value"); op.name == "stablehlo.constant" && v &&
                                        v->kind == Attr::Kind::dense &&
                                        (results.size() != 1 || !(v->type == results[0])))
    return error_at(at, str("stablehlo.constant: the value's type ", type_string(v->type),
                            " differs from the result type"));
  return {};
}

/// stablehlo.dot is dot_general contracting the lhs's last dim with the rhs's first (vector or
/// matrix operands).
Status Parser::dot_as_dot_general(Op& op, size_t at) {
  if (op.operands.size() != 2) return error_at(at, "stablehlo.dot takes two operands");
  size_t lr = m_.values[op.operands[0]].type.shape.size();
  size_t rr = m_.values[op.operands[1]].type.shape.size();
  if (lr < 1 || lr > 2 || rr < 1 || rr > 2)
    return error_at(at, str("stablehlo.dot of rank-", lr, " and rank-", rr,
                            " operands (it takes vectors and matrices)"));
  op.name = "stablehlo.dot_general";
  op.set_prop("lhs_batching_dimensions", Attr::ints_array({}));
  op.set_prop("rhs_batching_dimensions", Attr::ints_array({}));
  op.set_prop("lhs_contracting_dimensions", Attr::ints_array({static_cast<int64_t>(lr - 1)}));
  op.set_prop("rhs_contracting_dimensions", Attr::ints_array({0}));
  if (import.tokens) op.set_prop(std::string(kWrittenAsDot), Attr{});
  return {};
}

// The parser also reads convert, reshape and the ops below in the short form (the printer
// writes the ones it has no pretty form for generically).
bool is_unary_name(std::string_view s) {
  for (std::string_view k : {"convert", "reshape", "bitcast_convert", "is_finite", "cbrt", "tan",
                             "round_nearest_afz", "popcnt", "count_leading_zeros", "real", "imag"})
    if (s == k) return true;
  return is_elementwise_unary(s);
}
bool is_binary_name(std::string_view s) {
  for (std::string_view k :
       {"shift_left", "shift_right_arithmetic", "shift_right_logical", "complex"})
    if (s == k) return true;
  return is_elementwise_binary(s);
}

Status Parser::pretty(Op& op, std::vector<TensorType>& results, size_t name_pos) {
  std::string_view n = op.name;
  if (n == "return" || n == "func.return" || n == "stablehlo.return" || n == "sdy.return") {
    if (n == "return") op.name = "func.return";
    if (peek('%')) {
      op.operands = MESHPLAN_TRY(uses_until(':'));
      MESHPLAN_TRY(expect(":", "':' and the returned types"));
      std::vector<TensorType> ts;
      do ts.push_back(MESHPLAN_TRY(type()));
      while (accept(","));
      MESHPLAN_TRY(check_operand_types(op, ts));
    }
    return {};
  }
  if (n == "sdy.sharding_constraint" || n == "sdy.reshard") {
    op.operands = {MESHPLAN_TRY(use())};
    op.sharding = MESHPLAN_TRY(sharding());
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (n == "sdy.sharding_group") {  // `sdy.sharding_group %v group_id=N : T` (no result)
    op.operands = {MESHPLAN_TRY(use())};
    if (!accept_word("group_id")) return error("'group_id='");
    MESHPLAN_TRY(expect("=", "'=' after group_id"));
    op.props.emplace_back("group_id", Attr::integer(MESHPLAN_TRY(integer("a group id")), ""));
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the grouped value's type"));
    std::vector<TensorType> ts{MESHPLAN_TRY(type())};
    return check_operand_types(op, ts);
  }
  if (n == "sdy.func_data_flow_edge") {  // `%r = sdy.func_data_flow_edge %v {...} : T`
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (n == "sdy.data_flow_edge") {  // `%r = sdy.data_flow_edge %v [sharding=<...>] : T`
    op.operands = {MESHPLAN_TRY(use())};
    if (accept_word("sharding")) {
      MESHPLAN_TRY(expect("=", "'=' after sharding"));
      op.shardings = {MESHPLAN_TRY(sharding())};
    }
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (n == "sdy.propagation_barrier") {  // `... %v allowed_direction=BACKWARD : T`
    op.operands = {MESHPLAN_TRY(use())};
    if (!accept_word("allowed_direction")) return error("'allowed_direction='");
    MESHPLAN_TRY(expect("=", "'=' after allowed_direction"));
    size_t at = pos_;
    std::string dir = MESHPLAN_TRY(ident("a direction"));
    if (dir != "NONE" && dir != "FORWARD" && dir != "BACKWARD" && dir != "BOTH")
      return error_at(at, str("sdy.propagation_barrier: allowed_direction '", dir,
                              "' is none of NONE, FORWARD, BACKWARD, BOTH"));
    op.props.emplace_back("allowed_direction", Attr::keyword(dir));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (n == "sdy.all_gather" || n == "sdy.all_slice" || n == "sdy.all_reduce" ||
      n == "sdy.all_to_all" || n == "sdy.collective_permute" || n == "sdy.reduce_scatter" ||
      n == "sdy.replicated_to_unreduced" || n == "sdy.sharded_to_unreduced") {
    // sdy.sharded_to_unreduced names its axes per dimension, sdy.replicated_to_unreduced
    // as one list (kept in reduce_axes, as the axes a later all_reduce sums over).
    if (n == "sdy.all_gather" || n == "sdy.all_slice" || n == "sdy.reduce_scatter" ||
        n == "sdy.sharded_to_unreduced") {
      MESHPLAN_TRY(expect("[", "'[' opening the per-dimension axes"));
      if (!accept("]")) {
        do op.dim_axes.push_back(MESHPLAN_TRY(axis_set()));
        while (accept(","));
        MESHPLAN_TRY(expect("]", "']' closing the per-dimension axes"));
      }
    } else if (n == "sdy.all_reduce") {
      for (std::string_view kind : {"max", "min"})
        if (accept_word(kind)) op.set_prop("reduction", Attr::keyword(std::string(kind)));
      op.reduce_axes = MESHPLAN_TRY(axis_set());
    } else if (n == "sdy.replicated_to_unreduced") {
      op.reduce_axes = MESHPLAN_TRY(axis_set());
    } else if (n == "sdy.all_to_all") {
      MESHPLAN_TRY(expect("[", "'[' opening the all_to_all parameters"));
      do {
        Op::AllToAllParam p;
        MESHPLAN_TRY(expect("{", "'{' opening an all_to_all parameter"));
        do p.axes.push_back(MESHPLAN_TRY(axis_ref()));
        while (accept(","));
        // Shardy's form `{"x", "y"}: 0->1`; `{"x", "y": 0->1}` is read too.
        const bool closed = accept("}");
        MESHPLAN_TRY(expect(":", "':' then src->tgt dimensions"));
        p.src = MESHPLAN_TRY(integer("a source dimension"));
        MESHPLAN_TRY(expect("->", "'->'"));
        p.tgt = MESHPLAN_TRY(integer("a target dimension"));
        if (!closed) MESHPLAN_TRY(expect("}", "'}' closing an all_to_all parameter"));
        op.all_to_all.push_back(std::move(p));
      } while (accept(","));
      MESHPLAN_TRY(expect("]", "']' closing the all_to_all parameters"));
    }
    op.operands = {MESHPLAN_TRY(use())};
    if (!accept("out_sharding")) return error("'out_sharding='");
    MESHPLAN_TRY(expect("=", "'=' after out_sharding"));
    op.sharding = MESHPLAN_TRY(sharding());
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (n == "sdy.manual_computation") {
    MESHPLAN_TRY(expect("(", "'(' opening the operands"));
    op.operands = MESHPLAN_TRY(uses_until(')'));
    MESHPLAN_TRY(expect(")", "')' closing the operands"));
    if (!accept("in_shardings")) return error("'in_shardings='");
    MESHPLAN_TRY(expect("=", "'='"));
    op.in_shardings = MESHPLAN_TRY(sharding_list());
    if (!accept("out_shardings")) return error("'out_shardings='");
    MESHPLAN_TRY(expect("=", "'='"));
    op.out_shardings = MESHPLAN_TRY(sharding_list());
    if (!accept("manual_axes")) return error("'manual_axes='");
    MESHPLAN_TRY(expect("=", "'='"));
    MESHPLAN_TRY(expect("{", "'{' opening the manual axes"));
    if (!accept("}")) {
      do op.manual_axes.push_back(MESHPLAN_TRY(string_lit()));
      while (accept(","));
      MESHPLAN_TRY(expect("}", "'}' closing the manual axes"));
    }
    Block b;
    scopes_.emplace_back();
    MESHPLAN_TRY(region_args(b));
    MESHPLAN_TRY(expect("{", "'{' opening the manual computation body"));
    MESHPLAN_TRY(ops_until(b));
    MESHPLAN_TRY(expect("}", "'}' closing the manual computation body"));
    scopes_.pop_back();
    op.regions.push_back(std::move(b));
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the manual computation's type"));
    auto [ins, outs] = MESHPLAN_TRY(func_type());
    MESHPLAN_TRY(check_operand_types(op, ins));
    if (op.in_shardings.size() != op.operands.size() || op.out_shardings.size() != outs.size())
      return error_at(
          name_pos,
          "sdy.manual_computation: in_shardings/out_shardings do not match operands/results");
    results = outs;
    return {};
  }
  if (n == "sdy.constant") {  // as stablehlo.constant: `sdy.constant {attrs} dense<...>`
    MESHPLAN_TRY(op_attr_dict(op));
    if (!accept("dense<")) return error("a dense<...> literal");
    Attr v = MESHPLAN_TRY(dense());
    results = {v.type};
    op.set_prop("value", std::move(v));
    return {};
  }
  if (n == "arith.constant") {  // `arith.constant dense<...> : tensor<...>`: a constant
    op.name = "stablehlo.constant";
    MESHPLAN_TRY(op_attr_dict(op));
    if (!accept("dense<"))
      return error("a dense<...> tensor literal (arith.constant is read for tensors only)");
    Attr v = MESHPLAN_TRY(dense());
    results = {v.type};
    op.set_prop("value", std::move(v));
    return {};
  }
  if (n == "stablehlo.composite") return composite_op(op, results);
  if (n == "stablehlo.get_dimension_size") {  // `stablehlo.get_dimension_size %x, dim = N : ...`
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "', dim = N'"));
    if (!accept_word("dim")) return error("'dim = N'");
    MESHPLAN_TRY(expect("=", "'=' after dim"));
    op.set_prop("dimension", Attr::integer(MESHPLAN_TRY(integer("a dimension")), "i64"));
    MESHPLAN_TRY(attrs_and_func_type(op, results, "':' and the op's type"));
    return {};
  }
  if (n == "call" || n == "func.call") {
    op.name = "func.call";
    return call_op(op, results);
  }
  if (n == "chlo.top_k") {  // `chlo.top_k(%x, k = K) : T -> (T, U)`
    MESHPLAN_TRY(expect("(", "'(' opening the top_k operand"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "',' and 'k = K'"));
    if (!accept_word("k")) return error("'k = K'");
    MESHPLAN_TRY(expect("=", "'='"));
    op.set_prop("k", Attr::integer(MESHPLAN_TRY(integer("top_k's k"))));
    MESHPLAN_TRY(expect(")", "')' closing the top_k operand"));
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the top_k's type"));
    TensorType in = MESHPLAN_TRY(type());
    MESHPLAN_TRY(check_operand_types(op, {in}));
    MESHPLAN_TRY(expect("->", "'->' and the top_k's result types"));
    results = MESHPLAN_TRY(type_list_parens());
    return {};
  }
  if (n.starts_with("chlo.")) {
    // `chlo.op %a[, %b] {attrs} : T -> R`, `: (T, U) -> R` or (binary, as JAX prints
    // chlo.next_after) `: T, U -> R`.
    op.operands = MESHPLAN_TRY(uses_until(':'));
    if (op.operands.empty()) return error(str("the operands of ", n));
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the op's type"));
    if (peek('(')) {
      auto [ins, outs] = MESHPLAN_TRY(func_type());
      MESHPLAN_TRY(check_operand_types(op, ins));
      results = outs;
      return {};
    }
    std::vector<TensorType> ins{MESHPLAN_TRY(type())};
    while (ins.size() < op.operands.size() && accept(",")) ins.push_back(MESHPLAN_TRY(type()));
    if (ins.size() == 1) ins.assign(op.operands.size(), ins[0]);
    MESHPLAN_TRY(check_operand_types(op, ins));
    MESHPLAN_TRY(expect("->", "'->' and the result type"));
    results = {MESHPLAN_TRY(type())};
    return {};
  }
  if (n == "stablehlo.reduce_precision") {  // `stablehlo.reduce_precision %x, format = e8m7 : T`
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "',' and 'format = eEmM'"));
    if (!accept_word("format")) return error("'format = eEmM'");
    MESHPLAN_TRY(expect("=", "'='"));
    size_t at = pos_;
    std::string f = MESHPLAN_TRY(ident("a format eEmM"));
    size_t mpos = f.find('m');
    int64_t e = 0, mant = 0;
    auto digits = [](std::string_view d, int64_t& v) {
      if (d.empty() || d.size() > 9) return false;
      for (char c : d)
        if (c < '0' || c > '9') return false;
      v = std::stoll(std::string(d));
      return true;
    };
    if (f.size() < 4 || f[0] != 'e' || mpos == std::string::npos ||
        !digits(std::string_view(f).substr(1, mpos - 1), e) ||
        !digits(std::string_view(f).substr(mpos + 1), mant))
      return error_at(at, str("reduce_precision format '", f,
                              "' (expected eEmM: exponent and mantissa bits, as e8m7)"));
    op.set_prop("exponent_bits", Attr::integer(e, "i32"));
    op.set_prop("mantissa_bits", Attr::integer(mant, "i32"));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (n == "tensor.empty") return tensor_empty(op, results);
  if (!n.starts_with("stablehlo."))
    return error_at(name_pos, str("unknown op '", n,
                                  "' (expected a stablehlo, sdy or func op, or the generic form "
                                  "\"dialect.op\"(...))"));
  std::string_view s = n.substr(10);
  if (s == "custom_call") return custom_call_op(op, results);
  if (is_unary_name(s)) {
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(op_attr_dict(op));
    type_pos_ = pos_;
    return same_or_func_type(op, results);
  }
  if (is_binary_name(s)) {
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "',' between the two operands"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(op_attr_dict(op));
    type_pos_ = pos_;
    return same_or_func_type(op, results);
  }
  if (s == "dot") {  // `stablehlo.dot %a, %b[, precision = [...]] : (T, T) -> T`
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "','"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    if (accept(",")) {
      if (!accept_word("precision")) return error("'precision = [...]'");
      MESHPLAN_TRY(expect("=", "'='"));
      op.set_prop("precision_config", MESHPLAN_TRY(attr()));
    }
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(same_or_func_type(op, results));
    return dot_as_dot_general(op, name_pos);
  }
  if (s == "optimization_barrier") {  // `%0:2 = stablehlo.optimization_barrier {..} %a, %b : T, U`
    MESHPLAN_TRY(op_attr_dict(op));   // StableHLO prints the attributes before the operands
    op.operands = MESHPLAN_TRY(uses_until(':'));
    if (op.attrs.empty() && op.shardings.empty()) MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the operand types"));
    std::vector<TensorType> ts;
    if (!op.operands.empty()) {
      do ts.push_back(MESHPLAN_TRY(type()));
      while (accept(","));
    }
    MESHPLAN_TRY(check_operand_types(op, ts));
    results = ts;
    return {};
  }
  if (s == "pad") {  // `stablehlo.pad %x, %v, low = [..], high = [..], interior = [..] : ...`
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "','"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    for (const char* k : {"low", "high", "interior"}) {
      MESHPLAN_TRY(expect(",", "','"));
      if (!accept_word(k)) return error(str("'", k, " = [...]'"));
      MESHPLAN_TRY(expect("=", "'='"));
      std::string name = std::string_view(k) == "low"    ? "edge_padding_low"
                         : std::string_view(k) == "high" ? "edge_padding_high"
                                                         : "interior_padding";
      op.set_prop(name, Attr::ints_array(MESHPLAN_TRY(int_list())));
    }
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "dynamic_slice") {  // `stablehlo.dynamic_slice %x, %i, %j, sizes = [..] : ...`
    op.operands.push_back(MESHPLAN_TRY(use()));
    while (accept(",")) {
      if (accept_word("sizes")) {
        MESHPLAN_TRY(expect("=", "'='"));
        op.set_prop("slice_sizes", Attr::ints_array(MESHPLAN_TRY(int_list())));
        break;
      }
      op.operands.push_back(MESHPLAN_TRY(use()));
    }
    if (!op.prop("slice_sizes")) return error("', sizes = [...]' in dynamic_slice");
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "dynamic_update_slice") {  // `stablehlo.dynamic_update_slice %x, %u, %i, %j : ...`
    op.operands = MESHPLAN_TRY(uses_until(':'));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "while") {  // `stablehlo.while(%iterArg = %x, ...) : T, ... cond {...} do {...}`
    MESHPLAN_TRY(expect("(", "'(' opening the loop-carried values"));
    std::vector<PendingRef> names;
    if (!accept(")")) {
      do {
        names.push_back(MESHPLAN_TRY(value_name()));
        MESHPLAN_TRY(expect("=", "'=' and the initial value"));
        op.operands.push_back(MESHPLAN_TRY(use()));
      } while (accept(","));
      MESHPLAN_TRY(expect(")", "')' closing the loop-carried values"));
    }
    MESHPLAN_TRY(op_attr_dict(op));
    std::vector<TensorType> ts;
    if (!op.operands.empty()) {
      MESHPLAN_TRY(expect(":", "':' and the loop-carried types"));
      do ts.push_back(MESHPLAN_TRY(type()));
      while (accept(","));
    }
    MESHPLAN_TRY(check_operand_types(op, ts));
    results = ts;
    if (accept_word("attributes")) MESHPLAN_TRY(op_attr_dict(op));  // as MLIR prints them
    for (const char* part : {"cond", "do"}) {
      if (!accept_word(part)) return error(str("'", part, " {...}'"));
      Block b;
      scopes_.emplace_back();
      for (size_t i = 0; i < names.size(); ++i) {
        ValueId v = m_.add_value(ts[i], kNone, static_cast<uint32_t>(i));
        MESHPLAN_TRY(define(names[i].name, v, names[i].pos));
        b.args.push_back(v);
      }
      MESHPLAN_TRY(expect("{", str("'{' opening the loop's ", part, " region")));
      MESHPLAN_TRY(ops_until(b));
      MESHPLAN_TRY(expect("}", str("'}' closing the loop's ", part, " region")));
      scopes_.pop_back();
      op.regions.push_back(std::move(b));
    }
    return {};
  }
  if (s == "reverse") {  // `stablehlo.reverse %x, dims = [..] : T`
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(expect(",", "', dims = [...]'"));
    if (!accept_word("dims")) return error("'dims'");
    MESHPLAN_TRY(expect("=", "'=' after dims"));
    op.set_prop("dimensions", Attr::ints_array(MESHPLAN_TRY(int_list())));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "fft") {  // `stablehlo.fft %x, type = FFT, length = [..] : (T) -> R`
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(expect(",", "', type = FFT|IFFT|RFFT|IRFFT'"));
    if (!accept_word("type")) return error("'type'");
    MESHPLAN_TRY(expect("=", "'=' after type"));
    const size_t at = pos_;
    const std::string kind = MESHPLAN_TRY(ident("an fft type"));
    if (kind != "FFT" && kind != "IFFT" && kind != "RFFT" && kind != "IRFFT")
      return error_at(at, str("fft type ", kind, " is not one of FFT, IFFT, RFFT, IRFFT"));
    Attr a;
    a.kind = Attr::Kind::opaque;
    a.text = "#stablehlo<fft_type " + kind + ">";
    op.set_prop("fft_type", a);
    MESHPLAN_TRY(expect(",", "', length = [...]'"));
    if (!accept_word("length")) return error("'length'");
    MESHPLAN_TRY(expect("=", "'=' after length"));
    op.set_prop("fft_length", Attr::ints_array(MESHPLAN_TRY(int_list())));
    MESHPLAN_TRY(attrs_and_func_type(op, results, "':' and the function type"));
    return {};
  }
  if (s == "rng_bit_generator") {  // `stablehlo.rng_bit_generator %s, algorithm = NAME : ...`
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(expect(",", "', algorithm = NAME'"));
    if (!accept_word("algorithm")) return error("'algorithm'");
    MESHPLAN_TRY(expect("=", "'=' after algorithm"));
    Attr a;
    a.kind = Attr::Kind::opaque;
    a.text = "#stablehlo<rng_algorithm " + MESHPLAN_TRY(ident("an rng algorithm")) + ">";
    op.set_prop("rng_algorithm", a);
    MESHPLAN_TRY(attrs_and_func_type(op, results, "':' and the function type"));
    return {};
  }
  if (s == "cholesky") {  // `stablehlo.cholesky %a[, lower = true|false] : T`
    op.operands = {MESHPLAN_TRY(use())};
    if (accept(",")) {
      if (!accept_word("lower")) return error("'lower = true|false'");
      MESHPLAN_TRY(expect("=", "'=' after lower"));
      Attr b;
      b.kind = Attr::Kind::boolean;
      if (accept_word("true"))
        b.i = 1;
      else if (!accept_word("false"))
        return error("'true' or 'false' after 'lower ='");
      op.set_prop("lower", b);
    }
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "broadcast_in_dim" || s == "transpose") {
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(expect(",", "', dims = [...]'"));
    if (!accept_word("dims")) return error("'dims'");
    MESHPLAN_TRY(expect("=", "'=' after dims"));
    op.set_prop(s == "transpose" ? "permutation" : "broadcast_dimensions",
                Attr::ints_array(MESHPLAN_TRY(int_list())));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "concatenate") {
    op.operands.push_back(MESHPLAN_TRY(use()));
    while (accept(",")) {
      if (accept_word("dim")) {
        MESHPLAN_TRY(expect("=", "'=' after dim"));
        op.set_prop("dimension", Attr::integer(MESHPLAN_TRY(integer()), "i64"));
        break;
      }
      op.operands.push_back(MESHPLAN_TRY(use()));
    }
    if (!op.prop("dimension")) return error("', dim = N' in concatenate");
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "iota") {
    if (!accept_word("dim")) return error("'dim = N' in iota");
    MESHPLAN_TRY(expect("=", "'=' after dim"));
    op.set_prop("iota_dimension", Attr::integer(MESHPLAN_TRY(integer()), "i64"));
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the result type"));
    results = {MESHPLAN_TRY(type())};
    return {};
  }
  if (s == "einsum" || s == "unary_einsum") return einsum_op(op, results);
  if (s == "rng")
    return error_at(name_pos,
                    "stablehlo.rng is not supported: the specification leaves the numbers it "
                    "draws implementation-defined, so no result can be checked against it "
                    "(generate random inputs outside the program and pass them in)");
  if (s == "constant") {
    MESHPLAN_TRY(op_attr_dict(op));
    if (!accept("dense<")) return error("a dense<...> literal");
    Attr v = MESHPLAN_TRY(dense());
    results = {v.type};
    op.set_prop("value", std::move(v));
    return {};
  }
  if (s == "compare") {
    op.set_prop("comparison_direction",
                Attr::keyword(MESHPLAN_TRY(ident("a comparison direction (EQ, GT, ...)"))));
    MESHPLAN_TRY(expect(",", "','"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "','"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    if (accept(","))
      op.set_prop("compare_type", Attr::keyword(MESHPLAN_TRY(ident("a compare type"))));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "select") {
    op.operands = MESHPLAN_TRY(uses_until(':'));
    if (op.operands.size() != 3) return error_at(name_pos, "stablehlo.select takes 3 operands");
    MESHPLAN_TRY(op_attr_dict(op));
    MESHPLAN_TRY(expect(":", "':' and the select's types"));
    if (peek('(')) {
      auto [ins, outs] = MESHPLAN_TRY(func_type());
      MESHPLAN_TRY(check_operand_types(op, ins));
      results = outs;
    } else {
      MESHPLAN_TRY(type());
      MESHPLAN_TRY(expect(",", "', T' (the select's result type)"));
      results = {MESHPLAN_TRY(type())};
    }
    return {};
  }
  if (s == "clamp") {  // stablehlo.clamp %min, %x, %max : T  or  : (Tmin, T, Tmax) -> T
    op.operands = MESHPLAN_TRY(uses_until(':'));
    if (op.operands.size() != 3)
      return error_at(name_pos, "stablehlo.clamp takes 3 operands (min, operand, max)");
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "slice") {
    op.operands = {MESHPLAN_TRY(use())};
    MESHPLAN_TRY(expect("[", "'[' opening the slice ranges"));
    std::vector<int64_t> st, li, sr;
    if (!accept("]")) {
      do {
        st.push_back(MESHPLAN_TRY(integer()));
        MESHPLAN_TRY(expect(":", "':' in start:limit[:stride]"));
        li.push_back(MESHPLAN_TRY(integer()));
        sr.push_back(1);
        if (accept(":")) sr.back() = MESHPLAN_TRY(integer());
      } while (accept(","));
      MESHPLAN_TRY(expect("]", "']' closing the slice ranges"));
    }
    op.set_prop("start_indices", Attr::ints_array(st));
    op.set_prop("limit_indices", Attr::ints_array(li));
    op.set_prop("strides", Attr::ints_array(sr));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "dot_general") {
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "','"));
    op.operands.push_back(MESHPLAN_TRY(use()));
    std::vector<int64_t> lb, rb, lc, rc;
    while (accept(",")) {
      std::string key = MESHPLAN_TRY(ident("batching_dims, contracting_dims or precision"));
      MESHPLAN_TRY(expect("=", "'='"));
      if (key == "batching_dims" || key == "contracting_dims") {
        auto l = MESHPLAN_TRY(int_list());
        if (!accept_word("x")) return error("'x' between the lhs and rhs dimensions");
        auto r = MESHPLAN_TRY(int_list());
        (key == "batching_dims" ? lb : lc) = l;
        (key == "batching_dims" ? rb : rc) = r;
      } else if (key == "precision") {
        op.set_prop("precision_config", MESHPLAN_TRY(attr()));
      } else if (key == "algorithm") {
        op.set_prop("algorithm", MESHPLAN_TRY(attr()));
      } else {
        return error_at(pos_, str("unknown dot_general field '", key, "'"));
      }
    }
    op.set_prop("lhs_batching_dimensions", Attr::ints_array(lb));
    op.set_prop("rhs_batching_dimensions", Attr::ints_array(rb));
    op.set_prop("lhs_contracting_dimensions", Attr::ints_array(lc));
    op.set_prop("rhs_contracting_dimensions", Attr::ints_array(rc));
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  if (s == "reduce") {
    // `(%x init: %i)`, or `(%x init: %i), (%y init: %j)` for a variadic reduce (argmax).
    std::vector<ValueId> inputs, inits;
    do {
      MESHPLAN_TRY(expect("(", "'(' opening the reduce operands"));
      inputs.push_back(MESHPLAN_TRY(use()));
      if (!accept_word("init")) return error("'init:'");
      MESHPLAN_TRY(expect(":", "':' after init"));
      inits.push_back(MESHPLAN_TRY(use()));
      MESHPLAN_TRY(expect(")", "')' closing '(operand init: value)'"));
    } while (accept(","));
    op.operands = inputs;
    op.operands.insert(op.operands.end(), inits.begin(), inits.end());
    std::string applies;
    if (accept_word("applies")) {
      if (inputs.size() != 1) return error_at(pos_, "'applies' needs a single-input reduce");
      applies = MESHPLAN_TRY(ident("the reduction op"));
    }
    if (!accept_word("across")) return error("'across dimensions = [...]'");
    if (!accept_word("dimensions")) return error("'dimensions'");
    MESHPLAN_TRY(expect("=", "'='"));
    op.set_prop("dimensions", Attr::ints_array(MESHPLAN_TRY(int_list())));
    MESHPLAN_TRY(attrs_and_func_type(op, results, "':' and the reduce's type"));
    Block b;
    if (!applies.empty()) {
      TensorType scalar{{}, m_.values[op.operands[1]].type.element};
      ValueId a0 = m_.add_value(scalar, kNone, 0), a1 = m_.add_value(scalar, kNone, 1);
      b.args = {a0, a1};
      OpId body = m_.add_op(applies, {a0, a1}, {scalar}, loc_at(name_pos));
      OpId ret = m_.add_op("stablehlo.return", {m_.ops[body].results[0]}, {}, loc_at(name_pos));
      b.ops = {body, ret};
    } else {
      if (!accept_word("reducer")) return error("'applies OP' or 'reducer(...)'");
      scopes_.emplace_back();
      // One `(%lhs: T, %rhs: T)` group per input; the block takes every lhs, then every rhs.
      std::vector<ValueId> lhs, rhs;
      for (size_t k = 0; k < inputs.size(); ++k) {
        Block group;
        MESHPLAN_TRY(region_args(group));
        if (group.args.size() != 2)
          return error_at(pos_, "a reducer argument group has two arguments (lhs, rhs)");
        lhs.push_back(group.args[0]);
        rhs.push_back(group.args[1]);
      }
      b.args = lhs;
      b.args.insert(b.args.end(), rhs.begin(), rhs.end());
      for (uint32_t i = 0; i < b.args.size(); ++i) m_.values[b.args[i]].index = i;
      MESHPLAN_TRY(expect("{", "'{' opening the reducer"));
      MESHPLAN_TRY(ops_until(b));
      MESHPLAN_TRY(expect("}", "'}' closing the reducer"));
      scopes_.pop_back();
    }
    op.regions.push_back(std::move(b));
    return {};
  }
  if (s == "convolution") {
    MESHPLAN_TRY(expect("(", "'(' opening the convolution operands"));
    op.operands = MESHPLAN_TRY(uses_until(')'));
    MESHPLAN_TRY(expect(")", "')'"));
    if (!accept_word("dim_numbers")) return error("'dim_numbers ='");
    MESHPLAN_TRY(expect("=", "'='"));
    ws();
    size_t b = pos_;
    while (pos_ < t_.size() && t_[pos_] != ',' && t_[pos_] != '{' && t_[pos_] != ':') {
      if (t_[pos_] == '[')
        MESHPLAN_TRY(balanced('[', ']'));
      else
        ++pos_;
    }
    std::string dn(t_.substr(b, pos_ - b));
    while (!dn.empty() && std::isspace(static_cast<unsigned char>(dn.back()))) dn.pop_back();
    Attr d;
    d.kind = Attr::Kind::opaque;
    d.text = dn;
    op.set_prop("dim_numbers", d);
    if (accept(",")) {
      if (!accept_word("window")) return error("'window = {...}'");
      MESHPLAN_TRY(expect("=", "'='"));
      Attr w;
      w.kind = Attr::Kind::opaque;
      w.text = MESHPLAN_TRY(balanced('{', '}'));
      op.set_prop("window", w);
    }
    MESHPLAN_TRY(op_attr_dict(op));
    return same_or_func_type(op, results);
  }
  return error_at(name_pos,
                  str("unsupported op '", n, "' in pretty form (write it in generic form \"", n,
                      "\"(...); the pretty forms read are the elementwise ops, ",
                      "convert, reshape, broadcast_in_dim, transpose, reverse, ",
                      "concatenate, iota, constant, compare, select, clamp, slice, cholesky, "
                      "rng_bit_generator, ",
                      "pad, dynamic_slice, dynamic_update_slice, dot, dot_general, ",
                      "reduce, reduce_precision, convolution, optimization_barrier, custom_call "
                      "and chlo's ops)"));
}

Status Parser::call_op(Op& op, std::vector<TensorType>& results) {
  Attr callee;
  callee.kind = Attr::Kind::symbol;
  callee.text = MESHPLAN_TRY(symbol());
  op.set_prop("callee", std::move(callee));
  MESHPLAN_TRY(expect("(", "'(' opening the call's operands"));
  op.operands = MESHPLAN_TRY(uses_until(')'));
  MESHPLAN_TRY(expect(")", "')' closing the call's operands"));
  MESHPLAN_TRY(op_attr_dict(op));
  MESHPLAN_TRY(expect(":", "':' and the call's function type"));
  auto [ins, outs] = MESHPLAN_TRY(func_type());
  MESHPLAN_TRY(check_operand_types(op, ins));
  results = outs;
  return {};
}

Status Parser::composite_op(Op& op, std::vector<TensorType>& results) {
  Attr name;
  name.kind = Attr::Kind::string;
  name.text = MESHPLAN_TRY(string_lit());
  op.set_prop("name", std::move(name));
  if (peek('%')) {
    do op.operands.push_back(MESHPLAN_TRY(use()));
    while (accept(","));
  }
  MESHPLAN_TRY(op_attr_dict(op));
  MESHPLAN_TRY(expect(":", "':' and the composite's function type"));
  auto [ins, outs] = MESHPLAN_TRY(func_type());
  MESHPLAN_TRY(check_operand_types(op, ins));
  results = outs;
  return {};
}

Status Parser::composite_as_call(Op& op, size_t at) {
  const Attr* d = op.prop("decomposition");
  if (!d) d = op.attr("decomposition");
  if (!d || d->kind != Attr::Kind::symbol)
    return error_at(at, "stablehlo.composite without 'decomposition = @function'");
  Attr callee = *d;
  std::erase_if(op.attrs, [](const NamedAttr& a) {
    return a.first == "name" || a.first == "decomposition" || a.first == "composite_attributes" ||
           a.first == "version";
  });
  op.props.clear();
  op.name = "func.call";
  op.set_prop("callee", std::move(callee));
  return {};
}

Status Parser::custom_call_op(Op& op, std::vector<TensorType>& results) {
  Attr target;
  target.kind = Attr::Kind::string;
  target.text = MESHPLAN_TRY(symbol());
  op.set_prop("call_target_name", std::move(target));
  MESHPLAN_TRY(expect("(", "'(' opening the custom_call's operands"));
  op.operands = MESHPLAN_TRY(uses_until(')'));
  MESHPLAN_TRY(expect(")", "')' closing the custom_call's operands"));
  MESHPLAN_TRY(op_attr_dict(op));
  // The pretty form writes the inherent attributes in the dictionary.
  for (const char* k :
       {"call_target_name", "has_side_effect", "backend_config", "api_version",
        "called_computations", "operand_layouts", "result_layouts", "output_operand_aliases"})
    for (auto it = op.attrs.begin(); it != op.attrs.end(); ++it)
      if (it->first == k) {
        op.set_prop(it->first, it->second);
        op.attrs.erase(it);
        break;
      }
  MESHPLAN_TRY(expect(":", "':' and the custom_call's function type"));
  auto [ins, outs] = MESHPLAN_TRY(func_type());
  MESHPLAN_TRY(check_operand_types(op, ins));
  results = outs;
  return {};
}



/// `tensor.empty() : tensor<...>`: a tensor whose contents are unspecified (MLIR's tensor
/// dialect). Any contents are a correct reading; meshplan defines them as zeros, read as the
/// constant `dense<0>` of the result type (printed back as that constant).
Status Parser::tensor_empty(Op& op, std::vector<TensorType>& results) {
  MESHPLAN_TRY(expect("(", "'()' after tensor.empty"));
  if (!peek(')'))
    return error("')': tensor.empty takes no operands (dynamic sizes are not supported)");
  MESHPLAN_TRY(expect(")", "')'"));
  MESHPLAN_TRY(op_attr_dict(op));
  MESHPLAN_TRY(expect(":", "':' and the result type of tensor.empty"));
  TensorType t = MESHPLAN_TRY(type());
  Attr zero;
  zero.kind = Attr::Kind::dense;
  zero.type = t;
  zero.values = {0.0};
  op.name = "stablehlo.constant";
  op.set_prop("value", std::move(zero));
  results = {std::move(t)};
  return {};
}

/// `stablehlo.einsum %a, %b, config = "ab,bc->ac" : (A, B) -> R` (unary_einsum: one operand).
Status Parser::einsum_op(Op& op, std::vector<TensorType>& results) {
  op.operands.push_back(MESHPLAN_TRY(use()));
  MESHPLAN_TRY(expect(",", "',' and the next operand or 'config = \"...\"'"));
  if (!peek("config")) {
    op.operands.push_back(MESHPLAN_TRY(use()));
    MESHPLAN_TRY(expect(",", "', config = \"...\"'"));
  }
  if (!accept_word("config")) return error("'config = \"...\"' (the einsum config)");
  MESHPLAN_TRY(expect("=", "'=' after config"));
  Attr config;
  config.kind = Attr::Kind::string;
  config.text = MESHPLAN_TRY(string_lit());
  op.set_prop("einsum_config", std::move(config));
  return attrs_and_func_type(op, results, "':' and the einsum's function type");
}

}  // namespace meshplan::planner::shlo::parse
