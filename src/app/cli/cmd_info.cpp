// kvforge info: what a GGUF file holds — metadata, hyperparameters, tensors,
// parameter count, file size and the KV cache cost per token.
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "core/gguf/gguf_file.h"
#include "engine/kv/kv_memory_plan.h"
#include "model/model_config.h"
#include "model/tensor_split.h"

namespace kvforge::cli {
namespace {

std::string value_summary(const gguf::Value& v) {
  switch (v.type) {
    case gguf::ValueType::STRING: {
      const auto& s = std::get<std::string>(v.data);
      return s.size() > 60
                 ? "\"" + s.substr(0, 57) + "...\" (" + std::to_string(s.size()) + " bytes)"
                 : "\"" + s + "\"";
    }
    case gguf::ValueType::ARRAY: {
      const auto& a = std::get<gguf::Array>(v.data);
      return "[" + std::string(gguf::value_type_name(a.element_type)) + " x " +
             std::to_string(a.items.size()) + "]";
    }
    case gguf::ValueType::BOOL:
      return std::get<bool>(v.data) ? "true" : "false";
    case gguf::ValueType::FLOAT32:
    case gguf::ValueType::FLOAT64:
      return std::to_string(std::get<double>(v.data));
    default:
      return v.is_integer() && std::holds_alternative<int64_t>(v.data)
                 ? std::to_string(std::get<int64_t>(v.data))
                 : std::to_string(std::get<uint64_t>(v.data));
  }
}

std::string dims_str(const std::vector<uint64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

// The first layer with a sliding window (0 when none has one).
int first_windowed(const ModelConfig& c) {
  for (int l = 0; l < c.n_layer; ++l)
    if (c.window(l) > 0) return l;
  return 0;
}

std::string rope_description(const ModelConfig& c) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s pairs, %d dims, base %g",
                c.rope_style == RopeStyle::Neox ? "neox" : "adjacent", c.rope_dim,
                double(c.rope.freq_base));
  std::string s = buf;
  switch (c.rope_scaling) {
    case RopeScaling::Linear:
      if (c.rope.freq_scale != 1.0f) {
        std::snprintf(buf, sizeof buf, ", linear x%g", double(1.0f / c.rope.freq_scale));
        s += buf;
      }
      break;
    case RopeScaling::Yarn:
      std::snprintf(buf, sizeof buf, ", yarn x%g over %d positions",
                    double(1.0f / c.rope.freq_scale), c.rope.n_ctx_orig);
      s += buf;
      break;
    case RopeScaling::LongRope:
      s += ", longrope";
      break;
    case RopeScaling::None:
      break;
  }
  return s;
}

// The dense FFN's rows: n_ff, or each run of layers of one width ("128
// (layers 0-5), 256 (layers 6-8)": Gemma 4's double-wide shared-KV layers).
std::string ffn_rows(const ModelConfig& c) {
  if (c.n_ff_layers.empty()) return std::to_string(c.n_ff);
  std::string out;
  for (int first = 0, l = 1; l <= c.n_layer; ++l) {
    if (l < c.n_layer && c.layer_n_ff(l) == c.layer_n_ff(first)) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(c.layer_n_ff(first)) + " (layer" +
           (l - 1 > first ? "s " + std::to_string(first) + "-" : " ") + std::to_string(l - 1) + ")";
    first = l;
  }
  return out;
}

// The features of the architecture this file uses, as kvforge computes them.
std::vector<std::string> features(const ModelConfig& c, const gguf::GgufFile& f) {
  std::vector<std::string> out;
  const auto add = [&](bool used, std::string what) {
    if (used) out.push_back(std::move(what));
  };
  const bool gemma4 = c.arch == Architecture::Gemma4;
  add(f.find_tensor("rope_freqs.weight") != nullptr,
      gemma4 ? "RoPE frequency factors on full layers" : "Llama 3 RoPE frequency factors");
  add(c.n_embd_per_layer > 0,
      "per-layer token embeddings of " + std::to_string(c.n_embd_per_layer) + " per layer");
  add(c.v_norm, "V RMS norm, no query scaling");
  const int swa_layer = first_windowed(c);
  add(c.per_layer_heads(), "windowed layers' " + std::to_string(c.layer_n_kv_head(swa_layer)) +
                               " KV heads of " + std::to_string(c.layer_head_dim(swa_layer)) +
                               " (" + std::to_string(c.layer_rope_dim(swa_layer)) + " rotated)");
  add(c.n_kv_shared > 0, std::to_string(c.n_kv_shared) + " of " + std::to_string(c.n_layer) +
                             " layers reuse an earlier layer's K/V (K/V in " +
                             std::to_string(c.n_kv_layers()) + " layers)");
  add(f.find_tensor("rope_factors_long.weight") != nullptr,
      std::string("LongRoPE factors (") + (c.n_ctx_train > c.rope.n_ctx_orig ? "long" : "short") +
          " ones in use)");
  add(c.qkv_bias, "Q/K/V biases");
  add(f.find_tensor("blk.0.attn_qkv.weight") != nullptr, "fused Q/K/V matrix");
  add(c.arch == Architecture::Phi3, "fused gate|up matrix");
  add(c.qk_norm, "Q/K RMS norms");
  add(c.post_norms, "post-attention and post-FFN norms");
  add(c.embd_scale != 1.0f, "embeddings scaled by sqrt(n_embd)");
  add(c.ffn_act == FfnActivation::GeluTanh, "GELU (tanh) FFN");
  add(c.attn_sinks, "attention sinks");
  add(c.attn_output_bias, "attention output bias");
  add(c.ffn_act == FfnActivation::SwigluOai, "clamped SwiGLU experts with biases");
  char cap[64];
  std::snprintf(cap, sizeof cap, "attention soft-cap %g", double(c.attn_softcap));
  add(c.attn_softcap > 0, cap);
  std::snprintf(cap, sizeof cap, "final logit soft-cap %g", double(c.final_softcap));
  add(c.final_softcap > 0, cap);
  if (c.sliding_window > 0) {
    int n = 0;
    for (uint8_t w : c.swa_layers) n += w;
    out.push_back("sliding window " + std::to_string(c.sliding_window) + " on " +
                  std::to_string(n) + " of " + std::to_string(c.n_layer) + " layers" +
                  (c.rope_swa.freq_base != c.rope.freq_base
                       ? " (RoPE base " + std::to_string(int64_t(c.rope_swa.freq_base)) + ")"
                       : ""));
  }
  if (c.moe.n_expert > 0)
    out.push_back(
        "mixture of experts: " + std::to_string(c.moe.n_expert) + " experts of " +
        std::to_string(c.moe.n_ff_exp) + " FFN rows, " + std::to_string(c.moe.n_expert_used) +
        " per token" +
        (c.moe.n_ff_shexp > 0
             ? ", and a shared expert of " + std::to_string(c.moe.n_ff_shexp) + " rows"
             : "") +
        (c.arch == Architecture::Gemma4 ? ", beside a dense FFN of " + ffn_rows(c) + " rows" : ""));
  return out;
}

// A mixture of experts reads k of its n experts per token: the parameters
// and bytes of everything else, plus k/n of the experts' (`*_exps.*`).
void print_active_parameters(const ModelConfig& c, const gguf::GgufFile& f) {
  if (c.moe.n_expert == 0) return;
  double params = 0, bytes = 0, all_params = 0;
  const double share = double(c.moe.n_expert_used) / double(c.moe.n_expert);
  for (const gguf::TensorInfo& t : f.tensors()) {
    const double part = t.name.find("_exps.") != std::string::npos ? share : 1.0;
    params += part * double(t.n_elements);
    bytes += part * double(t.n_bytes);
    all_params += double(t.n_elements);
  }
  std::printf("  active/token     %.3f M of %.3f M parameters, %s of weights read\n", params / 1e6,
              all_params / 1e6, human_bytes(bytes).c_str());
}

// Which rank counts (up to kMaxColumnParts, the most kvforge splits into)
// shard this model's KV heads, and which replicate them (kv-plan --tp N
// sizes a rank's share).
void print_tp_options(const ModelConfig& c) {
  // A dense FFN splits its rows; a mixture of experts each expert's rows and
  // outputs (Gemma 4's both: its experts run beside a dense FFN); linear
  // attention its key heads and ssm_out's outputs.
  const auto ffn_splits = [&](int tp) {
    if (c.hybrid() && (c.linear.n_k_heads % tp != 0 || c.n_embd % tp != 0)) return false;
    if (c.moe.n_expert == 0 || c.experts_beside_ffn()) {
      for (int l = 0; l < c.n_layer; ++l)
        if (c.layer_n_ff(l) % tp != 0) return false;
      if (c.moe.n_expert == 0) return true;
    }
    return c.moe.n_ff_exp % tp == 0 && c.moe.n_ff_shexp % tp == 0 && c.n_embd % tp == 0;
  };
  std::string split, replicated;
  for (int tp = 2; tp <= kMaxColumnParts; tp *= 2) {
    if (c.n_head % tp != 0 || !ffn_splits(tp)) break;
    // Every kind of layer's KV heads split (or replicate) over tp ranks.
    const auto splits = [&](int n) { return n == 0 || n % tp == 0; };
    const auto replicates = [&](int n) { return n == 0 || n % tp == 0 || tp % n == 0; };
    if (splits(c.n_kv_head) && splits(c.n_kv_head_swa))
      split += (split.empty() ? "" : ", ") + std::to_string(tp);
    else if (replicates(c.n_kv_head) && replicates(c.n_kv_head_swa))
      replicated += (replicated.empty() ? "" : ", ") + std::to_string(tp);
  }
  std::printf("  tensor parallel  %s\n",
              split.empty() ? "one rank only (the KV heads do not split)"
                            : ("tp " + split + " (KV heads split by rank)").c_str());
  if (!replicated.empty())
    std::printf(
        "                   tp %s: more ranks than KV heads, each held by several "
        "(replicated, as vLLM does)\n",
        replicated.c_str());
}

void print_hyperparameters(const ModelConfig& c, const gguf::GgufFile& f) {
  std::printf("\nmodel\n");
  std::printf("  architecture     %s%s\n", c.arch_name.c_str(),
              c.name.empty() ? "" : (" (" + c.name + ")").c_str());
  std::printf("  vocab            %d\n  n_embd           %d\n  layers           %d\n", c.n_vocab,
              c.n_embd, c.n_layer);
  std::printf("  n_ff             %s\n  heads            %d (KV heads %s, head_dim %d%s)\n",
              ffn_rows(c).c_str(), c.n_head, kv_heads_text(c).c_str(), c.head_dim,
              c.max_n_kv_head() < c.n_head ? ", GQA" : "");
  std::printf("  rope             %s\n", rope_description(c).c_str());
  std::printf("  rms eps          %g\n  train context    %d\n  output           %s\n",
              double(c.rms_eps), c.n_ctx_train, c.tied_output ? "tied to token_embd" : "own");
  const std::vector<std::string> used = features(c, f);
  for (size_t i = 0; i < used.size(); ++i)
    std::printf("  %-16s %s\n", i == 0 ? "features" : "", used[i].c_str());
  print_active_parameters(c, f);
  std::printf("  KV per token     %s (f32), %s (f16)\n",
              human_bytes(c.kv_bytes_per_token(4)).c_str(),
              human_bytes(c.kv_bytes_per_token(2)).c_str());
  if (c.hybrid())
    std::printf(
        "  state per seq    %s (f32: %d recurrent layers, conv window %d, %d value heads "
        "of %dx%d; K/V in %d layers)\n",
        human_bytes(double(c.state_bytes_per_sequence())).c_str(), c.n_layer - c.n_kv_layers(),
        c.linear.conv_kernel - 1, c.linear.n_v_heads, c.linear.head_dim, c.linear.head_dim,
        c.n_kv_layers());
  // As the paged engine keeps a sequence: windowed layers hold only their window.
  const uint64_t per_sequence = kv_bytes_per_sequence(
      ModelShape::from_config(c), KvFormat{KvDtype::F16, KvDtype::F16}, c.n_ctx_train);
  std::printf("  KV at %-6d ctx %s (f16%s)\n", c.n_ctx_train,
              human_bytes(double(per_sequence)).c_str(),
              c.sliding_window > 0 ? ", windowed layers at their window" : "");
  print_tp_options(c);
}

void info(const std::string& path, bool all_tensors) {
  const gguf::GgufFile f = gguf::GgufFile::open(path);
  std::printf("file             %s\n", path.c_str());
  std::printf("size             %s (%llu bytes)\n", human_bytes(double(f.file_size())).c_str(),
              static_cast<unsigned long long>(f.file_size()));
  std::printf("gguf version     %u, alignment %llu, %zu metadata keys, %zu tensors\n", f.version(),
              static_cast<unsigned long long>(f.alignment()), f.metadata().size(),
              f.tensors().size());
  std::printf("\nmetadata\n");
  for (const gguf::KeyValue& kv : f.metadata())
    std::printf("  %-40s %s\n", kv.key.c_str(), value_summary(kv.value).c_str());
  if (!f.tensors().empty()) {
    try {
      print_hyperparameters(ModelConfig::from_gguf(f), f);
    } catch (const std::exception& e) {
      std::printf("\nmodel: not a runnable model (%s)\n", e.what());
    }
  }
  uint64_t params = 0, bytes = 0;
  std::map<std::string, uint64_t> by_type;
  for (const gguf::TensorInfo& t : f.tensors()) {
    params += t.n_elements;
    bytes += t.n_bytes;
    by_type[std::string(type_name(t.type))] += t.n_elements;
  }
  std::printf("\ntensors          %zu, %.3f M parameters, %s of data\n", f.tensors().size(),
              double(params) / 1e6, human_bytes(double(bytes)).c_str());
  for (const auto& [type, n] : by_type)
    std::printf("  %-6s %12llu parameters (%.1f%%)\n", type.c_str(),
                static_cast<unsigned long long>(n),
                100.0 * double(n) / double(std::max<uint64_t>(1, params)));
  std::printf("\n  %-32s %-6s %-20s %12s\n", "name", "type", "shape (ne0 x ne1 ...)", "bytes");
  size_t shown = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const bool layer = t.name.rfind("blk.", 0) == 0;
    if (!all_tensors && layer && t.name.rfind("blk.0.", 0) != 0) continue;
    std::printf("  %-32s %-6s %-20s %12llu\n", t.name.c_str(),
                std::string(type_name(t.type)).c_str(), dims_str(t.dims).c_str(),
                static_cast<unsigned long long>(t.n_bytes));
    ++shown;
  }
  if (shown < f.tensors().size())
    std::printf("  ... %zu more (layers after blk.0; --all to list them)\n",
                f.tensors().size() - shown);
}

}  // namespace

void declare_info_command(CLI::App& sub) {
  auto path = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  // -m as every other command; the positional form stays. Neither: the default model.
  CLI::Option* flag =
      sub.add_option("-m,--model", *path, "GGUF file (default: the model in models/)");
  sub.add_option("model", *path, "GGUF file, as -m")->excludes(flag);
  sub.add_flag("--all", *all, "list every tensor");
  sub.callback([path, all] { info(resolve_model_path(*path).string(), *all); });
}

}  // namespace kvforge::cli
