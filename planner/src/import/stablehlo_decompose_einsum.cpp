// stablehlo.einsum and stablehlo.unary_einsum (deprecated in StableHLO but still written by
// older exporters), rewritten when a module is read into the ops their `einsum_config`
// ("ab,bc->ac", "abc->ca") stands for:
//   - a label in one operand only and not in the output is summed over first (reduce add);
//   - labels in both operands: in the output a batching dim, otherwise a contracting dim of one
//     dot_general (whose result holds batch dims, then the lhs's free dims, then the rhs's);
//   - a transpose brings the dims to the output's order.
// A label written twice in one operand (a diagonal), an ellipsis and an output label that no
// operand has are refused at the op's location.
#include <algorithm>
#include <string>
#include <vector>

#include "import/stablehlo_parser.hpp"

namespace meshplan::planner::shlo {

namespace {

class EinsumBuilder {
 public:
  EinsumBuilder(Module& m, const Op& at, std::vector<OpId>& out) : m_(m), loc_(at.loc), out_(out) {}

  ValueId op(std::string name, std::vector<ValueId> operands, const TensorType& type,
             std::vector<NamedAttr> props) {
    OpId o = m_.add_op(std::move(name), std::move(operands), {type}, loc_);
    m_.ops[o].props = std::move(props);
    out_.push_back(o);
    return m_.ops[o].results[0];
  }
  /// `x` summed over its dims `dims` (ascending).
  ValueId sum(ValueId x, const std::vector<int64_t>& dims) {
    const TensorType t = m_.values[x].type;
    TensorType scalar{{}, t.element};
    Attr zero;
    zero.kind = Attr::Kind::dense;
    zero.type = scalar;
    zero.values = {0.0};
    ValueId init = op("stablehlo.constant", {}, scalar, {{"value", zero}});
    TensorType result{{}, t.element};
    for (int64_t d = 0; d < static_cast<int64_t>(t.shape.size()); ++d)
      if (std::find(dims.begin(), dims.end(), d) == dims.end())
        result.shape.push_back(t.shape[static_cast<size_t>(d)]);
    OpId r = m_.add_op("stablehlo.reduce", {x, init}, {result}, loc_);
    ValueId a0 = m_.add_value(scalar, kNone, 0), a1 = m_.add_value(scalar, kNone, 1);
    OpId add = m_.add_op("stablehlo.add", {a0, a1}, {scalar}, loc_);
    OpId ret = m_.add_op("stablehlo.return", {m_.ops[add].results[0]}, {}, loc_);
    m_.ops[r].props = {{"dimensions", Attr::ints_array(dims)}};
    m_.ops[r].regions.push_back(Block{{a0, a1}, {add, ret}});
    out_.push_back(r);
    return m_.ops[r].results[0];
  }
  /// The op that computed `v` defines `result` instead (the einsum's result its users read).
  void rename(ValueId v, ValueId result) {
    OpId d = m_.values[v].def;
    m_.ops[d].results[m_.values[v].index] = result;
    m_.values[result].def = d;
    m_.values[result].index = m_.values[v].index;
  }

 private:
  Module& m_;
  Location loc_;
  std::vector<OpId>& out_;
};

/// One operand's dims after its private labels are summed away.
struct Side {
  ValueId value;
  std::string labels;
};

}  // namespace

bool is_einsum(std::string_view name) {
  return name == "stablehlo.einsum" || name == "stablehlo.unary_einsum";
}

Status decompose_einsum(Module& m, OpId o, std::vector<OpId>& out) {
  const Op op = m.ops[o];  // copied: building grows the arena
  const bool unary = op.name == "stablehlo.unary_einsum";
  auto bad = [&](auto&&... what) {
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, ": ", what...);
  };
  const size_t inputs = unary ? 1 : 2;
  if (op.operands.size() != inputs || op.results.size() != 1)
    return bad("expected ", inputs, " operand", unary ? "" : "s", " and one result");
  const Attr* c = op.prop("einsum_config");
  if (!c) c = op.attr("einsum_config");
  if (!c || c->kind != Attr::Kind::string) return bad("einsum_config = \"...\" is missing");
  const std::string& config = c->text;
  if (config.find("...") != std::string::npos)
    return bad("einsum_config \"", config, "\": an ellipsis is not supported");
  const size_t arrow = config.find("->");
  if (arrow == std::string::npos)
    return bad("einsum_config \"", config, "\" has no '->' (implicit outputs are not supported)");
  std::vector<std::string> ins;
  std::string lhs = config.substr(0, arrow), output = config.substr(arrow + 2);
  if (unary) {
    ins = {lhs};
  } else {
    const size_t comma = lhs.find(',');
    if (comma == std::string::npos) return bad("einsum_config \"", config, "\" lacks ','");
    ins = {lhs.substr(0, comma), lhs.substr(comma + 1)};
  }
  auto valid = [](const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    });
  };
  auto repeated = [](const std::string& s) {
    for (size_t i = 0; i < s.size(); ++i)
      if (s.find(s[i], i + 1) != std::string::npos) return true;
    return false;
  };
  const TensorType rt = m.values[op.results[0]].type;  // copied: building grows the arena
  for (size_t k = 0; k <= inputs; ++k) {
    const std::string& s = k < inputs ? ins[k] : output;
    if (!valid(s))
      return bad("einsum_config \"", config, "\": '", s, "' is not a list of letter labels");
    if (repeated(s))
      return bad("einsum_config \"", config, "\": '", s,
                 "' repeats a label (diagonals are not supported)");
    const TensorType& t = k < inputs ? m.values[op.operands[k]].type : rt;
    if (s.size() != t.shape.size())
      return bad("einsum_config \"", config, "\": '", s, "' names ", s.size(),
                 " dims of a rank-", t.shape.size(), k < inputs ? " operand" : " result");
  }
  // Every label's size, the same wherever it is written.
  auto size_of = [&](char label, int64_t& size) -> Status {
    size = -1;
    for (size_t k = 0; k <= inputs; ++k) {
      const std::string& s = k < inputs ? ins[k] : output;
      const TensorType& t = k < inputs ? m.values[op.operands[k]].type : rt;
      size_t at = s.find(label);
      if (at == std::string::npos) continue;
      if (size >= 0 && t.shape[at] != size)
        return bad("einsum_config \"", config, "\": label '", std::string(1, label),
                   "' has sizes ", size, " and ", t.shape[at]);
      size = t.shape[at];
    }
    return {};
  };
  for (char label : output) {
    if (std::none_of(ins.begin(), ins.end(),
                     [&](const std::string& s) { return s.find(label) != std::string::npos; }))
      return bad("einsum_config \"", config, "\": output label '", std::string(1, label),
                 "' is in no operand");
  }
  for (size_t k = 0; k < inputs; ++k)
    for (char label : ins[k]) {
      int64_t size = 0;
      MESHPLAN_TRY(size_of(label, size));
    }
  for (size_t k = 0; k < inputs; ++k)
    if (m.values[op.operands[k]].type.element != rt.element)
      return bad("operand ", k, " has element type ", m.values[op.operands[k]].type.element,
                 " and the result ", rt.element, " (expected the same)");

  EinsumBuilder b(m, op, out);
  std::vector<Side> sides;
  for (size_t k = 0; k < inputs; ++k) {
    const std::string& other = inputs == 2 ? ins[1 - k] : std::string();
    std::vector<int64_t> summed;
    std::string kept;
    for (size_t d = 0; d < ins[k].size(); ++d) {
      const char label = ins[k][d];
      if (output.find(label) == std::string::npos && other.find(label) == std::string::npos)
        summed.push_back(static_cast<int64_t>(d));
      else
        kept.push_back(label);
    }
    ValueId v = op.operands[k];
    if (!summed.empty()) v = b.sum(v, summed);
    sides.push_back({v, kept});
  }
  std::string labels = sides[0].labels;  // the dims of the value computed so far
  ValueId v = sides[0].value;
  if (inputs == 2) {
    const std::string &l = sides[0].labels, &r = sides[1].labels;
    std::vector<int64_t> lb, rb, lc, rc;
    std::string batch, lfree, rfree;
    for (size_t d = 0; d < l.size(); ++d) {
      const size_t at = r.find(l[d]);
      if (at == std::string::npos) {
        lfree.push_back(l[d]);
      } else if (output.find(l[d]) != std::string::npos) {
        lb.push_back(static_cast<int64_t>(d));
        rb.push_back(static_cast<int64_t>(at));
        batch.push_back(l[d]);
      } else {
        lc.push_back(static_cast<int64_t>(d));
        rc.push_back(static_cast<int64_t>(at));
      }
    }
    for (char label : r)
      if (l.find(label) == std::string::npos) rfree.push_back(label);
    labels = batch + lfree + rfree;
    TensorType t{{}, rt.element};
    for (char label : labels) {
      int64_t size = 0;
      MESHPLAN_TRY(size_of(label, size));
      t.shape.push_back(size);
    }
    v = b.op("stablehlo.dot_general", {sides[0].value, sides[1].value}, t,
             {{"lhs_batching_dimensions", Attr::ints_array(lb)},
              {"rhs_batching_dimensions", Attr::ints_array(rb)},
              {"lhs_contracting_dimensions", Attr::ints_array(lc)},
              {"rhs_contracting_dimensions", Attr::ints_array(rc)}});
  }
  std::vector<int64_t> perm;
  bool identity = true;
  for (size_t d = 0; d < output.size(); ++d) {
    perm.push_back(static_cast<int64_t>(labels.find(output[d])));
    identity = identity && perm.back() == static_cast<int64_t>(d);
  }
  // An einsum that only renames (`ab->ab`) still needs an op to define its result.
  if (!identity || v == op.operands[0])
    v = b.op("stablehlo.transpose", {v}, rt, {{"permutation", Attr::ints_array(perm)}});
  b.rename(v, op.results[0]);
  return {};
}

}  // namespace meshplan::planner::shlo
