// Converting a GGUF model's weight matrices to another storage format
// (`kvforge quantize`). Metadata is copied; 1-D tensors (norms, biases) stay
// as they are; every 2-D matrix is dequantized to f32 and re-encoded.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "core/dtype.h"

namespace kvforge {

struct QuantizeReport {
  int converted = 0;  // matrices written in the requested type
  int fallback = 0;   // matrices whose row length is not a multiple of the type's block
                      // (written as q8_0, or f16 when even that does not divide)
  int kept = 0;       // 1-D tensors copied unchanged
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

using QuantizeProgress = std::function<void(int done, int total, const std::string& tensor)>;

// Throws std::runtime_error / gguf::GgufError naming the file or tensor.
QuantizeReport quantize_model(const std::filesystem::path& in, const std::filesystem::path& out,
                              GgmlType type, const QuantizeProgress& progress = {});

}  // namespace kvforge
