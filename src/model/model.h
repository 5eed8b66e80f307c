// A loaded model: the mapped GGUF file, its hyperparameters and weight views.
// Immutable after load; all mutable state (KV cache, scratch, RNG) lives
// outside and is passed in explicitly.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include "core/gguf/gguf_file.h"
#include "core/ops/rope.h"
#include "model/model_config.h"
#include "model/model_weights.h"

namespace kvforge {

class Model {
 public:
  // Throws gguf::GgufError or std::runtime_error naming the file and the problem.
  static std::unique_ptr<Model> load(const std::filesystem::path& path);
  static std::unique_ptr<Model> from_file(gguf::GgufFile file);

  const gguf::GgufFile& file() const { return file_; }
  const ModelConfig& config() const { return config_; }
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
  ModelWeights weights_;
  std::vector<RopeTable> ropes_;
  std::vector<int> layer_rope_;  // [n_layer] index into ropes_
};

}  // namespace kvforge
