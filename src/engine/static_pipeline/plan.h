// A fixed-shape execution plan: what an accelerator compiler would emit for
// one program of the static pipeline.
//
// A plan fixes, before anything runs:
//   - the input shape: `rows` token rows (prefill: prefill_chunk, padded;
//     generate: one row per slot) and the KV length attention spans (prefill:
//     the capacity; generate: the variant's length);
//   - the op sequence, fully unrolled over layers: the forward pass's layer
//     walk recorded one step per op;
//   - every intermediate buffer's size and byte offset in one arena (memory
//     planning: buffers whose lifetimes do not overlap share bytes);
//   - the thread partitioning of attention (items = rows × query heads).
//
// Inputs and outputs are explicit ("stateful to stateless"): per step the
// caller supplies token ids, positions, the KV slot and a valid flag of every
// row, and the rows whose logits it wants; the plan reads and writes the KV
// cache and the slot masks (StaticKvCache) and leaves logits in the arena.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/static_pipeline/static_config.h"

namespace kvforge {

enum class PlanKind : uint8_t { Prefill = 0, Generate = 1 };

// One op per step of the forward pass's layer walk (model/layer_walk.h),
// run through the shared block steps (model/block_steps.h) and the FFN the
// forward pass runs (dense or model/moe_ffn.h); only Masks,
// Attend and WindowAttend are the static pipeline's own (its cache, mask
// and rings). An op's operands are buffer ids in the order of its roles
// (op_roles), each role fixing the buffer's size:
enum class OpCode : uint8_t {
  // attn_mask: mask[slot][pos] = 1 for every valid row, then attn_mask[row][j] =
  // mask[slot][j] && j <= pos (0 for padding rows); with sliding-window layers
  // also the plan's row runs (each valid row's run's first row, -1 for padding)
  Masks = 0,
  // x, cos_sin, cos_sin of the second RoPE table (kNoBuffer with one), the
  // per-layer inputs (gemma4 with per-layer embeddings; kNoBuffer otherwise)
  Embed = 1,
  Norm = 2,         // x → xn by the layer's `norm`
  AttentionIn = 3,  // xn, cos_sin of the layer's table → q, k, v (and the output gate)
  // q, k, v, attn_mask → attn: K/V written, then masked attention (with sinks:
  // attend_queries over exactly [0, pos], no mask). A layer reading another
  // layer's K/V (gemma4's shared tail, ModelConfig::kv_source) writes none
  // (k, v kNoBuffer) and attends over its source layer's.
  Attend = 4,
  WindowAttend = 5,  // q, k, v, staged → attn: see below
  AttentionOut = 6,  // attn (gated by the output gate) → proj
  // proj, x → x += post(proj) and xn = next(x) (`norm` the post norm, `next_norm` of
  // `next_layer` the next; kNoNorm and xn kNoBuffer after the last layer)
  ResidualNorm = 7,
  Ffn = 8,     // xn → gate, up (its scratch) → proj
  Logits = 9,  // x → xn of the logit rows (final norm) → logits; rows = n_logit_rows
  // xn → proj: the mixture-of-experts FFN (model/moe_ffn.h), its routing
  // scratch the executor's own (sized for the plan's rows once); with a dense
  // FFN beside the experts (gemma4, model/gemma4_moe.h) also x, which the
  // experts' branch reads, and the dense FFN's gate and up (kNoBuffer without)
  MoeFfn = 10,
  // xn → proj: a hybrid model's Gated DeltaNet layer over its valid rows, each
  // slot's recurrent state in the cache (static_linear_attention.h)
  LinearAttention = 11,
  // x, proj (its scratch), per-layer inputs, gate → x: gemma4's layer tail, the
  // per-layer embedding's projection added and the output scale
  // (model/per_layer_embedding.h); inputs and gate kNoBuffer without them
  LayerTail = 12,
};
inline constexpr int kOpCodeCount = 13;
// WindowAttend: a sliding-window layer's cache is a ring of `window`
// positions that a prefill chunk's writes would overwrite before its earlier
// rows have read them, so its rows' K/V are staged as the cache's head
// records (K [rows][n_kv_head] records, then V's), each row attends
// (pos - window, pos]: the cache's positions before its run, then the run's
// staged records (the runs are the plan's row_runs_buffer); only then are
// K/V written. A shared layer reading a window layer's K/V (gemma4) attends
// over its source's ring and staged records (k, v, staged: the source's
// op's), so the source's K/V reach its ring only in the last layer reading
// them: the op of that layer writes them.

// What a buffer holds, which fixes its size for a plan of `rows` rows:
enum class BufferRole : uint8_t {
  X,   // [rows][n_embd] f32 the residual stream
  Xn,  // [rows][n_embd] f32 normalised
  // Per-head sizes are the largest of any layer (ModelConfig::max_q_dim and
  // co.: gemma4's windowed layers have their own head size); a layer uses
  // the front of the buffer.
  CosSin,    // [rows][max_rope_dim] f32 RoPE angles of one table
  Q,         // [rows][q_dim] f32 ([rows][2 q_dim] with attn_gate: attention_input's query | gate)
  K,         // [rows][kv_dim] f32
  V,         // [rows][kv_dim] f32
  AttnMask,  // [rows][kv_len] bytes
  Staged,    // [2][rows][max_n_kv_head] KV head records of the largest format (max_kv_record_bytes)
  Attn,      // [rows][q_dim] f32
  Proj,      // [rows][n_embd] f32 a block's output
  Gate,      // [rows][n_ff] f32
  Up,        // [rows][n_ff] f32
  OutXn,     // [n_logit_rows][n_embd] f32 the logit rows, final-normed
  Logits,    // [n_logit_rows][n_vocab] f32, the plan's output
  AttnGate,  // [rows][q_dim] f32 the output gate of attn_gate models (qwen35)
  PerLayerInputs,  // [rows][n_layer][n_embd_per_layer] f32 (gemma4's per-layer embeddings)
  PerLayerGate,    // [rows][n_embd_per_layer] f32 the per-layer block's gate
};
inline constexpr int kMaxOperands = 6;
inline constexpr uint16_t kNoBuffer = 0xFFFF;
inline constexpr uint8_t kNoNorm = 0xFF;

// An op's operand roles, in order; an optional one may be kNoBuffer (Embed's
// second table, ResidualNorm's xn, the output gate without attn_gate).
struct OperandRole {
  BufferRole role;
  bool optional = false;
};
std::span<const OperandRole> op_roles(OpCode code);
const char* op_name(OpCode code);
const char* role_name(BufferRole role);

struct PlanOp {
  OpCode code = OpCode::Masks;
  uint8_t norm = kNoNorm;       // Norm, ResidualNorm: a model/layer_walk.h LayerNorm
  uint8_t next_norm = kNoNorm;  // ResidualNorm: the norm after the residual
  int16_t layer = -1;           // -1 for ops outside the layers
  int16_t next_layer = -1;      // ResidualNorm: next_norm's layer
  int32_t rows = 0;             // the plan's rows; n_logit_rows for Logits
  std::array<uint16_t, kMaxOperands> buffers = {kNoBuffer, kNoBuffer, kNoBuffer,
                                                kNoBuffer, kNoBuffer, kNoBuffer};  // op_roles order
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
  uint64_t matmul_scratch_bytes = 0;  // the largest activation conversion of any op
  std::vector<PlanBuffer> buffers;
  std::vector<PlanOp> ops;
  // [n_threads + 1] item boundaries of attention: thread i handles items
  // [attention_split[i], attention_split[i+1]) of rows × n_head.
  std::vector<int32_t> attention_split;
  uint16_t logits_buffer = kNoBuffer;             // [n_logit_rows][n_vocab] f32, the plan's output
  uint16_t attention_scratch_buffer = kNoBuffer;  // [n_threads][attention_scratch_floats] f32
                                                  // (attention_queries_scratch_floats with
                                                  // sliding-window layers)
  uint16_t row_runs_buffer = kNoBuffer;           // [rows] i32 (Masks); kNoBuffer without windows

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
