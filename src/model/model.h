// A loaded model: the mapped GGUF file, its hyperparameters and weight views.
// Immutable after load; all mutable state (KV cache, scratch, RNG) lives
// outside and is passed in explicitly.
#pragma once

#include <filesystem>
#include <memory>

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
  const RopeTable& rope() const { return rope_; }
  // Parameters counted over all tensors of the file.
  uint64_t n_params() const;

 private:
  Model(gguf::GgufFile file, ModelConfig config, ModelWeights weights)
      : file_(std::move(file)),
        config_(std::move(config)),
        weights_(std::move(weights)),
        rope_(config_.rope_dim, config_.rope_freq_base, config_.rope_style == RopeStyle::Neox) {}
  gguf::GgufFile file_;
  ModelConfig config_;
  ModelWeights weights_;
  RopeTable rope_;
};

}  // namespace kvforge
