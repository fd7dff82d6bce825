// Parser for the StableHLO/Shardy textual form (pretty and generic syntax): the module
// structure (module, sdy.mesh, func.func, regions), values and scopes, and the public entry
// points. Every error reads "file:line:col: expected X, found 'Y'".
#include <fstream>
#include <sstream>

#include "import/stablehlo_parser.hpp"
#include "import/stablehlo_verify.hpp"
#include "meshplan/planner/sharding_strategies.hpp"

namespace meshplan::planner::shlo::parse {

Result<Module> Parser::run() {
  while (peek("#loc")) MESHPLAN_TRY(loc_alias());
  ws();
  if (accept_word("module")) {
    m_.has_module_op = true;
    ws();
    if (peek('@')) m_.module_name = MESHPLAN_TRY(symbol());
    if (accept_word("attributes")) m_.module_attrs = MESHPLAN_TRY(attr_dict());
    MESHPLAN_TRY(expect("{", "'{' opening the module body"));
    MESHPLAN_TRY(top_items("}"));
    MESHPLAN_TRY(expect("}", "'}' closing the module"));
    MESHPLAN_TRY(skip_loc());
    while (peek("#loc")) MESHPLAN_TRY(loc_alias());  // the location table after the module
    ws();
    if (peek("module")) {
      // MLIR would nest both modules in an implicit outer one; meshplan compiles one program
      // per file, and taking only the first would drop the rest unseen.
      size_t at = pos_;
      accept_word("module");
      std::string name = peek('@') ? "module @" + MESHPLAN_TRY(symbol()) : "an unnamed module";
      return error_at(at, str("a second module (", name, ") follows ",
                              m_.module_name.empty() ? "the first module"
                                                     : "module @" + m_.module_name,
                              "; meshplan compiles one module per file (split the file, one "
                              "module in each)"));
    }
    if (pos_ < t_.size()) return error("a location alias '#loc...' or the end of input");
  } else {
    MESHPLAN_TRY(top_items(""));
  }
  ws();
  if (pos_ < t_.size()) return error("end of input");
  MESHPLAN_TRY(decompose_ops(m_));
  MESHPLAN_TRY(inline_calls(m_, import));
  MESHPLAN_TRY(gspmd_shard_map_to_manual(m_));
  MESHPLAN_TRY(drop_gspmd_annotations(m_));
  return std::move(m_);
}

Result<Parser::PendingRef> Parser::value_name() {
  ws();
  if (pos_ >= t_.size() || t_[pos_] != '%') return error("a value '%name'");
  size_t b = pos_++;
  while (pos_ < t_.size() &&
         (std::isalnum(static_cast<unsigned char>(t_[pos_])) || t_[pos_] == '_' ||
          t_[pos_] == '$' || t_[pos_] == '.' || t_[pos_] == '#'))
    ++pos_;
  if (pos_ == b + 1) return error_at(b, "expected a value name after '%'");
  return PendingRef{std::string(t_.substr(b, pos_ - b)), b};
}

Result<ValueId> Parser::use() {
  PendingRef r = MESHPLAN_TRY(value_name());
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(r.name);
    if (f != it->end()) return f->second;
  }
  return error_at(r.pos, str("use of undefined value ", r.name));
}

Result<std::vector<ValueId>> Parser::uses_until(char close) {
  std::vector<ValueId> out;
  if (peek(close)) return out;
  do out.push_back(MESHPLAN_TRY(use()));
  while (accept(","));
  return out;
}

Status Parser::define(const std::string& name, ValueId v, size_t at) {
  if (!scopes_.back().emplace(name, v).second)
    return error_at(at, str("value ", name, " is defined twice"));
  return {};
}

Status Parser::top_items(std::string_view until) {
  while (true) {
    ws();
    if (pos_ >= t_.size() || (!until.empty() && peek(until))) return {};
    if (peek("#loc")) {  // location alias definitions: `#loc1 = loc(...)`
      MESHPLAN_TRY(loc_alias());
      continue;
    }
    if (accept_word("sdy.mesh")) {
      MESHPLAN_TRY(mesh_decl());
      MESHPLAN_TRY(skip_loc());
    } else if (accept_word("func.func")) {
      MESHPLAN_TRY(func());
    } else {
      return error("'sdy.mesh', 'func.func' or 'module'");
    }
  }
}

Status Parser::mesh_decl() {
  MeshDecl mesh;
  size_t at = pos_;
  mesh.name = MESHPLAN_TRY(symbol());
  if (m_.mesh(mesh.name)) return error_at(at, str("mesh @", mesh.name, " declared twice"));
  MESHPLAN_TRY(expect("=", "'=' after the mesh name"));
  MESHPLAN_TRY(expect("<", "'<' opening the mesh"));
  MESHPLAN_TRY(mesh_body(mesh));
  m_.meshes.push_back(std::move(mesh));
  return {};
}

Status Parser::mesh_body(MeshDecl& mesh) {
  MESHPLAN_TRY(expect("[", "'[' opening the mesh axes"));
  if (!accept("]")) {
    do {
      size_t at = pos_;
      std::string axis = MESHPLAN_TRY(string_lit());
      MESHPLAN_TRY(expect("=", "'=' and the axis size"));
      int64_t size = MESHPLAN_TRY(integer("an axis size"));
      if (size < 1) return error_at(pos_, "axis sizes must be positive");
      if (mesh.axis_size(axis) != 0)
        return error_at(at, str("axis \"", axis, "\" appears twice in mesh @", mesh.name));
      mesh.axes.emplace_back(axis, size);
    } while (accept(","));
    MESHPLAN_TRY(expect("]", "']' closing the mesh axes"));
  }
  if (accept(",")) {
    if (!accept_word("device_ids")) return error("'device_ids'");
    MESHPLAN_TRY(expect("=", "'='"));
    MESHPLAN_TRY(expect("[", "'['"));
    do mesh.device_ids.push_back(MESHPLAN_TRY(integer()));
    while (accept(","));
    MESHPLAN_TRY(expect("]", "']'"));
  }
  MESHPLAN_TRY(expect(">", "'>' closing the mesh"));
  return {};
}

Status Parser::func() {
  Func f;
  f.loc = here();
  if (accept_word("public"))
    f.visibility = "public";
  else if (accept_word("private"))
    f.visibility = "private";
  f.name = MESHPLAN_TRY(symbol());
  scopes_.clear();
  scopes_.emplace_back();
  MESHPLAN_TRY(expect("(", "'(' opening the argument list"));
  if (!accept(")")) {
    do {
      PendingRef r = MESHPLAN_TRY(value_name());
      MESHPLAN_TRY(expect(":", "':' and the argument type"));
      TensorType ty = MESHPLAN_TRY(type());
      ArgInfo a;
      a.value = m_.add_value(std::move(ty), kNone, static_cast<uint32_t>(f.args.size()));
      if (peek('{')) {
        std::vector<TensorSharding> sh;
        a.attrs = MESHPLAN_TRY(dict_with_sharding(&sh, false));
        if (!sh.empty()) m_.values[a.value].sharding = sh[0];
      }
      MESHPLAN_TRY(skip_loc());
      MESHPLAN_TRY(define(r.name, a.value, r.pos));
      f.body.args.push_back(a.value);
      f.args.push_back(std::move(a));
    } while (accept(","));
    MESHPLAN_TRY(expect(")", "')' or ',' in the argument list"));
  }
  if (accept("->")) {
    if (accept("(")) {
      f.paren_results = true;
      if (!accept(")")) {
        do f.results.push_back(MESHPLAN_TRY(result_info(true)));
        while (accept(","));
        MESHPLAN_TRY(expect(")", "')' or ',' in the result list"));
      }
    } else {
      f.results.push_back(MESHPLAN_TRY(result_info(false)));
    }
  }
  if (accept_word("attributes")) f.attrs = MESHPLAN_TRY(attr_dict());
  MESHPLAN_TRY(expect("{", "'{' opening the function body"));
  MESHPLAN_TRY(ops_until(f.body));
  MESHPLAN_TRY(expect("}", "'}' closing the function body"));
  MESHPLAN_TRY(skip_loc());
  if (f.body.ops.empty() || m_.ops[f.body.ops.back()].name != "func.return")
    return error_at(pos_ - 1, str("function @", f.name, " does not end with return"));
  const Op& ret = m_.ops[f.body.ops.back()];
  if (ret.operands.size() != f.results.size())
    return fail(ErrorCode::invalid_argument, ret.loc.str(), ": return has ", ret.operands.size(),
                " values but @", f.name, " declares ", f.results.size(), " results");
  for (size_t i = 0; i < f.results.size(); ++i)
    if (!(m_.values[ret.operands[i]].type == f.results[i].type))
      return fail(ErrorCode::invalid_argument, ret.loc.str(), ": return value ", i, " has type ",
                  type_string(m_.values[ret.operands[i]].type), " but @", f.name, " declares ",
                  type_string(f.results[i].type));
  m_.funcs.push_back(std::move(f));
  return {};
}

Result<ResultInfo> Parser::result_info(bool allow_attrs) {
  ResultInfo r;
  r.type = MESHPLAN_TRY(type());
  if (allow_attrs && peek('{')) {
    std::vector<TensorSharding> sh;
    r.attrs = MESHPLAN_TRY(dict_with_sharding(&sh, false));
    if (!sh.empty()) r.sharding = sh[0];
  }
  return r;
}

Status Parser::ops_until(Block& block) {
  Nest nest(*this);
  if (nest.too_deep()) return too_deep();
  while (true) {
    ws();
    if (pos_ >= t_.size()) return error("'}' closing a region");
    if (peek('}')) return {};
    OpId o = MESHPLAN_TRY(operation());
    block.ops.push_back(o);
  }
}

Result<Block> Parser::region(bool allow_header) {
  Block b;
  MESHPLAN_TRY(expect("{", "'{' opening a region"));
  scopes_.emplace_back();
  if (allow_header && accept("^")) {
    MESHPLAN_TRY(ident("a block label"));
    if (accept("(")) {
      do {
        PendingRef r = MESHPLAN_TRY(value_name());
        MESHPLAN_TRY(expect(":", "':' and the block argument type"));
        ValueId v = m_.add_value(MESHPLAN_TRY(type()), kNone, static_cast<uint32_t>(b.args.size()));
        MESHPLAN_TRY(skip_loc());
        MESHPLAN_TRY(define(r.name, v, r.pos));
        b.args.push_back(v);
      } while (accept(","));
      MESHPLAN_TRY(expect(")", "')' closing the block arguments"));
    }
    MESHPLAN_TRY(expect(":", "':' after the block label"));
  }
  MESHPLAN_TRY(ops_until(b));
  MESHPLAN_TRY(expect("}", "'}' closing a region"));
  scopes_.pop_back();
  return b;
}

Status Parser::region_args(Block& b) {
  MESHPLAN_TRY(expect("(", "'(' opening the region arguments"));
  if (accept(")")) return {};
  do {
    PendingRef r = MESHPLAN_TRY(value_name());
    MESHPLAN_TRY(expect(":", "':' and the argument type"));
    ValueId v = m_.add_value(MESHPLAN_TRY(type()), kNone, static_cast<uint32_t>(b.args.size()));
    MESHPLAN_TRY(skip_loc());
    MESHPLAN_TRY(define(r.name, v, r.pos));
    b.args.push_back(v);
  } while (accept(","));
  return expect(")", "')' closing the region arguments");
}

Status Parser::skip_loc() {
  if (!accept_word("loc")) return {};
  if (!peek('(')) return error("'(' after loc");
  MESHPLAN_TRY(balanced('(', ')'));
  return {};
}

Status Parser::loc_alias() {
  MESHPLAN_TRY(expect("#", "'#'"));
  MESHPLAN_TRY(ident("a location alias name"));
  MESHPLAN_TRY(expect("=", "'=' in a location alias"));
  if (!peek("loc")) return error("'loc(...)' (only location aliases are supported at top level)");
  return skip_loc();
}

Status Parser::op_attr_dict(Op& op) {
  if (!peek('{')) return {};
  op.attrs = MESHPLAN_TRY(dict_with_sharding(&op.shardings, true));
  return {};
}

Status Parser::attrs_and_func_type(Op& op, std::vector<TensorType>& results,
                                   std::string_view what) {
  MESHPLAN_TRY(op_attr_dict(op));
  MESHPLAN_TRY(expect(":", what));
  auto [ins, outs] = MESHPLAN_TRY(func_type());
  MESHPLAN_TRY(check_operand_types(op, ins));
  results = std::move(outs);
  return {};
}

Status Parser::same_or_func_type(Op& op, std::vector<TensorType>& results) {
  MESHPLAN_TRY(expect(":", "':' and the op's type"));
  ws();
  type_pos_ = pos_;
  if (peek('(')) {
    auto [ins, outs] = MESHPLAN_TRY(func_type());
    MESHPLAN_TRY(check_operand_types(op, ins));
    results = outs;
    return {};
  }
  TensorType t = MESHPLAN_TRY(type());
  for (ValueId v : op.operands)
    if (!(m_.values[v].type == t))
      return error_at(type_pos_, str(op.name, ": operand type ", type_string(m_.values[v].type),
                                     " differs from the written type ", type_string(t)));
  results = {t};
  return {};
}

Status Parser::check_operand_types(const Op& op, const std::vector<TensorType>& ins) {
  if (ins.size() != op.operands.size())
    return error_at(
        pos_, str(op.name, ": ", op.operands.size(), " operands but the type lists ", ins.size()));
  for (size_t i = 0; i < ins.size(); ++i)
    if (!(m_.values[op.operands[i]].type == ins[i]))
      return error_at(pos_, str(op.name, ": operand ", i, " has type ",
                                type_string(m_.values[op.operands[i]].type),
                                " but the op's type says ", type_string(ins[i])));
  return {};
}

}  // namespace meshplan::planner::shlo::parse

namespace meshplan::planner::shlo {

Result<Module> parse_module(std::string_view text, std::string file) {
  parse::Parser p(text, std::move(file));
  Module m = MESHPLAN_TRY(p.run());
  MESHPLAN_TRY(verify_module(m));
  return m;
}

Result<Module> parse_module_file_for_propagation(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::io, "cannot open '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_module_for_propagation(ss.str(), path);
}

Result<Module> parse_module_for_propagation(std::string_view text, std::string file) {
  parse::Parser p(text, std::move(file));
  p.import = {.unroll_loops = false, .drop_barriers = false, .inline_calls = false, .tokens = true};
  Module m = MESHPLAN_TRY(p.run());
  MESHPLAN_TRY(verify_module(m, SizeLimits::text));
  return m;
}

Result<Module> parse_module_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::io, "cannot open '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_module(ss.str(), path);
}

}  // namespace meshplan::planner::shlo
