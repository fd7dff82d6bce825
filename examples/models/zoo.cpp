// Model definitions. Names of values and ops follow the architectures' usual names.
#include "zoo.hpp"

#include <algorithm>
#include <cmath>

#include "meshplan/planner/graph_builder.hpp"

namespace meshplan::models {

using planner::attr;
using planner::GraphBuilder;
using V = GraphBuilder::Value;

namespace {

std::vector<int64_t> ints(std::initializer_list<int64_t> v) {
  return std::vector<int64_t>(v);
}

/// Attention over grouped heads. q: [seq, heads*hd]; k, v: [kv_heads, kv_len, hd]; mask:
/// [group*seq, kv_len] added to the scores. Returns [seq, heads*hd].
V attention(GraphBuilder& b, V q, V k, V v, V mask, int64_t seq, int64_t heads, int64_t kv_heads,
            int64_t hd, const std::string& p) {
  // Heads are split and merged through 3-D [seq, heads, hd] / [heads, seq, hd] tensors: a 4-D
  // [seq, kv_heads, group, hd] view would pad its group dim to a whole tile (32 rows for
  // group 1..4). [heads, seq, hd] -> [kv_heads, group*seq, hd] keeps the 2-D view: a free reshape.
  int64_t group = heads / kv_heads;
  V qs = b.op("reshape", {q}, {attr("shape", ints({seq, heads, hd}))}, p + "q_split");
  V qp = b.op("permute", {qs}, {attr("perm", ints({1, 0, 2}))}, p + "q_heads");
  V q3 = b.op("reshape", {qp}, {attr("shape", ints({kv_heads, group * seq, hd}))}, p + "q_group");
  V scores = b.op("matmul", {q3, k}, {attr("transpose_b", true)}, p + "qk");
  V scale = b.constant(p + "scale", {1}, {1.0f / std::sqrt(static_cast<float>(hd))});
  V scaled = b.op("multiply", {scores, scale}, {}, p + "scale_scores");
  V masked = b.op("add", {scaled, mask}, {}, p + "mask_scores");
  V probs = b.op("softmax", {masked}, {attr("dim", -1)}, p + "softmax");
  V ctx = b.op("matmul", {probs, v}, {}, p + "pv");
  V cs = b.op("reshape", {ctx}, {attr("shape", ints({heads, seq, hd}))}, p + "ctx_split");
  V cp = b.op("permute", {cs}, {attr("perm", ints({1, 0, 2}))}, p + "ctx_tokens");
  return b.op("reshape", {cp}, {attr("shape", ints({seq, heads * hd}))}, p + "ctx_merge");
}

/// [seq, kv_heads*hd] -> [kv_heads, seq, hd].
V to_heads(GraphBuilder& b, V x, int64_t seq, int64_t kv_heads, int64_t hd, const std::string& p) {
  V x3 = b.op("reshape", {x}, {attr("shape", ints({seq, kv_heads, hd}))}, p + "_split");
  return b.op("permute", {x3}, {attr("perm", ints({1, 0, 2}))}, p + "_heads");
}

}  // namespace

Result<planner::Graph> llama_decoder(const LlamaConfig& c, const std::string& name) {
  GraphBuilder b(name);
  int64_t hd = c.hidden / c.heads, kv_len = c.past + c.seq, group = c.heads / c.kv_heads;
  V x = b.input("tokens", {c.seq, c.hidden});
  V mask = b.input("attention_mask", {group * c.seq, kv_len});
  for (int l = 0; l < c.layers; ++l) {
    std::string p = "l" + std::to_string(l) + ".";
    V norm_w = b.parameter(p + "attn_norm.weight", {c.hidden});
    V wq = b.parameter(p + "wq", {c.hidden, c.heads * hd});
    V wk = b.parameter(p + "wk", {c.hidden, c.kv_heads * hd});
    V wv = b.parameter(p + "wv", {c.hidden, c.kv_heads * hd});
    V wo = b.parameter(p + "wo", {c.heads * hd, c.hidden});
    V ffn_norm_w = b.parameter(p + "ffn_norm.weight", {c.hidden});
    V w1 = b.parameter(p + "w1", {c.hidden, c.ffn});
    V w3 = b.parameter(p + "w3", {c.hidden, c.ffn});
    V w2 = b.parameter(p + "w2", {c.ffn, c.hidden});

    V h = b.op("rms_norm", {x, norm_w}, {attr("epsilon", c.epsilon)}, p + "attn_norm");
    V q = b.op("matmul", {h, wq}, {}, p + "q_proj");
    V k_new =
        to_heads(b, b.op("matmul", {h, wk}, {}, p + "k_proj"), c.seq, c.kv_heads, hd, p + "k");
    V v_new =
        to_heads(b, b.op("matmul", {h, wv}, {}, p + "v_proj"), c.seq, c.kv_heads, hd, p + "v");
    V k = k_new, v = v_new;
    if (c.past > 0) {
      V k_cache = b.input(p + "k_cache", {c.kv_heads, c.past, hd});
      V v_cache = b.input(p + "v_cache", {c.kv_heads, c.past, hd});
      k = b.op("concat", {k_cache, k_new}, {attr("axis", 1)}, p + "k_append");
      v = b.op("concat", {v_cache, v_new}, {attr("axis", 1)}, p + "v_append");
    } else {
      b.output(k_new);  // the K/V the next decode step reads from its cache
      b.output(v_new);
    }
    V ctx = attention(b, q, k, v, mask, c.seq, c.heads, c.kv_heads, hd, p);
    V attn = b.op("matmul", {ctx, wo}, {}, p + "o_proj");
    V x1 = b.op("add", {x, attn}, {}, p + "attn_residual");

    V h2 = b.op("rms_norm", {x1, ffn_norm_w}, {attr("epsilon", c.epsilon)}, p + "ffn_norm");
    V gate = b.op("matmul", {h2, w1}, {}, p + "gate_proj");
    V up = b.op("matmul", {h2, w3}, {}, p + "up_proj");
    V act = b.op("silu", {gate}, {}, p + "silu");
    V prod = b.op("multiply", {act, up}, {}, p + "swiglu");
    V down = b.op("matmul", {prod, w2}, {}, p + "down_proj");
    x = b.op("add", {x1, down}, {}, p + "ffn_residual");
  }
  if (c.vocab > 0) {
    V norm_w = b.parameter("norm.weight", {c.hidden});
    V lm_head = b.parameter("lm_head", {c.hidden, c.vocab});
    if (c.seq > 1)  // The next token comes from the last position's logits only.
      x = b.op("slice", {x},
               {attr("begins", ints({c.seq - 1, 0})), attr("ends", ints({c.seq, c.hidden})),
                attr("steps", ints({1, 1}))},
               "last_token");
    V h = b.op("rms_norm", {x, norm_w}, {attr("epsilon", c.epsilon)}, "norm");
    x = b.op("matmul", {h, lm_head}, {}, "lm_head_proj");
  }
  b.output(x);
  return b.build();
}

Result<planner::Graph> bert_encoder(const BertConfig& c, const std::string& name) {
  GraphBuilder b(name);
  int64_t hd = c.hidden / c.heads;
  V x = b.input("hidden_states", {c.seq, c.hidden});
  V mask = b.input("attention_mask", {c.seq, c.seq});
  for (int l = 0; l < c.layers; ++l) {
    std::string p = "l" + std::to_string(l) + ".";
    V wq = b.parameter(p + "query.weight", {c.hidden, c.hidden});
    V bq = b.parameter(p + "query.bias", {c.hidden});
    V wk = b.parameter(p + "key.weight", {c.hidden, c.hidden});
    V bk = b.parameter(p + "key.bias", {c.hidden});
    V wv = b.parameter(p + "value.weight", {c.hidden, c.hidden});
    V bv = b.parameter(p + "value.bias", {c.hidden});
    V wo = b.parameter(p + "attention.output.weight", {c.hidden, c.hidden});
    V bo = b.parameter(p + "attention.output.bias", {c.hidden});
    V ln1_w = b.parameter(p + "attention.ln.weight", {c.hidden});
    V ln1_b = b.parameter(p + "attention.ln.bias", {c.hidden});
    V wi = b.parameter(p + "intermediate.weight", {c.hidden, c.ffn});
    V bi = b.parameter(p + "intermediate.bias", {c.ffn});
    V w2 = b.parameter(p + "output.weight", {c.ffn, c.hidden});
    V b2 = b.parameter(p + "output.bias", {c.hidden});
    V ln2_w = b.parameter(p + "output.ln.weight", {c.hidden});
    V ln2_b = b.parameter(p + "output.ln.bias", {c.hidden});

    V q = b.op("linear", {x, wq, bq}, {}, p + "query");
    V k = to_heads(b, b.op("linear", {x, wk, bk}, {}, p + "key"), c.seq, c.heads, hd, p + "k");
    V v = to_heads(b, b.op("linear", {x, wv, bv}, {}, p + "value"), c.seq, c.heads, hd, p + "v");
    V ctx = attention(b, q, k, v, mask, c.seq, c.heads, c.heads, hd, p);
    V attn = b.op("linear", {ctx, wo, bo}, {}, p + "attention.output");
    V r1 = b.op("add", {x, attn}, {}, p + "attention.residual");
    V n1 = b.op("layer_norm", {r1, ln1_w, ln1_b}, {attr("epsilon", 1e-12)}, p + "attention.ln");
    V inter = b.op("linear", {n1, wi, bi}, {attr("activation", "gelu")}, p + "intermediate");
    V out = b.op("linear", {inter, w2, b2}, {}, p + "output");
    V r2 = b.op("add", {n1, out}, {}, p + "output.residual");
    x = b.op("layer_norm", {r2, ln2_w, ln2_b}, {attr("epsilon", 1e-12)}, p + "output.ln");
  }
  b.output(x);
  return b.build();
}

namespace {

/// conv2d with folded batch-norm (bias) and optional relu. x: NHWC; weights [O, KH, KW, I].
V conv_bn(GraphBuilder& b, V x, int64_t in, int64_t out, int64_t k, int64_t stride, bool relu,
          const std::string& p) {
  V w = b.parameter(p + ".weight", {out, k, k, in});
  V bias = b.parameter(p + ".bias", {out});
  int64_t pad = k / 2;
  std::vector<planner::Attribute> attrs = {attr("stride", ints({stride, stride})),
                                           attr("padding", ints({pad, pad, pad, pad}))};
  if (relu) attrs.push_back(attr("activation", "relu"));
  return b.op("conv2d", {x, w, bias}, std::move(attrs), p);
}

}  // namespace

Result<planner::Graph> resnet(const ResNetConfig& c, const std::string& name) {
  GraphBuilder b(name);
  V x = b.input("image", {c.batch, c.image, c.image, 3});
  x = conv_bn(b, x, 3, c.width, 7, 2, true, "stem.conv");
  x = b.op("max_pool2d", {x},
           {attr("kernel", ints({3, 3})), attr("stride", ints({2, 2})),
            attr("padding", ints({1, 1, 1, 1}))},
           "stem.pool");
  int64_t in = c.width;
  for (size_t s = 0; s < c.blocks.size(); ++s) {
    int64_t mid = c.width << s, out = mid * 4;
    for (int i = 0; i < c.blocks[s]; ++i) {
      std::string p = "stage" + std::to_string(s + 1) + ".block" + std::to_string(i);
      int64_t stride = (i == 0 && s > 0) ? 2 : 1;
      V y = conv_bn(b, x, in, mid, 1, 1, true, p + ".conv1");
      y = conv_bn(b, y, mid, mid, 3, stride, true, p + ".conv2");
      y = conv_bn(b, y, mid, out, 1, 1, false, p + ".conv3");
      V shortcut = (i == 0) ? conv_bn(b, x, in, out, 1, stride, false, p + ".downsample") : x;
      x = b.op("add", {y, shortcut}, {attr("activation", "relu")}, p + ".residual");
      in = out;
    }
  }
  V pooled = b.op("global_avg_pool2d", {x}, {}, "avgpool");
  V flat = b.op("reshape", {pooled}, {attr("shape", ints({c.batch, in}))}, "flatten");
  V fc_w = b.parameter("fc.weight", {in, c.classes});
  V fc_b = b.parameter("fc.bias", {c.classes});
  b.output(b.op("linear", {flat, fc_w, fc_b}, {}, "fc"));
  return b.build();
}

Result<planner::Graph> mlp(int64_t batch, std::vector<int64_t> widths, const std::string& name) {
  GraphBuilder b(name);
  V x = b.input("x", {batch, widths[0]});
  for (size_t i = 1; i < widths.size(); ++i) {
    std::string n = std::to_string(i);
    V w = b.parameter("w" + n, {widths[i - 1], widths[i]});
    V bias = b.parameter("b" + n, {1, widths[i]});
    x = b.op("add", {b.op("matmul", {x, w}, {}, "fc" + n), bias}, {}, "bias" + n);
    if (i + 1 < widths.size()) x = b.op("relu", {x}, {}, "act" + n);
  }
  b.output(x);
  return b.build();
}

std::vector<ModelSpec> zoo() {
  std::vector<ModelSpec> z;
  z.push_back({"mlp", "wormhole_b0",
               [] {
                 return mlp(64, {256, 512, 512, 128}, "mlp");
               },
               [] {
                 return mlp(64, {256, 512, 512, 128}, "mlp");
               }});
  auto llama = [](int64_t seq, int64_t past, int layers, bool reduced, std::string n) {
    LlamaConfig c;
    c.seq = seq;
    c.past = past;
    c.layers = layers;
    if (reduced) {  // same structure (GQA 4:1), 1/16 of the widths
      c.hidden = 256;
      c.heads = 8;
      c.kv_heads = 2;
      c.ffn = 896;
      c.seq = std::min<int64_t>(seq, 32);
      c.past = std::min<int64_t>(past, 31);
    }
    return llama_decoder(c, n);
  };
  z.push_back({"llama3_8b_prefill", "wormhole_b0",
               [=] { return llama(128, 0, 1, false, "llama3_8b_prefill"); },
               [=] { return llama(128, 0, 1, true, "llama3_8b_prefill"); }});
  z.push_back({"llama3_8b_decode", "wormhole_b0",
               [=] { return llama(1, 127, 1, false, "llama3_8b_decode"); },
               [=] { return llama(1, 127, 1, true, "llama3_8b_decode"); }});
  z.push_back({"llama3_8b_prefill_4l", "wormhole_b0",
               [=] { return llama(128, 0, 4, false, "llama3_8b_prefill_4l"); },
               [=] { return llama(128, 0, 4, true, "llama3_8b_prefill_4l"); }});
  z.push_back({"llama3_8b_decode_4l", "wormhole_b0",
               [=] { return llama(1, 127, 4, false, "llama3_8b_decode_4l"); },
               [=] { return llama(1, 127, 4, true, "llama3_8b_decode_4l"); }});
  z.push_back({"bert_base_layer", "wormhole_b0",
               [] { return bert_encoder(BertConfig{}, "bert_base_layer"); },
               [] {
                 BertConfig c;
                 c.hidden = 128;
                 c.heads = 4;
                 c.ffn = 512;
                 c.seq = 64;
                 return bert_encoder(c, "bert_base_layer");
               }});
  auto resnet_spec = [](int64_t batch, bool reduced, std::string n) {
    ResNetConfig c;
    c.batch = batch;
    if (reduced) {  // same depth and stages, 1/8 of the channels, 32x32 images
      c.image = 32;
      c.width = 8;
      c.classes = 100;
      c.batch = std::min<int64_t>(batch, 2);
    }
    return resnet(c, n);
  };
  z.push_back({"resnet50_b1", "wormhole_b0", [=] { return resnet_spec(1, false, "resnet50_b1"); },
               [=] { return resnet_spec(1, true, "resnet50_b1"); }});
  z.push_back({"resnet50_b8", "wormhole_b0", [=] { return resnet_spec(8, false, "resnet50_b8"); },
               [=] { return resnet_spec(8, true, "resnet50_b8"); }});
  return z;
}

}  // namespace meshplan::models
