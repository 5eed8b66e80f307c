// kvforge make-model: write a random-weight GGUF of any shape and architecture.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/progress_line.h"
#include "app/cli/subcommand.h"
#include "core/formats/row_codec.h"
#include "core/gguf/gguf_file.h"
#include "model/random_model.h"

namespace kvforge::cli {
namespace {

struct MakeModelFlags {
  std::string out;
  std::string preset = "tiny";
  std::string vocab;
  std::string type = "f32";
  std::string expert_type;  // empty: --type
  int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  uint64_t seed = 42;
  int n_embd = 0, n_layer = 0, n_head = 0, n_kv_head = 0, n_ff = 0, n_ctx = 0, n_vocab = 0;
  std::vector<std::string> control_tokens;
  bool tied = false;
  RandomModelSpec arch;  // the architecture options, copied onto the preset
};

// The architecture options (--arch and the layer shapes) over a preset's sizes.
void apply_architecture(const RandomModelSpec& a, RandomModelSpec& s) {
  s.arch = a.arch;
  s.head_dim = a.head_dim;
  s.fused_qkv = a.fused_qkv;
  s.sliding_window = a.sliding_window;
  s.swa_pattern = a.swa_pattern;
  s.rope_freq_base = a.rope_freq_base;
  s.rope_freq_base_swa = a.rope_freq_base_swa;
  s.attn_softcap = a.attn_softcap;
  s.final_softcap = a.final_softcap;
  s.rope_scaling = a.rope_scaling;
  s.rope_factor = a.rope_factor;
  s.rope_orig_ctx = a.rope_orig_ctx;
  s.llama3_rope_freqs = a.llama3_rope_freqs;
  s.longrope_factors = a.longrope_factors;
  s.n_expert = a.n_expert;
  s.n_expert_used = a.n_expert_used;
  s.n_ff_exp = a.n_ff_exp;
  s.n_ff_shexp = a.n_ff_shexp;
  s.ssm_conv_kernel = a.ssm_conv_kernel;
  s.ssm_head_dim = a.ssm_head_dim;
  s.ssm_k_heads = a.ssm_k_heads;
  s.ssm_v_heads = a.ssm_v_heads;
  s.full_attention_interval = a.full_attention_interval;
  s.rope_dim = a.rope_dim;
  s.n_mtp = a.n_mtp;
  s.n_embd_per_layer = a.n_embd_per_layer;
  s.n_kv_shared = a.n_kv_shared;
  s.head_dim_swa = a.head_dim_swa;
  s.n_kv_head_swa = a.n_kv_head_swa;
  s.gemma4_moe = a.gemma4_moe;
  s.double_wide_ffn = a.double_wide_ffn;
}

GgmlType weight_type(const std::string& name) {
  const auto type = parse_type_name(name);
  if (!type || !is_quantizable_type(*type))
    throw std::invalid_argument("unknown weight type '" + name +
                                "' (kvforge can write: " + supported_weight_type_names() + ")");
  return *type;
}

// Writes the file, its tensors generated on the way, with a progress line.
void write_model(const gguf::GgufWriter& writer, const std::string& out) {
  ProgressLine line;
  writer.write(out, [&](uint64_t done, uint64_t total, const std::string& tensor) {
    line.update("make-model: %.2f of %.2f GB of tensors written (%.0f%%) %s", double(done) / 1e9,
                double(total) / 1e9, total > 0 ? 100.0 * double(done) / double(total) : 100.0,
                tensor.c_str());
  });
  line.finish();
}

void make_model(const MakeModelFlags& f) {
  std::optional<RandomModelSpec> spec = RandomModelSpec::preset(f.preset);
  if (!spec) throw std::invalid_argument("unknown preset '" + f.preset + "' (tiny, small)");
  spec->weight_type = weight_type(f.type);
  if (!f.expert_type.empty()) spec->expert_type = weight_type(f.expert_type);
  spec->threads = f.threads;
  spec->seed = f.seed;
  spec->tied_output = f.tied;
  apply_architecture(f.arch, *spec);
  for (auto [flag, field] : {std::pair{f.n_embd, &spec->n_embd},
                             {f.n_layer, &spec->n_layer},
                             {f.n_head, &spec->n_head},
                             {f.n_kv_head, &spec->n_kv_head},
                             {f.n_ff, &spec->n_ff},
                             {f.n_ctx, &spec->n_ctx},
                             {f.n_vocab, &spec->n_vocab}})
    if (flag > 0) *field = flag;
  std::optional<gguf::GgufFile> vocab;
  if (!f.vocab.empty()) vocab = gguf::GgufFile::open(f.vocab);
  if (vocab && !f.control_tokens.empty())
    throw std::invalid_argument(
        "make-model: --control-tokens extends the byte vocabulary only, "
        "not a --vocab file's");
  spec->control_tokens = f.control_tokens;
  std::fprintf(stderr,
               "make-model: %s %s preset, n_embd %d, %d layers, %d heads (%d KV), n_ff %d, %s, "
               "vocab %s\n",
               spec->arch.c_str(), f.preset.c_str(), spec->n_embd, spec->n_layer, spec->n_head,
               spec->n_kv_head, spec->n_ff, f.type.c_str(),
               vocab ? f.vocab.c_str()
                     : (std::to_string(std::max(spec->n_vocab,
                                                kByteVocabTokens + int(f.control_tokens.size()))) +
                        " tokens (bytes, control, unused)")
                           .c_str());
  write_model(make_random_model(*spec, vocab ? &*vocab : nullptr), f.out);
  std::fprintf(stderr, "wrote %s\n", f.out.c_str());
}

// The layer shapes beyond llama's: heads, windows, RoPE variants, soft-caps.
void declare_architecture_flags(CLI::App& sub, RandomModelSpec& a) {
  sub.add_option("--arch", a.arch, std::string("architecture: ") + random_model_architectures())
      ->capture_default_str();
  sub.add_option("--head-dim", a.head_dim, "head size (default n_embd / n_head)");
  sub.add_flag("--fused-qkv", a.fused_qkv, "one attn_qkv matrix instead of attn_q/k/v");
  sub.add_option("--sliding-window", a.sliding_window, "attention.sliding_window");
  sub.add_option("--swa-pattern", a.swa_pattern,
                 "attention.sliding_window_pattern (every n-th layer global)");
  sub.add_option("--rope-base", a.rope_freq_base, "rope.freq_base")->capture_default_str();
  sub.add_option("--rope-base-swa", a.rope_freq_base_swa, "rope.freq_base_swa (gemma)");
  sub.add_option("--attn-softcap", a.attn_softcap, "attn_logit_softcapping (gemma2)");
  sub.add_option("--final-softcap", a.final_softcap, "final_logit_softcapping (gemma)");
  sub.add_option("--rope-scaling", a.rope_scaling,
                 "rope.scaling.type: none, linear, yarn, longrope");
  sub.add_option("--rope-factor", a.rope_factor, "rope.scaling.factor");
  sub.add_option("--rope-orig-ctx", a.rope_orig_ctx, "rope.scaling.original_context_length");
  sub.add_flag("--llama3-rope-freqs", a.llama3_rope_freqs,
               "write Llama 3.1's rope_freqs.weight (factor 8 over --rope-orig-ctx or 8192)");
  sub.add_flag("--longrope-factors", a.longrope_factors,
               "write Phi-3's rope_factors_long/short.weight");
}

// Mixtures of experts and the hybrid (linear-attention) layers.
void declare_expert_and_hybrid_flags(CLI::App& sub, RandomModelSpec& a) {
  sub.add_option("--n-expert", a.n_expert, "experts per layer (mixtures of experts)")
      ->capture_default_str();
  sub.add_option("--n-expert-used", a.n_expert_used,
                 "experts each token runs (mixtures of experts)")
      ->capture_default_str();
  sub.add_option("--n-ff-exp", a.n_ff_exp, "FFN rows of one expert (mixtures of experts)")
      ->capture_default_str();
  sub.add_option("--n-ff-shexp", a.n_ff_shexp,
                 "FFN rows of the shared expert (qwen35moe, qwen3next)")
      ->capture_default_str();
  sub.add_option("--ssm-conv-kernel", a.ssm_conv_kernel, "hybrids: ssm.conv_kernel")
      ->capture_default_str();
  sub.add_option("--ssm-head-dim", a.ssm_head_dim, "hybrids: ssm.state_size (linear head size)")
      ->capture_default_str();
  sub.add_option("--ssm-k-heads", a.ssm_k_heads, "hybrids: ssm.group_count (linear key heads)")
      ->capture_default_str();
  sub.add_option("--ssm-v-heads", a.ssm_v_heads, "hybrids: ssm.time_step_rank (value heads)")
      ->capture_default_str();
  sub.add_option("--full-attention-interval", a.full_attention_interval,
                 "hybrids: every n-th layer is full attention")
      ->capture_default_str();
  sub.add_option("--rope-dim", a.rope_dim, "hybrids: rotated dimensions per head (default head/4)");
  sub.add_option("--mtp-layers", a.n_mtp, "hybrids: multi-token-prediction blocks to append");
  sub.add_option("--n-embd-per-layer", a.n_embd_per_layer,
                 "gemma4: per-layer embedding width (0: none)")
      ->capture_default_str();
  sub.add_option("--shared-kv-layers", a.n_kv_shared,
                 "gemma4: last layers reusing an earlier layer's K/V");
  sub.add_option("--head-dim-swa", a.head_dim_swa,
                 "gemma4: the windowed layers' head size (default: --head-dim)");
  sub.add_option("--n-kv-head-swa", a.n_kv_head_swa,
                 "gemma4: the windowed layers' KV heads (default: --n-kv-head; when it differs "
                 "attention.head_count_kv is a per-layer array)");
  sub.add_flag("--gemma4-moe", a.gemma4_moe,
               "gemma4: the MoE variant, --n-expert experts beside the dense FFN per layer");
  sub.add_flag("--n-ff-double-wide", a.double_wide_ffn,
               "gemma4: use_double_wide_mlp (E2B/E4B): the --shared-kv-layers layers have "
               "2 x --n-ff FFN rows (feed_forward_length written per layer)");
}

void declare_flags(CLI::App& sub, MakeModelFlags& f) {
  sub.add_option("-o,--output", f.out, "output GGUF file")->required();
  sub.add_option("--preset", f.preset,
                 "tiny or small (768/12 layers/12 heads/4 KV/ff 2048/32000 tokens)")
      ->capture_default_str();
  sub.add_option("--vocab", f.vocab, "take the tokenizer from this GGUF (default: byte vocab)");
  sub.add_option("--type", f.type, "matrix type: " + supported_weight_type_names())
      ->capture_default_str();
  sub.add_option("--expert-type", f.expert_type,
                 "type of the experts' matrices (mixtures of experts; default: --type)");
  sub.add_option("-s,--seed", f.seed, "weights seed")->capture_default_str();
  sub.add_option("-t,--threads", f.threads, "quantization threads (the file does not depend on it)")
      ->capture_default_str();
  sub.add_option("--n-embd", f.n_embd, "override the preset");
  sub.add_option("--n-layer", f.n_layer, "override the preset");
  sub.add_option("--n-head", f.n_head, "override the preset");
  sub.add_option("--n-kv-head", f.n_kv_head, "override the preset");
  sub.add_option("--n-ff", f.n_ff, "override the preset");
  sub.add_option("--n-ctx", f.n_ctx, "override the preset");
  sub.add_option("--n-vocab", f.n_vocab,
                 "override the preset: byte vocabulary padded with unused tokens to this size");
  sub.add_option("--control-tokens", f.control_tokens,
                 "control tokens to add to the byte vocabulary (e.g. gpt-oss's <|start|>)")
      ->delimiter(',');
  sub.add_flag("--tied", f.tied, "tie the output projection to the token embedding");
  declare_architecture_flags(sub, f.arch);
  declare_expert_and_hybrid_flags(sub, f.arch);
}

}  // namespace

void declare_make_model_command(CLI::App& sub) {
  declare_command<MakeModelFlags>(sub, make_model, declare_flags);
}

}  // namespace kvforge::cli
