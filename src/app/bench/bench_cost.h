// What one token costs a model in `kvforge bench`: the bytes a decode step
// reads (its roofline) and the FLOPs a prefill performs.
#pragma once

#include "core/formats/kv_format.h"
#include "model/model.h"

namespace kvforge::cli {

// What one token costs the model: bytes it must read, FLOPs it performs.
struct CostModel {
  // every matrix once (a mixture of experts: the experts a token runs) + one
  // embedding row + norms
  double weight_bytes_per_token = 0;
  double matmul_flops_per_token = 0;   // 2 * layer matrix params (no output projection)
  double output_flops = 0;             // 2 * output params (one row of logits)
  double kv_bytes_per_position = 0;    // K + V records of one position, all layers
  double attention_flops_per_key = 0;  // QK and AV for one (query token, key), all layers

  CostModel(const Model& model, KvFormat kv);

  // Bytes read by a decode step with `n_past` tokens already cached (it attends to n_past + 1).
  double decode_bytes(int n_past) const {
    return weight_bytes_per_token + kv_bytes_per_position * (n_past + 1);
  }
  // FLOPs of one causal prefill of n tokens from an empty cache, logits for the last one.
  double prefill_flops(int n) const {
    return matmul_flops_per_token * n + output_flops +
           attention_flops_per_key * double(n) * (n + 1) / 2.0;
  }
};

}  // namespace kvforge::cli
