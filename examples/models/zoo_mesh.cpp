// Mesh variants of the zoo: the single-chip graphs with Shardy sharding annotations.
#include <algorithm>

#include "zoo.hpp"

namespace meshplan::models {

namespace {

std::string axes_text(const std::vector<std::string>& axes) {
  std::string s = "{";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", \"" : "\"") + axes[i] + "\"";
  return s + "}";
}

std::vector<std::pair<std::string, int64_t>> mesh_axes(std::string_view mesh) {
  if (mesh == "galaxy") return {{"x", 8}, {"y", 4}};
  if (mesh == "n300") return {{"model", 1}, {"batch", 2}};
  if (mesh == "n300_tp") return {{"x", 1}, {"y", 2}};
  return {{"x", 2}, {"y", 4}};
}

int64_t axes_size(std::string_view mesh, const std::vector<std::string>& axes) {
  int64_t n = 1;
  for (const auto& [name, size] : mesh_axes(mesh))
    if (std::find(axes.begin(), axes.end(), name) != axes.end()) n *= size;
  return n;
}

}  // namespace

std::vector<std::string> llama_attention_axes(std::string_view mesh) {
  if (mesh == "galaxy") return {"x"};
  return {"x", "y"};
}

std::vector<std::string> llama_ffn_axes(std::string_view) {
  return {"x", "y"};
}

Result<planner::MeshAnnotations> llama_tensor_parallel(const LlamaConfig& c,
                                                       std::string_view mesh) {
  if (mesh != "t3k" && mesh != "galaxy" && mesh != "n300_tp")
    return fail(ErrorCode::invalid_argument, "llama_tensor_parallel: mesh '", mesh,
                "' (expected t3k, galaxy or n300_tp)");
  const auto attn = llama_attention_axes(mesh), ffn = llama_ffn_axes(mesh);
  const int64_t tp = axes_size(mesh, attn), tf = axes_size(mesh, ffn);
  if (c.kv_heads % tp != 0 || c.heads % tp != 0 || c.ffn % tf != 0)
    return fail(ErrorCode::invalid_argument, "llama_tensor_parallel on ", mesh, ": ", c.heads,
                " heads / ", c.kv_heads, " KV heads do not split ", tp, " ways or FFN ", c.ffn,
                " does not split ", tf, " ways");
  planner::MeshAnnotations a;
  a.axes = mesh_axes(mesh);
  const std::string col_a = "[{}, " + axes_text(attn) + "]";
  const std::string row_a = "[" + axes_text(attn) + ", {}]";
  const std::string col_f = "[{}, " + axes_text(ffn) + "]";
  const std::string row_f = "[" + axes_text(ffn) + ", {}]";
  a.arguments = {{"tokens", "[{}, {}]"}, {"attention_mask", "[{}, {}]"}};
  for (int l = 0; l < c.layers; ++l) {
    std::string p = "l" + std::to_string(l) + ".";
    for (const char* w : {"wq", "wk", "wv"}) a.arguments.emplace_back(p + w, col_a);
    a.arguments.emplace_back(p + "wo", row_a);
    for (const char* w : {"w1", "w3"}) a.arguments.emplace_back(p + w, col_f);
    a.arguments.emplace_back(p + "w2", row_f);
    a.arguments.emplace_back(p + "attn_norm.weight", "[{}]");
    a.arguments.emplace_back(p + "ffn_norm.weight", "[{}]");
    if (c.past > 0) {
      a.arguments.emplace_back(p + "k_cache", "[" + axes_text(attn) + ", {}, {}]");
      a.arguments.emplace_back(p + "v_cache", "[" + axes_text(attn) + ", {}, {}]");
    }
  }
  if (c.vocab > 0) {  // LM head column-parallel over every chip: each computes a vocab slice
    if (c.vocab % tf != 0)
      return fail(ErrorCode::invalid_argument, "llama_tensor_parallel on ", mesh, ": vocabulary ",
                  c.vocab, " does not split ", tf, " ways");
    a.arguments.emplace_back("norm.weight", "[{}]");
    a.arguments.emplace_back("lm_head", col_f);
  }
  return a;
}

std::vector<MeshModelSpec> mesh_zoo() {
  std::vector<MeshModelSpec> z;
  auto llama = [](int64_t seq, int64_t past, bool reduced, std::string mesh,
                  std::string name) -> Result<planner::AnnotatedGraph> {
    LlamaConfig c;
    c.seq = seq;
    c.past = past;
    if (reduced) {  // GQA 2:1 with 8 KV heads, so the heads split 8 ways like the full model's
      c.hidden = 512;
      c.heads = 16;
      c.kv_heads = 8;
      c.ffn = 1024;
      c.seq = std::min<int64_t>(seq, 32);
      c.past = std::min<int64_t>(past, 31);
    }
    planner::AnnotatedGraph g;
    g.graph = MESHPLAN_TRY(llama_decoder(c, name));
    g.annotations = MESHPLAN_TRY(llama_tensor_parallel(c, mesh));
    return g;
  };
  for (std::string mesh : {"t3k", "galaxy"}) {
    int64_t rows = mesh == "t3k" ? 2 : 8, cols = 4;
    std::string pre = "llama3_8b_prefill_tp_" + mesh, dec = "llama3_8b_decode_tp_" + mesh;
    z.push_back({pre, mesh, rows, cols, [=] { return llama(128, 0, false, mesh, pre); },
                 [=] { return llama(128, 0, true, mesh, pre); }});
    z.push_back({dec, mesh, rows, cols, [=] { return llama(1, 127, false, mesh, dec); },
                 [=] { return llama(1, 127, true, mesh, dec); }});
  }
  auto resnet_dp = [](bool reduced) -> Result<planner::AnnotatedGraph> {
    ResNetConfig c;
    c.batch = 8;
    if (reduced) {
      c.image = 32;
      c.width = 8;
      c.classes = 100;
      c.batch = 2;
    }
    planner::AnnotatedGraph g;
    g.graph = MESHPLAN_TRY(resnet(c, "resnet50_b8_dp_n300"));
    g.annotations.axes = mesh_axes("n300");  // no shardings: automatic batch parallelism
    return g;
  };
  z.push_back({"resnet50_b8_dp_n300", "n300", 1, 2, [=] { return resnet_dp(false); },
               [=] { return resnet_dp(true); }});
  return z;
}

}  // namespace meshplan::models
