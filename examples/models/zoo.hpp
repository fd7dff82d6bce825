// The model zoo: graphs with the shapes of published architectures, built with GraphBuilder.
// Every model has a full-size form (for planning figures and benchmarks) and a reduced form with
// the same structure and smaller widths (small enough to execute on the emulator in tests).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "meshplan/planner/graph.hpp"

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
};
/// Llama-3-8B-shaped decoder layers: RMSNorm, Q/K/V projections, attention as matmul + softmax
/// + matmul (K/V cache as inputs when past > 0), output projection, SwiGLU MLP, residual adds.
/// Rotary position embeddings are not modelled (they change values, not shapes or data flow).
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

}  // namespace meshplan::models
