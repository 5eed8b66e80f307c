#include "model/model.h"

namespace kvforge {
namespace {

// The frequency divisors RoPE uses: Llama 3's rope_freqs when present, else
// LongRoPE's long factors when the context kvforge serves (the trained
// context) exceeds the original one, else its short factors. llama.cpp
// chooses by its context size, which is the trained context unless -c says
// otherwise.
std::span<const float> rope_factors(const ModelConfig& c, const ModelWeights& w) {
  if (!w.rope_freqs.empty()) return w.rope_freqs;
  if (c.n_ctx_train > c.rope.n_ctx_orig && !w.rope_factors_long.empty()) return w.rope_factors_long;
  return w.rope_factors_short;
}

bool same_rope(const RopeConfig& a, const RopeConfig& b) {
  return a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
         a.ext_factor == b.ext_factor && a.attn_factor == b.attn_factor;
}

}  // namespace

Model::Model(gguf::GgufFile file, ModelConfig config, ModelWeights weights)
    : file_(std::move(file)),
      config_(std::move(config)),
      rank_config_(weights.split.rank_config(config_)),
      rank_config_swa_(rank_config_),
      weights_(std::move(weights)) {
  const ModelConfig& c = config_;
  if (c.per_layer_heads()) {
    rank_config_swa_.head_dim = c.head_dim_swa > 0 ? c.head_dim_swa : c.head_dim;
    rank_config_swa_.rope_dim = c.rope_dim_swa > 0 ? c.rope_dim_swa : c.rope_dim;
    if (rank_config_.n_kv_head_swa > 0) rank_config_swa_.n_kv_head = rank_config_.n_kv_head_swa;
  }
  const bool neox = c.rope_style == RopeStyle::Neox;
  const std::span<const float> factors = rope_factors(c, weights_);
  ropes_.emplace_back(c.rope_dim, c.rope, neox, factors);
  // Gemma 4's rope_freqs apply to its full layers only.
  const bool swa_unfactored = c.arch == Architecture::Gemma4 && !factors.empty();
  const int swa_rope_dim = c.rope_dim_swa > 0 ? c.rope_dim_swa : c.rope_dim;
  const bool own_swa_rope = c.sliding_window > 0 && (!same_rope(c.rope, c.rope_swa) ||
                                                     swa_unfactored || swa_rope_dim != c.rope_dim);
  if (own_swa_rope)
    ropes_.emplace_back(
        swa_rope_dim, c.rope_swa, neox,
        swa_unfactored || swa_rope_dim != c.rope_dim ? std::span<const float>() : factors);
  layer_rope_.resize(size_t(c.n_layer));
  for (int l = 0; l < c.n_layer; ++l) layer_rope_[size_t(l)] = own_swa_rope && c.window(l) ? 1 : 0;
}

std::unique_ptr<Model> Model::load(const std::filesystem::path& path, Communicator* comm,
                                   const Progress& progress) {
  return from_file(gguf::GgufFile::open(path), comm, progress);
}

std::unique_ptr<Model> Model::from_file(gguf::GgufFile file, Communicator* comm,
                                        const Progress& progress) {
  ModelConfig config = ModelConfig::from_gguf(file);
  // The weight views point into the mapping, which moving GgufFile keeps in place.
  ModelWeights weights = comm ? ModelWeights::from_gguf(file, config, comm->rank(), comm->size())
                              : ModelWeights::from_gguf(file, config);
  // The file's pages of the matrices copied are dropped from resident memory
  // (small F16: ~200 MB that would otherwise be counted twice).
  weights.regroup_for_kernels([&](std::span<const uint8_t> src) { file.release_pages(src); },
                              progress);
  if (progress) progress(1.0);
  return std::unique_ptr<Model>(new Model(std::move(file), std::move(config), std::move(weights)));
}

uint64_t Model::n_params() const {
  uint64_t n = 0;
  for (const gguf::TensorInfo& t : file_.tensors()) n += t.n_elements;
  return n;
}

}  // namespace kvforge
