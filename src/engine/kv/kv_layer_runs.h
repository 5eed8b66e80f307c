// Where each layer's K/V records sit when a store keeps layers one after the
// other, each layer a run of [its KV heads][`positions`] head records of its
// own head size (ModelConfig::layer_n_kv_head, layer_head_dim: Gemma 4's
// windowed layers have their own).
// The paged pool lays out each block's group this way, the contiguous cache
// its whole buffer.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "core/formats/kv_format.h"
#include "model/model_config.h"

namespace kvforge {

struct KvLayerRun {
  int n_kv_head = 0;
  int head_dim = 0;
  size_t k_head_bytes = 0, v_head_bytes = 0;  // one head record
  size_t k_offset = 0, v_offset = 0;          // the layer's run in the K / V bytes
};

// Sets runs[l] for each l of `layers`, in order from offset 0; k_end / v_end
// get the bytes they take.
inline void lay_out_runs(const ModelConfig& config, std::span<const int> layers, size_t positions,
                         KvFormat format, std::vector<KvLayerRun>& runs, size_t& k_end,
                         size_t& v_end) {
  k_end = v_end = 0;
  for (int l : layers) {
    KvLayerRun& r = runs[size_t(l)];
    r.n_kv_head = config.layer_n_kv_head(l);
    r.head_dim = config.layer_head_dim(l);
    r.k_head_bytes = kv_head_bytes(format.k, r.head_dim);
    r.v_head_bytes = kv_head_bytes(format.v, r.head_dim);
    r.k_offset = k_end;
    r.v_offset = v_end;
    const size_t records = size_t(r.n_kv_head) * positions;
    k_end += records * r.k_head_bytes;
    v_end += records * r.v_head_bytes;
  }
}

}  // namespace kvforge
