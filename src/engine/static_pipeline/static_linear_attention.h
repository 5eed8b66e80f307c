// A linear-attention (Gated DeltaNet) layer of a hybrid model as a plan op:
// the forward pass's own gated_delta_net_block (model/gated_delta_net.h) over
// the plan's valid rows, each slot's recurrent state in the static cache
// (StaticKvCache::recurrent_state). The recurrence reads each sequence's
// tokens in order and has no mask to skip a row, so the valid rows are
// gathered first (a padding row must not advance any state) and their
// outputs scattered back; padding rows' outputs are zeros. A row's result
// depends on its slot's state and its own input only: the same bits as the
// dynamic pass whatever the chunking or the other slots.
//
// Every buffer is sized for the plan's rows at construction: a run allocates
// nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/static_pipeline/static_kv_cache.h"
#include "model/block_steps.h"
#include "model/gated_delta_net.h"

namespace kvforge {

class StaticLinearAttention {
 public:
  // For plans of up to `rows` rows of a hybrid model (config: this rank's).
  StaticLinearAttention(const ModelConfig& config, int32_t rows);

  // proj [rows][n_embd] = layer `layer`'s output for the valid rows of xn
  // [rows][n_embd] at `positions` in `slots`, advancing those slots' states;
  // zeros for padding rows. Throws std::logic_error (gated_delta_net_block)
  // when a slot's rows do not continue its state.
  void run(const StepEnv& env, int layer, const float* xn, std::span<const int32_t> positions,
           std::span<const int32_t> slots, std::span<const uint8_t> valid, StaticKvCache& cache,
           float* proj);

 private:
  GatedDeltaNetScratch gdn_;
  std::vector<float> xn_;            // [rows][n_embd] the valid rows of xn, in row order
  std::vector<float> proj_;          // [rows][n_embd] their outputs
  std::vector<int32_t> rows_;        // [rows] the plan row of each gathered row
  std::vector<int32_t> positions_;   // [rows] its position
  std::vector<int32_t> seq_of_row_;  // [rows] its index into seqs_
  std::vector<int32_t> seqs_;        // [rows] the distinct slots, in order of first row
};

}  // namespace kvforge
