// A fixed-shape execution plan: what an accelerator compiler would emit for
// one program of the static pipeline.
//
// A plan fixes, before anything runs:
//   - the input shape: `rows` token rows (prefill: prefill_chunk, padded;
//     generate: one row per slot) and the KV length attention spans (prefill:
//     the capacity; generate: the variant's length);
//   - the op sequence, fully unrolled over layers;
//   - every intermediate buffer's size and byte offset in one arena (memory
//     planning: buffers whose lifetimes do not overlap share bytes);
//   - the thread partitioning of attention (items = rows × query heads).
//
// Inputs and outputs are explicit ("stateful to stateless"): per step the
// caller supplies token ids, positions, the KV slot and a valid flag of every
// row, and the rows whose logits it wants; the plan reads and writes the KV
// cache and the slot masks (StaticKvCache) and leaves logits in the arena.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/static_pipeline/static_config.h"

namespace kvforge {

enum class PlanKind : uint8_t { Prefill = 0, Generate = 1 };

enum class OpCode : uint8_t {
  UpdateMask = 0,     // state: mask[slot][pos] = 1 for every valid row
  BuildAttnMask = 1,  // dst[rows][kv_len] bytes = mask[slot][j] && j <= pos (0 for padding rows)
  // dst[rows][n_embd] = token_embd[token] * embd_scale; src0 (cos_sin) = rope angles(pos) of
  // RoPE table 0, src1 (when the model has a second table) those of table 1
  Embed = 2,
  RmsNorm = 3,  // dst[rows][n] = rms_norm(src0[rows][n]) * weight (src0 may be dst)
  MatMul = 4,   // dst[rows][w.rows] = src0[rows][w.cols] · Wᵀ
  AddBias = 5,  // dst[rows][d] += bias
  // rotate src0 (q, n_head heads) and dst (k, n_kv_head heads) by src1 (the cos_sin of the
  // layer's RoPE table: the model's rope_index(layer))
  Rope = 6,
  KvWrite = 7,      // cache[layer][slot][pos] ← src0 (k), src1 (v) for every valid row
  Attention = 8,    // dst (attn) ← src0 (q) over cache[layer][slot][0, kv_len) masked by src1
  AddInto = 9,      // dst += src0 (residual)
  SwiGlu = 10,      // dst = silu(dst) * src0
  GatherRows = 11,  // dst[n_logit_rows][n_embd] = src0[logit_rows[i]]
  // What the other architectures add to the llama block:
  HeadNorm =
      12,      // dst[rows][heads][head_dim]: each head rms-normed by weight [head_dim] (Q/K norms)
  GeGlu = 13,  // dst = gelu_tanh(dst) * src0
  SoftCap = 14,  // dst[rows][n_vocab] = c·tanh(dst / c), c = the model's final_softcap
  // A sliding-window layer, whose cache is a ring of `window` positions that
  // a prefill chunk's writes would overwrite before its earlier rows have
  // read them: its rows' K/V are staged, attended, and only then written
  // (KvWrite after WindowAttention).
  RowRuns = 15,  // dst[rows] i32 = the first row of each valid row's run (rows of one slot at
                 // consecutive positions), -1 for padding rows
  KvStage = 16,  // dst ← src0 (k), src1 (v) of every row encoded as the cache's head records:
                 // K [rows][n_kv_head] records, then V [rows][n_kv_head] records
  // dst (attn) ← src0 (q) over positions (pos - window, pos]: the cache's before the row's
  // run, then the run's staged records (src1); the runs are the plan's row_runs_buffer
  WindowAttention = 17,
};
inline constexpr int kOpCodeCount = 18;

// Which tensor of the model an op uses (with the op's layer for per-layer tensors).
enum class WeightRef : uint8_t {
  None = 0,
  AttnNorm,
  AttnQ,
  AttnK,
  AttnV,
  BiasQ,
  BiasK,
  BiasV,
  AttnOutput,
  FfnNorm,
  FfnGate,
  FfnUp,
  FfnDown,
  OutputNorm,
  Output,
  AttnQNorm,     // [head_dim] (qwen3, gemma3)
  AttnKNorm,     // [head_dim]
  AttnPostNorm,  // [n_embd] (gemma)
  FfnPostNorm,   // [n_embd]
};
inline constexpr int kWeightRefCount = 19;

inline constexpr uint16_t kNoBuffer = 0xFFFF;

struct PlanOp {
  OpCode code = OpCode::UpdateMask;
  WeightRef weight = WeightRef::None;
  int16_t layer = -1;  // -1 for ops outside the layers
  int32_t rows = 0;    // rows processed: the plan's rows, or n_logit_rows after GatherRows
  uint16_t src0 = kNoBuffer, src1 = kNoBuffer, dst = kNoBuffer;  // buffer ids
  bool operator==(const PlanOp&) const = default;
};

struct PlanBuffer {
  std::string name;     // "blk.3.q", for dumps and error messages
  uint64_t offset = 0;  // bytes from the arena start, 64-byte aligned
  uint64_t bytes = 0;
  bool operator==(const PlanBuffer&) const = default;
};

struct Plan {
  PlanKind kind = PlanKind::Prefill;
  int32_t rows = 0;          // input token rows
  int32_t kv_len = 0;        // KV positions attention spans
  int32_t n_logit_rows = 0;  // rows gathered for logits: prefill 1, generate `rows`
  uint64_t arena_bytes = 0;
  uint64_t matmul_scratch_bytes = 0;  // the largest activation conversion of any MatMul
  std::vector<PlanBuffer> buffers;
  std::vector<PlanOp> ops;
  // [n_threads + 1] item boundaries of Attention: thread i handles items
  // [attention_split[i], attention_split[i+1]) of rows × n_head.
  std::vector<int32_t> attention_split;
  uint16_t logits_buffer = kNoBuffer;             // [n_logit_rows][n_vocab] f32, the plan's output
  uint16_t attention_scratch_buffer = kNoBuffer;  // [n_threads][attention_scratch_floats] f32
                                                  // (attention_queries_scratch_floats with
                                                  // sliding-window layers)
  uint16_t row_runs_buffer = kNoBuffer;           // [rows] i32 (RowRuns); kNoBuffer without windows

  std::string label() const;  // "prefill[256 x 1152]", "generate[1 x 512]"
  bool operator==(const Plan&) const = default;
};

// Everything `kvforge compile` produces: one prefill plan and one generate
// plan per variant, for one model and one configuration.
struct PlanSet {
  StaticConfig config;
  int32_t n_threads = 1;
  uint64_t model_fingerprint = 0;
  // [n_layer] the sliding window each layer was compiled for (0 = full
  // attention): what decides a layer's ops and its KV storage (a ring of
  // min(window, capacity) positions). Checked against the model on load.
  std::vector<int32_t> layer_windows;
  Plan prefill;
  std::vector<Plan> generate;  // one per config.generate_variants, same order

  uint64_t largest_arena_bytes() const;
  uint64_t largest_matmul_scratch_bytes() const;
  bool operator==(const PlanSet&) const = default;
};

}  // namespace kvforge
