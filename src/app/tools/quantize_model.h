// Converting a GGUF model's weight matrices to the storage types a plan gives
// them (`kvforge quantize`; the plan comes from quantize_plan.h). Metadata is
// copied, general.file_type set to the recipe's llama_ftype id, then the
// overrides set (--override-kv, key_override.h); each planned
// matrix is dequantized to f32 row by row and re-encoded, other tensors are
// copied as they are.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "app/tools/key_override.h"
#include "app/tools/quantize_plan.h"
#include "core/dtype.h"
#include "core/gguf/gguf_file.h"

namespace kvforge {

struct QuantizeReport {
  std::map<GgmlType, int> matrices;  // matrices written, by type
  int fallback = 0;                  // matrices whose rows do not fit the wanted type's blocks
  int requantized = 0;               // matrices whose source was already quantized
  int kept = 0;                      // tensors copied unchanged (1-D: norms, biases)
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

using QuantizeProgress = std::function<void(int done, int total, const std::string& tensor)>;

// Matrices of `plan` (one entry per tensor of `src`, in order) whose source is quantized:
// they are dequantized first, which compounds two roundings (llama-quantize's
// --allow-requantize).
int count_requantized(const std::vector<PlannedTensor>& plan);

// Throws std::runtime_error naming the tensor when a planned type cannot be encoded
// (listing the types that can) or a source type cannot be decoded; the output is then
// not written.
QuantizeReport write_quantized(const gguf::GgufFile& src, const std::vector<PlannedTensor>& plan,
                               LlamaFtype ftype, const std::filesystem::path& out,
                               const std::vector<KeyOverride>& overrides = {},
                               const QuantizeProgress& progress = {});

}  // namespace kvforge
