// tt-mlir's override-conv2d-config ("conv1=act_block_h_override#64:act_block_w_div#2,conv2=...")
// applied to a graph's conv2d ops: the parameters meshplan models become the op's block
// attributes (which every policy then plans with), shard_layout becomes an output-layout
// override, deallocate_activation the op's attribute, and the rest are refused unless they state
// what meshplan does anyway.
#include <algorithm>
#include <charconv>

#include "meshplan/planner/policies.hpp"

namespace meshplan::planner {

namespace {

void set_attribute(Op& op, std::string name, AttrValue value) {
  auto it = std::lower_bound(op.attributes.begin(), op.attributes.end(), name,
                             [](const Attribute& a, const std::string& n) { return a.name < n; });
  if (it != op.attributes.end() && it->name == name)
    it->value = value;
  else
    op.attributes.insert(it, Attribute{std::move(name), value});
}

std::string activation_of(const Op& op) {
  const Attribute* a = op.attribute("activation");
  if (!a) return "none";
  const std::string* s = std::get_if<std::string>(&a->value);
  return s ? *s : "none";
}

Status apply_one(Graph& g, std::string_view e, std::vector<std::string>& output_overrides) {
  size_t eq = e.find('=');
  if (eq == std::string_view::npos || eq == 0 || e.find('=', eq + 1) != std::string_view::npos)
    return fail(ErrorCode::invalid_argument, "override-conv2d-config '", e,
                "' is not of the form op=param#value:param#value:...");
  std::string_view name = e.substr(0, eq);
  auto it = std::find_if(g.ops.begin(), g.ops.end(), [&](const Op& op) { return op.name == name; });
  if (it == g.ops.end())
    return fail(ErrorCode::invalid_argument, "override-conv2d-config '", e, "': graph '", g.name,
                "' has no op named '", name, "'");
  Op& op = *it;
  if (op.kind != device::OpKind::conv2d)
    return fail(ErrorCode::invalid_argument, "override-conv2d-config '", e, "': op '", name,
                "' is a ", device::op_name(op.kind), ", not a conv2d");
  std::vector<std::string_view> seen;
  std::string_view params = e.substr(eq + 1);
  for (size_t start = 0; start <= params.size();) {
    size_t colon = params.find(':', start);
    if (colon == std::string_view::npos) colon = params.size();
    std::string_view p = params.substr(start, colon - start);
    start = colon + 1;
    if (p.empty()) continue;  // tt-mlir drops empty parameters
    size_t hash = p.find('#');
    std::string_view key = p.substr(0, hash);
    std::string_view value =
        hash == std::string_view::npos ? std::string_view() : p.substr(hash + 1);
    auto bad = [&](auto... why) {
      return fail(ErrorCode::invalid_argument, "override-conv2d-config '", e, "': ", why...);
    };
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      return bad("parameter '", key, "' given twice");
    seen.push_back(key);
    auto number = [&]() -> std::optional<uint32_t> {
      uint32_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size())
        return std::nullopt;
      return n;
    };
    if (key == "act_block_h_override") {
      auto n = number();
      if (!n) return bad("act_block_h_override '", value, "' is not a row count");
      if (*n % 32 != 0)
        return bad("act_block_h_override ", *n, " is not a multiple of 32 rows (one tile)");
      if (*n != 0) set_attribute(op, "act_block_h", int64_t{*n / 32});  // 0: the planner's choice
    } else if (key == "act_block_w_div") {
      auto n = number();
      if (!n || *n == 0) return bad("act_block_w_div '", value, "' is not a positive count");
      set_attribute(op, "act_block_w_div", int64_t{*n});
    } else if (key == "shard_layout") {
      if (value != "height_sharded" && value != "width_sharded" && value != "block_sharded" &&
          value != "interleaved")
        return bad("shard_layout '", value, "' is not a tensor memory layout");
      output_overrides.push_back(str(name, "=", value == "interleaved" ? "" : "l1:", value));
    } else if (key == "activation") {
      if (value != "relu" && value != "none")
        return bad("activation '", value, "' is not relu or none");
      if (value != activation_of(op))
        return bad("activation ", value, " differs from the graph's (", activation_of(op),
                   "): it would change what op '", name, "' computes");
    } else if (key == "output_layout") {
      if (value != "tile" && value != "row_major")
        return bad("output_layout '", value, "' is not tile or row_major");
      if (value == "row_major")
        return bad("output_layout row_major is not modelled: meshplan's conv2d writes tiles");
    } else if (key == "deallocate_activation") {
      if (value != "false" && value != "true")
        return bad("deallocate_activation '", value, "' is not true or false");
      // The op's attribute: every policy plans the conv with it; df-sharding sets it itself
      // where tt-mlir does unless the override states it.
      set_attribute(op, "deallocate_activation", value == "true");
    } else if (key == "dtype" || key == "weights_dtype" || key == "reallocate_halo_output" ||
               key == "reshard_if_not_optimal" || key == "override_sharding_config" ||
               key == "core_grid" || key == "transpose_shards" ||
               key == "enable_act_double_buffer" || key == "enable_weights_double_buffer" ||
               key == "enable_kernel_stride_folding" || key == "config_tensors_in_dram") {
      return bad("parameter '", key,
                 "' is not modelled by meshplan's conv2d (act_block_h_override, act_block_w_div "
                 "and shard_layout are; weights take --weight-dtype-override)");
    } else {
      return bad("invalid override parameter '", key, "'");
    }
  }
  return {};
}

}  // namespace

Status apply_conv2d_config_overrides(Graph& g, std::span<const std::string> lists,
                                     std::vector<std::string>& output_overrides) {
  for (const std::string& list : lists) {
    for (size_t start = 0; start <= list.size();) {
      size_t comma = list.find(',', start);
      if (comma == std::string::npos) comma = list.size();
      MESHPLAN_TRY(
          apply_one(g, std::string_view(list).substr(start, comma - start), output_overrides));
      start = comma + 1;
    }
  }
  return {};
}

}  // namespace meshplan::planner
