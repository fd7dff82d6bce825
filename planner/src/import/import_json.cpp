// graph.json reader and writer over flatbuffers::Parser.
#include "meshplan/planner/import_json.hpp"

#include <flatbuffers/idl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "common/graph_json_fast.hpp"
#include "meshplan/device/size_limits.hpp"
#include "meshplan/schemas/schemas.hpp"

namespace meshplan::planner {

namespace {

/// Reads relaxed JSON (unquoted keys, trailing commas); `for_output`: prints strict JSON.
Result<std::unique_ptr<flatbuffers::Parser>> make_parser(bool for_output = false) {
  flatbuffers::IDLOptions opts;
  opts.strict_json = for_output;
  opts.output_default_scalars_in_json = false;
  auto parser = std::make_unique<flatbuffers::Parser>(opts);
  std::string schema(schemas::kGraphSchemaText);
  if (!parser->Parse(schema.c_str(), nullptr, "graph.fbs"))
    return fail(ErrorCode::internal, "embedded graph schema does not parse: ", parser->error_);
  return parser;
}

AttrValue attr_value(const fb::Attribute& a, bool* ok) {
  int set = (a.i().has_value()) + (a.f().has_value()) + (a.b().has_value()) + (a.s() != nullptr) +
            (a.ints() != nullptr) + (a.floats() != nullptr);
  *ok = set == 1;
  if (a.i()) return *a.i();
  if (a.f()) return *a.f();
  if (a.b()) return *a.b();
  if (a.s()) return a.s()->str();
  if (a.ints()) return std::vector<int64_t>(a.ints()->begin(), a.ints()->end());
  if (a.floats()) return std::vector<double>(a.floats()->begin(), a.floats()->end());
  return false;
}

Result<device::MeshShardSpec> shard_from_fb(const fb::MeshShard* s, std::string_view where) {
  device::MeshShardSpec spec;
  if (static_cast<uint8_t>(s->type()) > static_cast<uint8_t>(device::MeshShardType::devices))
    return fail(ErrorCode::invalid_argument, where, ": unknown shard type ",
                static_cast<int>(s->type()));
  spec.type = static_cast<device::MeshShardType>(s->type());
  if (s->shard_dims()) {
    if (s->shard_dims()->size() != 2)
      return fail(ErrorCode::invalid_argument, where, ": shard_dims has ", s->shard_dims()->size(),
                  " entries, expected 2 (one per mesh axis)");
    spec.shard_dims = {s->shard_dims()->Get(0), s->shard_dims()->Get(1)};
  }
  if (s->shard_shape()) spec.shard_shape.assign(s->shard_shape()->begin(), s->shard_shape()->end());
  return spec;
}

// flatbuffers::Parser says "file:15: 1: error: expecting..."; we say "file:15:1: expecting...".
std::string tidy_parser_error(std::string msg) {
  static const std::regex kPosition(R"(^(.*?):(\d+): (\d+): error: )");
  msg = std::regex_replace(msg, kPosition, "$1:$2:$3: ", std::regex_constants::format_first_only);
  if (msg.rfind("error: ", 0) == 0) msg = msg.substr(7);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  return msg;
}

}  // namespace

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::not_found, "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return fail(ErrorCode::io, "cannot read '", path, "'");
  return s.str();
}

Result<Graph> import_graph_json(std::string_view json, std::string_view source_name) {
  auto annotated = MESHPLAN_TRY(import_annotated_graph_json(json, source_name));
  return std::move(annotated.graph);
}

Result<AnnotatedGraph> import_annotated_graph_json(std::string_view json,
                                                   std::string_view source_name) {
  // The common form is read straight into a buffer; anything else (and every error) goes
  // through flatbuffers' parser, whose messages name the line and column.
  flatbuffers::FlatBufferBuilder fast;
  std::unique_ptr<flatbuffers::Parser> parser;
  const flatbuffers::FlatBufferBuilder* built = &fast;
  if (!read_graph_json_fast(json, fast)) {
    parser = MESHPLAN_TRY(make_parser());
    std::string text(json);
    std::string src(source_name);
    if (!parser->Parse(text.c_str(), nullptr, src.c_str())) {
      return fail(ErrorCode::invalid_argument, tidy_parser_error(parser->error_));
    }
    built = &parser->builder_;
  }
  flatbuffers::Verifier verifier(built->GetBufferPointer(), built->GetSize());
  if (!fb::VerifyGraphBuffer(verifier))
    return fail(ErrorCode::invalid_argument, source_name,
                ": not a graph (root table must be meshplan.fb.Graph)");
  const fb::Graph* fg = fb::GetGraph(built->GetBufferPointer());

  AnnotatedGraph result;
  Graph& g = result.graph;
  MeshAnnotations& ann = result.annotations;
  g.name = fg->name() ? fg->name()->str() : "";
  if (fg->mesh_axes())
    for (const fb::MeshAxis* a : *fg->mesh_axes()) {
      // A mesh is a grid of at most 65535 chips per side; say so before any product wraps.
      if (a->size() < 1 || a->size() > 0xFFFF)
        return fail(ErrorCode::invalid_argument, source_name, ": mesh axis '",
                    a->name() ? a->name()->str() : "", "' has size ", a->size(),
                    "; mesh axes have 1 to 65535 chips");
      ann.axes.emplace_back(a->name()->str(), a->size());
    }
  if (fg->output_shardings()) {
    for (const flatbuffers::String* s : *fg->output_shardings()) ann.outputs.push_back(s->str());
    size_t n = fg->outputs() ? fg->outputs()->size() : 0;
    if (ann.outputs.size() != n)
      return fail(ErrorCode::invalid_argument, source_name, ": output_shardings has ",
                  ann.outputs.size(), " entries for ", n, " outputs");
  }
  std::map<std::string, ValueId, std::less<>> names;
  auto add_value = [&](const fb::Value* v, std::string_view where) -> Result<ValueId> {
    Value value;
    value.name = v->name()->str();
    if (v->shape()) {
      value.shape.assign(v->shape()->begin(), v->shape()->end());
      // Non-positive dims are validate()'s to report; here only sizes past the limits.
      bool positive = std::ranges::all_of(value.shape, [](int64_t d) { return d > 0; });
      if (auto volume = device::checked_volume(value.shape); positive && !volume)
        return fail(ErrorCode::invalid_argument, source_name, ": value '", value.name, "' (", where,
                    "): ", volume.error().message);
    }
    // Results may leave their dtype out: validate() infers it from the operands, as their shape.
    if (v->dtype()) value.dtype = static_cast<DType>(*v->dtype());
    ValueId id = static_cast<ValueId>(g.values.size());
    if (!names.emplace(value.name, id).second)
      return fail(ErrorCode::invalid_argument, source_name, ": duplicate value name '", value.name,
                  "' (", where, ")");
    g.values.push_back(std::move(value));
    return id;
  };
  if (fg->arguments())
    for (const fb::Argument* a : *fg->arguments()) {
      // No default element type for arguments: a silent bf16 (or f32) would plan another
      // program than the one meant.
      if (!a->value()->dtype())
        return fail(ErrorCode::invalid_argument, source_name, ": argument '",
                    a->value()->name()->str(), "' has no dtype (give one of \"f32\", \"bf16\", ",
                    "\"bf8b\", \"i32\", \"u32\")");
      ValueId id = MESHPLAN_TRY(add_value(a->value(), "argument"));
      Value& v = g.values[id];
      v.kind = static_cast<ArgKind>(a->kind());
      v.argument = static_cast<int>(g.arguments.size());
      if (v.shape.empty() && !a->value()->shape())
        return fail(ErrorCode::invalid_argument, source_name, ": argument '", v.name,
                    "' has no shape");
      if (a->data())
        for (double d : *a->data()) v.data.push_back(static_cast<float>(d));
      if (v.kind != ArgKind::constant && a->data())
        return fail(ErrorCode::invalid_argument, source_name, ": argument '", v.name,
                    "' has data but is not a constant");
      if (a->sharding()) ann.arguments.emplace_back(v.name, a->sharding()->str());
      g.arguments.push_back(id);
    }
  // First pass: ops and their results, so operands may refer to values defined later in the file.
  std::vector<const fb::Op*> fops;
  if (fg->ops())
    for (const fb::Op* fo : *fg->ops()) {
      Op op;
      op.name = fo->name() ? fo->name()->str() : "";
      std::string label = op.name.empty() ? str("op #", g.ops.size()) : str("op '", op.name, "'");
      auto kind = device::op_from_name(fo->kind()->str());
      if (!kind) {
        std::string known;
        for (int k = 0; k < device::kNumOpKinds; ++k)
          known += (k ? ", " : "") + std::string(device::op_name(static_cast<OpKind>(k)));
        return fail(ErrorCode::invalid_argument, source_name, ": ", label, ": unknown op '",
                    fo->kind()->str(), "' (known ops: ", known, ")");
      }
      op.kind = *kind;
      if (fo->results())
        for (const fb::Value* r : *fo->results())
          op.results.push_back(MESHPLAN_TRY(add_value(r, label)));
      if (fo->attributes())
        for (const fb::Attribute* a : *fo->attributes()) {
          bool ok = false;
          AttrValue value = attr_value(*a, &ok);
          if (!ok)
            return fail(ErrorCode::invalid_argument, source_name, ": ", label, ": attribute '",
                        a->name()->str(), "' must set exactly one of i, f, b, s, ints, floats");
          op.attributes.push_back(Attribute{a->name()->str(), std::move(value)});
        }
      std::sort(op.attributes.begin(), op.attributes.end(),
                [](const Attribute& x, const Attribute& y) { return x.name < y.name; });
      for (size_t i = 1; i < op.attributes.size(); ++i)
        if (op.attributes[i].name == op.attributes[i - 1].name)
          return fail(ErrorCode::invalid_argument, source_name, ": ", label,
                      ": duplicate attribute '", op.attributes[i].name, "'");
      g.ops.push_back(std::move(op));
      fops.push_back(fo);
    }
  // Second pass: operands by name.
  for (size_t o = 0; o < g.ops.size(); ++o) {
    if (!fops[o]->operands()) continue;
    for (const flatbuffers::String* s : *fops[o]->operands()) {
      auto it = names.find(s->string_view());
      if (it == names.end())
        return fail(ErrorCode::invalid_argument, source_name, ": op '",
                    g.ops[o].name.empty() ? str("#", o) : g.ops[o].name, "': operand '", s->str(),
                    "' is not defined");
      g.ops[o].operands.push_back(it->second);
    }
  }
  if (fg->outputs())
    for (const flatbuffers::String* s : *fg->outputs()) {
      auto it = names.find(s->string_view());
      if (it == names.end())
        return fail(ErrorCode::invalid_argument, source_name, ": output '", s->str(),
                    "' is not defined");
      g.outputs.push_back(it->second);
    }
  if (const fb::GraphMesh* m = fg->mesh()) {
    g.mesh.rows = m->rows();
    g.mesh.cols = m->cols();
    if (m->axis_names())
      for (const flatbuffers::String* s : *m->axis_names()) g.mesh.axis_names.push_back(s->str());
  }
  if (fg->argument_shards())
    for (flatbuffers::uoffset_t i = 0; i < fg->argument_shards()->size(); ++i)
      g.argument_shards.push_back(MESHPLAN_TRY(
          shard_from_fb(fg->argument_shards()->Get(i), str(source_name, ": argument shard #", i))));
  if (fg->output_shards())
    for (flatbuffers::uoffset_t i = 0; i < fg->output_shards()->size(); ++i)
      g.output_shards.push_back(MESHPLAN_TRY(
          shard_from_fb(fg->output_shards()->Get(i), str(source_name, ": output shard #", i))));
  auto status = validate(g);
  if (!status) return std::unexpected(with_context(status.error(), std::string(source_name)));
  return result;
}

Result<AnnotatedGraph> load_annotated_graph_file(const std::string& path) {
  std::string text = MESHPLAN_TRY(read_text_file(path));
  return import_annotated_graph_json(text, path);
}

Result<Graph> load_graph_file(const std::string& path) {
  std::string text = MESHPLAN_TRY(read_text_file(path));
  return import_graph_json(text, path);
}

Result<std::string> export_graph_json(const Graph& g, const MeshAnnotations& ann) {
  flatbuffers::FlatBufferBuilder b;
  auto value = [&](const Value& v) {
    return fb::CreateValueDirect(b, v.name.c_str(), &v.shape, static_cast<fb::DType>(v.dtype));
  };
  std::vector<flatbuffers::Offset<fb::Argument>> args;
  for (ValueId a : g.arguments) {
    const Value& v = g.values[a];
    auto fv = value(v);
    std::vector<double> data(v.data.begin(), v.data.end());
    std::string_view sharding = ann.argument(v.name);
    std::string sharding_text(sharding);
    args.push_back(fb::CreateArgumentDirect(b, fv, static_cast<fb::ArgKind>(v.kind),
                                            v.kind == ArgKind::constant ? &data : nullptr,
                                            sharding.empty() ? nullptr : sharding_text.c_str()));
  }
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (const Op& op : g.ops) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> operands;
    for (ValueId v : op.operands) operands.push_back(b.CreateString(g.values[v].name));
    std::vector<flatbuffers::Offset<fb::Value>> results;
    for (ValueId v : op.results) results.push_back(value(g.values[v]));
    std::vector<flatbuffers::Offset<fb::Attribute>> attrs;
    for (const Attribute& a : op.attributes) {
      auto name = b.CreateString(a.name);
      flatbuffers::Offset<flatbuffers::String> s;
      flatbuffers::Offset<flatbuffers::Vector<int64_t>> ints;
      flatbuffers::Offset<flatbuffers::Vector<double>> floats;
      if (auto* x = std::get_if<std::string>(&a.value)) s = b.CreateString(*x);
      if (auto* x = std::get_if<std::vector<int64_t>>(&a.value)) ints = b.CreateVector(*x);
      if (auto* x = std::get_if<std::vector<double>>(&a.value)) floats = b.CreateVector(*x);
      fb::AttributeBuilder ab(b);
      ab.add_name(name);
      if (auto* x = std::get_if<int64_t>(&a.value)) ab.add_i(*x);
      if (auto* x = std::get_if<double>(&a.value)) ab.add_f(*x);
      if (auto* x = std::get_if<bool>(&a.value)) ab.add_b(*x);
      if (!s.IsNull()) ab.add_s(s);
      if (!ints.IsNull()) ab.add_ints(ints);
      if (!floats.IsNull()) ab.add_floats(floats);
      attrs.push_back(ab.Finish());
    }
    ops.push_back(fb::CreateOpDirect(b, op.name.c_str(), device::op_name(op.kind).data(), &operands,
                                     &results, &attrs));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> outputs;
  for (ValueId v : g.outputs) outputs.push_back(b.CreateString(g.values[v].name));
  flatbuffers::Offset<fb::GraphMesh> mesh;
  std::vector<flatbuffers::Offset<fb::MeshShard>> arg_shards, out_shards;
  if (!g.mesh.single_chip() || !g.mesh.axis_names.empty()) {
    std::vector<flatbuffers::Offset<flatbuffers::String>> names;
    for (const std::string& n : g.mesh.axis_names) names.push_back(b.CreateString(n));
    mesh = fb::CreateGraphMeshDirect(b, g.mesh.rows, g.mesh.cols, names.empty() ? nullptr : &names);
  }
  auto shard = [&](const device::MeshShardSpec& s) {
    std::vector<int32_t> dims(s.shard_dims.begin(), s.shard_dims.end());
    return fb::CreateMeshShardDirect(b, static_cast<fb::MeshShardType>(s.type), &dims,
                                     s.shard_shape.empty() ? nullptr : &s.shard_shape);
  };
  for (const auto& s : g.argument_shards) arg_shards.push_back(shard(s));
  for (const auto& s : g.output_shards) out_shards.push_back(shard(s));
  std::vector<flatbuffers::Offset<fb::MeshAxis>> axes;
  for (const auto& [name, size] : ann.axes)
    axes.push_back(fb::CreateMeshAxisDirect(b, name.c_str(), size));
  std::vector<flatbuffers::Offset<flatbuffers::String>> output_shardings;
  for (const std::string& s : ann.outputs) output_shardings.push_back(b.CreateString(s));
  b.Finish(fb::CreateGraphDirect(b, g.name.c_str(), &args, &ops, &outputs, mesh,
                                 arg_shards.empty() ? nullptr : &arg_shards,
                                 out_shards.empty() ? nullptr : &out_shards,
                                 axes.empty() ? nullptr : &axes,
                                 output_shardings.empty() ? nullptr : &output_shardings),
           fb::GraphIdentifier());
  auto parser = MESHPLAN_TRY(make_parser(true));
  std::string text;
  if (!flatbuffers::GenerateText(*parser, b.GetBufferPointer(), &text))
    return fail(ErrorCode::internal, "cannot print graph '", g.name, "' as JSON");
  return text;
}

}  // namespace meshplan::planner
