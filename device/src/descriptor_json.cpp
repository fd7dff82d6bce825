// Device JSON files over flatbuffers::Parser and schemas/device.fbs.
#include "meshplan/device/descriptor_json.hpp"

#include <flatbuffers/idl.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

#include "meshplan/schemas/schemas.hpp"

namespace meshplan::device {

namespace {

/// Reads relaxed JSON (unquoted keys, trailing commas); `for_output`: prints strict JSON.
Result<std::unique_ptr<flatbuffers::Parser>> make_parser(bool for_output = false) {
  flatbuffers::IDLOptions opts;
  opts.strict_json = for_output;
  auto parser = std::make_unique<flatbuffers::Parser>(opts);
  std::string schema(schemas::kDeviceSchemaText);
  if (!parser->Parse(schema.c_str(), nullptr, "device.fbs"))
    return fail(ErrorCode::internal, "embedded device schema does not parse: ", parser->error_);
  return parser;
}

/// FlatBuffers' parse errors give a position but, for bad scalars, not the field: find it in the
/// text (the key whose value the message quotes, else the last key before the error position).
std::string field_of_parse_error(const std::string& text, const std::string& msg) {
  std::smatch m;
  if (std::regex_search(msg, m, std::regex("invalid number: \"([^\"]*)\""))) {
    std::string value =
        std::regex_replace(m[1].str(), std::regex("[.^$|()\\[\\]{}*+?\\\\]"), "\\$&");
    std::smatch k;
    if (std::regex_search(
            text, k,
            std::regex("\"?([A-Za-z_][A-Za-z0-9_]*)\"?\\s*:\\s*\"?" + value + "\"?\\s*[,}\\s]")))
      return k[1].str();
  }
  if (!std::regex_search(msg, m, std::regex(":(\\d+): (\\d+): error"))) return "";
  size_t line = std::stoul(m[1].str()), col = std::stoul(m[2].str()), offset = 0;
  for (size_t l = 1; l < line && offset < text.size(); ++l) offset = text.find('\n', offset) + 1;
  offset = std::min(text.size(), offset + col);
  std::string before = text.substr(0, offset), field;
  std::regex key("\"?([A-Za-z_][A-Za-z0-9_]*)\"?\\s*:");
  for (auto it = std::sregex_iterator(before.begin(), before.end(), key);
       it != std::sregex_iterator(); ++it)
    field = (*it)[1].str();
  return field;
}

/// Parses and verifies a device file; the parser owns the bytes the returned root points into.
Result<const fb::DeviceDescriptor*> parse(flatbuffers::Parser& parser, std::string_view json,
                                          std::string_view source_name) {
  std::string text(json), src(source_name);
  if (!parser.Parse(text.c_str(), nullptr, src.c_str())) {
    std::string msg = parser.error_;
    if (msg.rfind("error: ", 0) == 0) msg = msg.substr(7);
    std::string field = field_of_parse_error(text, msg);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    if (!field.empty() && msg.find("field: " + field) == std::string::npos)
      msg += str(" (field '", field, "')");
    return fail(ErrorCode::invalid_argument, msg);
  }
  flatbuffers::Verifier verifier(parser.builder_.GetBufferPointer(), parser.builder_.GetSize());
  if (!fb::VerifyDeviceDescriptorBuffer(verifier))
    return fail(ErrorCode::invalid_argument, source_name, ": not a device descriptor");
  return fb::GetDeviceDescriptor(parser.builder_.GetBufferPointer());
}

std::unexpected<Error> missing(std::string_view source, std::string_view table,
                               std::string_view field) {
  return fail(ErrorCode::invalid_argument, source, ": ", table, ": field '", field,
              "' is missing (set it, or name a built-in in 'base')");
}

/// `t` over `fallback` (the table's own base, else `inherited`); fields missing from all three
/// are errors naming the field.
Result<ChipDesc> chip_from_table(const fb::ChipDescriptor& t, std::string_view source,
                                 std::string_view table, const ChipDesc* inherited) {
  std::optional<ChipDesc> base;
  if (t.base()) {
    auto b = builtin_chip(t.base()->string_view());
    if (!b)
      return fail(ErrorCode::invalid_argument, source, ": ", table,
                  ": field 'base': ", b.error().message);
    base = *b;
  } else if (inherited) {
    base = *inherited;
  }
  ChipDesc d = base.value_or(ChipDesc{});
  if (t.name())
    d.name = t.name()->str();
  else if (!base)
    return missing(source, table, "name");
#define MESHPLAN_CHIP_FIELD(f) \
  if (t.f().has_value())       \
    d.f = *t.f();              \
  else if (!base)              \
    return missing(source, table, #f);
  MESHPLAN_CHIP_FIELD(grid_x)
  MESHPLAN_CHIP_FIELD(grid_y)
  MESHPLAN_CHIP_FIELD(l1_size)
  MESHPLAN_CHIP_FIELD(l1_unreserved_base)
  MESHPLAN_CHIP_FIELD(l1_usable_fraction)
  MESHPLAN_CHIP_FIELD(dram_banks)
  MESHPLAN_CHIP_FIELD(dram_bank_size)
  MESHPLAN_CHIP_FIELD(l1_alignment)
  MESHPLAN_CHIP_FIELD(dram_alignment)
  MESHPLAN_CHIP_FIELD(clock_ghz)
  MESHPLAN_CHIP_FIELD(matmul_flops_per_cycle)
  MESHPLAN_CHIP_FIELD(eltwise_elems_per_cycle)
  MESHPLAN_CHIP_FIELD(noc_bytes_per_cycle)
  MESHPLAN_CHIP_FIELD(dram_gbps)
  MESHPLAN_CHIP_FIELD(ethernet_links)
  MESHPLAN_CHIP_FIELD(ethernet_gbps)
  MESHPLAN_CHIP_FIELD(dispatch_ns)
  MESHPLAN_CHIP_FIELD(pcie_h2d_gbps)
  MESHPLAN_CHIP_FIELD(pcie_d2h_gbps)
  MESHPLAN_CHIP_FIELD(matmul_utilization)
  MESHPLAN_CHIP_FIELD(dram_read_bytes_per_cycle)
  MESHPLAN_CHIP_FIELD(mcast_bytes_per_cycle)
  MESHPLAN_CHIP_FIELD(l1_bytes_per_cycle)
  MESHPLAN_CHIP_FIELD(conv_block_sync_cycles)
#undef MESHPLAN_CHIP_FIELD
  auto ok = d.verify();
  if (!ok) return std::unexpected(with_context(ok.error(), str(source, ": ", table)));
  return d;
}

Result<MeshDesc> mesh_from_table(const fb::MeshDescriptor& t, std::string_view source) {
  std::optional<MeshDesc> base;
  if (t.base()) {
    auto b = builtin_mesh(t.base()->string_view());
    if (!b)
      return fail(ErrorCode::invalid_argument, source, ": mesh: field 'base': ", b.error().message);
    base = *b;
  }
  MeshDesc m = base.value_or(MeshDesc{});
  if (t.name())
    m.name = t.name()->str();
  else if (!base)
    return missing(source, "mesh", "name");
#define MESHPLAN_MESH_FIELD(f) \
  if (t.f().has_value())       \
    m.f = *t.f();              \
  else if (!base)              \
    return missing(source, "mesh", #f);
  MESHPLAN_MESH_FIELD(rows)
  MESHPLAN_MESH_FIELD(cols)
  MESHPLAN_MESH_FIELD(links)
  MESHPLAN_MESH_FIELD(hop_latency_ns)
#undef MESHPLAN_MESH_FIELD
  if (t.topology().has_value())
    m.topology = static_cast<Topology>(*t.topology());
  else if (!base)
    return missing(source, "mesh", "topology");
  if (t.chip())
    m.chip =
        MESHPLAN_TRY(chip_from_table(*t.chip(), source, "mesh.chip", base ? &base->chip : nullptr));
  else if (!base)
    return missing(source, "mesh", "chip");
  auto ok = m.verify();
  if (!ok) return std::unexpected(with_context(ok.error(), str(source, ": mesh")));
  return m;
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::not_found, "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return fail(ErrorCode::io, "cannot read '", path, "'");
  return s.str();
}

flatbuffers::Offset<fb::ChipDescriptor> write_chip(flatbuffers::FlatBufferBuilder& b,
                                                   const ChipDesc& d) {
  auto name = b.CreateString(d.name);
  fb::ChipDescriptorBuilder c(b);
  c.add_name(name);
  c.add_grid_x(d.grid_x);
  c.add_grid_y(d.grid_y);
  c.add_l1_size(d.l1_size);
  c.add_l1_unreserved_base(d.l1_unreserved_base);
  c.add_l1_usable_fraction(d.l1_usable_fraction);
  c.add_dram_banks(d.dram_banks);
  c.add_dram_bank_size(d.dram_bank_size);
  c.add_l1_alignment(d.l1_alignment);
  c.add_dram_alignment(d.dram_alignment);
  c.add_clock_ghz(d.clock_ghz);
  c.add_matmul_flops_per_cycle(d.matmul_flops_per_cycle);
  c.add_eltwise_elems_per_cycle(d.eltwise_elems_per_cycle);
  c.add_noc_bytes_per_cycle(d.noc_bytes_per_cycle);
  c.add_dram_gbps(d.dram_gbps);
  c.add_ethernet_links(d.ethernet_links);
  c.add_ethernet_gbps(d.ethernet_gbps);
  c.add_dispatch_ns(d.dispatch_ns);
  c.add_pcie_h2d_gbps(d.pcie_h2d_gbps);
  c.add_pcie_d2h_gbps(d.pcie_d2h_gbps);
  c.add_matmul_utilization(d.matmul_utilization);
  c.add_dram_read_bytes_per_cycle(d.dram_read_bytes_per_cycle);
  c.add_mcast_bytes_per_cycle(d.mcast_bytes_per_cycle);
  c.add_l1_bytes_per_cycle(d.l1_bytes_per_cycle);
  c.add_conv_block_sync_cycles(d.conv_block_sync_cycles);
  return c.Finish();
}

Result<std::string> to_text(flatbuffers::FlatBufferBuilder& b, std::string_view what) {
  auto parser = MESHPLAN_TRY(make_parser(true));
  std::string text;
  if (!flatbuffers::GenerateText(*parser, b.GetBufferPointer(), &text))
    return fail(ErrorCode::internal, "cannot print ", what, " as JSON");
  return text;
}

}  // namespace

Result<ChipDesc> chip_from_json(std::string_view json, std::string_view source_name) {
  auto parser = MESHPLAN_TRY(make_parser());
  const fb::DeviceDescriptor* root = MESHPLAN_TRY(parse(*parser, json, source_name));
  if (root->chip()) return chip_from_table(*root->chip(), source_name, "chip", nullptr);
  if (root->mesh()) {
    MeshDesc m = MESHPLAN_TRY(mesh_from_table(*root->mesh(), source_name));
    return m.chip;
  }
  return fail(ErrorCode::invalid_argument, source_name, ": neither 'chip' nor 'mesh' is set");
}

Result<MeshDesc> mesh_from_json(std::string_view json, std::string_view source_name) {
  auto parser = MESHPLAN_TRY(make_parser());
  const fb::DeviceDescriptor* root = MESHPLAN_TRY(parse(*parser, json, source_name));
  if (root->mesh()) return mesh_from_table(*root->mesh(), source_name);
  if (root->chip())
    return single_chip_mesh(
        MESHPLAN_TRY(chip_from_table(*root->chip(), source_name, "chip", nullptr)));
  return fail(ErrorCode::invalid_argument, source_name, ": neither 'chip' nor 'mesh' is set");
}

Result<ChipDesc> load_chip_file(const std::string& path) {
  std::string text = MESHPLAN_TRY(read_file(path));
  return chip_from_json(text, path);
}

Result<MeshDesc> load_mesh_file(const std::string& path) {
  std::string text = MESHPLAN_TRY(read_file(path));
  return mesh_from_json(text, path);
}

Result<std::string> chip_to_json(const ChipDesc& chip) {
  flatbuffers::FlatBufferBuilder b;
  auto c = write_chip(b, chip);
  fb::DeviceDescriptorBuilder root(b);
  root.add_chip(c);
  b.Finish(root.Finish(), fb::DeviceDescriptorIdentifier());
  return to_text(b, str("chip '", chip.name, "'"));
}

Result<std::string> mesh_to_json(const MeshDesc& mesh) {
  flatbuffers::FlatBufferBuilder b;
  auto c = write_chip(b, mesh.chip);
  auto name = b.CreateString(mesh.name);
  fb::MeshDescriptorBuilder m(b);
  m.add_name(name);
  m.add_rows(mesh.rows);
  m.add_cols(mesh.cols);
  m.add_chip(c);
  m.add_topology(static_cast<fb::Topology>(mesh.topology));
  m.add_links(mesh.links);
  m.add_hop_latency_ns(mesh.hop_latency_ns);
  auto mo = m.Finish();
  fb::DeviceDescriptorBuilder root(b);
  root.add_mesh(mo);
  b.Finish(root.Finish(), fb::DeviceDescriptorIdentifier());
  return to_text(b, str("mesh '", mesh.name, "'"));
}

}  // namespace meshplan::device
