// A loaded model: the mapped GGUF file, its hyperparameters and weight views.
// Immutable after load; all mutable state (KV cache, scratch, RNG, the
// channel between tensor-parallel ranks) lives outside and is passed in
// explicitly.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "core/comm/communicator.h"
#include "core/gguf/gguf_file.h"
#include "core/ops/rope.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace kvforge {

class Model {
 public:
  // Throws gguf::GgufError or std::runtime_error naming the file and the problem.
  // With a communicator of n ranks, loads this rank's share of a tensor-
  // parallel run (model/tensor_split.h): only its rank and size are read,
  // the model does not keep it; forward() is then given it to exchange
  // partial results. Without: all of it.
  // `progress`, when given, hears the fraction of the load done (0..1), from
  // the loading thread, as the weights are regrouped for the kernels.
  using Progress = std::function<void(double fraction)>;
  static std::unique_ptr<Model> load(const std::filesystem::path& path,
                                     Communicator* comm = nullptr, const Progress& progress = {});
  static std::unique_ptr<Model> from_file(gguf::GgufFile file, Communicator* comm = nullptr,
                                          const Progress& progress = {});

  const gguf::GgufFile& file() const { return file_; }
  // The whole model's hyperparameters, as in the file.
  const ModelConfig& config() const { return config_; }
  // What this rank computes with: config() with this rank's n_head,
  // n_kv_head and n_ff (the same as config() on one process). KV caches are
  // built from it, so they hold this rank's KV heads only.
  const ModelConfig& rank_config() const { return rank_config_; }
  // rank_config() as `layer` sees it: head_dim, rope_dim and n_kv_head are the layer's
  // (ModelConfig::layer_shape; they differ for Gemma 4's windowed layers).
  const ModelConfig& layer_config(int layer) const {
    return rank_config_.per_layer_heads() && rank_config_.window(layer) ? rank_config_swa_
                                                                        : rank_config_;
  }
  const TensorSplit& split() const { return weights_.split; }
  // Ranks of the tensor-parallel run (1: one process).
  int tp() const { return weights_.split.n_ranks; }
  const ModelWeights& weights() const { return weights_; }
  // The distinct RoPE tables (one, or two when sliding-window layers have
  // their own) and which one each layer uses.
  const std::vector<RopeTable>& rope_tables() const { return ropes_; }
  int rope_index(int layer) const { return layer_rope_[size_t(layer)]; }
  const RopeTable& rope(int layer = 0) const { return ropes_[size_t(rope_index(layer))]; }
  // Parameters counted over all tensors of the file.
  uint64_t n_params() const;

 private:
  Model(gguf::GgufFile file, ModelConfig config, ModelWeights weights);
  gguf::GgufFile file_;
  ModelConfig config_;
  ModelConfig rank_config_;
  ModelConfig rank_config_swa_;  // rank_config_ with the windowed layers' head shape
  ModelWeights weights_;
  std::vector<RopeTable> ropes_;
  std::vector<int> layer_rope_;  // [n_layer] index into ropes_
};

}  // namespace kvforge
