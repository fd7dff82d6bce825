// The model zoo: graphs with the shapes of published architectures, built with GraphBuilder.
// Every model has a full-size form (for planning figures and benchmarks) and a reduced form with
// the same structure and smaller widths (small enough to execute on the emulator in tests).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/mesh_annotations.hpp"

namespace meshplan::models {

/// Sizes of a decoder layer in the Llama-3 family.
struct LlamaConfig {
  int64_t hidden = 4096;
  int64_t heads = 32;
  int64_t kv_heads =
      8;  ///< Grouped-query attention: heads / kv_heads query heads share a K/V head.
  int64_t ffn = 14336;
  int64_t seq = 128;  ///< Tokens in this step: 128 for prefill, 1 for decode.
  int64_t past = 0;   ///< Cached tokens (decode): the K/V cache inputs hold `past` positions.
  int layers = 1;
  double epsilon = 1e-5;
  /// Vocabulary of the LM head (128256 for Llama-3.1): > 0 adds the final RMSNorm and the LM
  /// head matmul (on the last token only) after the layers; 0 ends with the hidden states.
  int64_t vocab = 0;
};
/// Llama-3-8B-shaped decoder layers: RMSNorm, Q/K/V projections, attention as matmul + softmax
/// + matmul (K/V cache as inputs when past > 0), output projection, SwiGLU MLP, residual adds.
/// Rotary position embeddings are not modelled (they change values, not shapes or data flow).
/// With config.vocab > 0: final RMSNorm ("norm.weight") and LM head ("lm_head", [hidden, vocab])
/// on the last token; the logits [1, vocab] are the last output.
Result<planner::Graph> llama_decoder(const LlamaConfig& config, const std::string& name);

struct BertConfig {
  int64_t hidden = 768;
  int64_t heads = 12;
  int64_t ffn = 3072;
  int64_t seq = 384;
  int layers = 1;
};
/// BERT-base encoder layers (post-LayerNorm): QKV, attention, output projection, residual +
/// LayerNorm, GELU MLP, residual + LayerNorm.
Result<planner::Graph> bert_encoder(const BertConfig& config, const std::string& name);

struct ResNetConfig {
  int64_t batch = 1;
  int64_t image = 224;
  int64_t width = 64;  ///< Channels of the stem; stages use width, 2x, 4x, 8x (x4 expansion).
  std::vector<int> blocks = {3, 4, 6, 3};
  int64_t classes = 1000;
};
/// ResNet-50: 7x7/2 stem, 3x3/2 max-pool, bottleneck stages with conv2d (batch-norm folded into
/// the conv bias), relu and residual adds, global average pool, fully connected.
Result<planner::Graph> resnet(const ResNetConfig& config, const std::string& name);

/// A 3-layer MLP (matmul + add + relu, twice, then matmul + add).
Result<planner::Graph> mlp(int64_t batch, std::vector<int64_t> widths, const std::string& name);

/// One zoo entry.
struct ModelSpec {
  std::string name;
  std::string device;  ///< Default device to plan and run on.
  std::function<Result<planner::Graph>()> full;
  std::function<Result<planner::Graph>()> reduced;
};
/// Every model of the zoo, in a fixed order.
std::vector<ModelSpec> zoo();

// ---- Mesh variants (zoo_mesh.cpp): global graphs + Shardy annotations for export_stablehlo ----

/// Megatron-style tensor parallelism for llama_decoder(config) on a named mesh:
///   "t3k" (mesh ["x"=2, "y"=4]): attention and FFN split over all 8 chips ({"x", "y"}):
///     wq/wk/wv and w1/w3 column-parallel (output dim), wo and w2 row-parallel (input dim), so the
///     heads (and the K/V cache's kv-head dim) split 8 ways;
///   "galaxy" (mesh ["x"=8, "y"=4]): attention TP 8 over "x" (32 query / 8 KV heads: one KV head
///     and its 4 query heads per "x" position, replicated along "y"), FFN 2-D over {"x", "y"}
///     (32-way, 14336 / 32 = 448 columns per chip);
///   "n300_tp" (mesh ["x"=1, "y"=2]): as t3k over the two chips of an n300 card.
/// With config.vocab > 0 the LM head is column-parallel over the FFN axes (a vocab slice per
/// chip) and the final norm's weight replicated.
/// Activations, norms' weights and the mask are replicated. Each layer then needs exactly two
/// all_reduces of the [seq, hidden] activations: after wo (over the attention axes) and after
/// w2 (over the FFN axes). Needs kv_heads divisible by the attention TP size.
Result<planner::MeshAnnotations> llama_tensor_parallel(const LlamaConfig& config,
                                                       std::string_view mesh);
/// The attention and FFN axes llama_tensor_parallel uses on `mesh`.
std::vector<std::string> llama_attention_axes(std::string_view mesh);
std::vector<std::string> llama_ffn_axes(std::string_view mesh);

/// One mesh zoo entry: the model annotated for a mesh ("t3k", "galaxy", "n300").
struct MeshModelSpec {
  std::string name;
  std::string mesh;
  int64_t rows = 1, cols = 1;
  std::function<Result<planner::AnnotatedGraph>()> full;
  std::function<Result<planner::AnnotatedGraph>()> reduced;
};
/// Llama-3-8B prefill / decode tensor-parallel on t3k and galaxy (reduced: hidden 512, 16 heads,
/// 8 KV heads, FFN 1024, sequence 32 / past 31); ResNet-50 batch 8 data-parallel on n300 1x2
/// (no shardings: the pipeline's automatic batch sharding; reduced: batch 2, 32x32 images).
std::vector<MeshModelSpec> mesh_zoo();

}  // namespace meshplan::models
