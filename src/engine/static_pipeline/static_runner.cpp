#include "engine/static_pipeline/static_runner.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace kvforge {

std::span<const int32_t> fit_prompt(std::span<const int32_t> prompt, const StaticConfig& config,
                                    OverflowPolicy policy) {
  const size_t max = size_t(config.max_prompt_len);
  if (prompt.size() <= max) return prompt;
  if (policy == OverflowPolicy::TruncateLeft) return prompt.subspan(prompt.size() - max);
  throw std::length_error("prompt of " + std::to_string(prompt.size()) +
                          " tokens exceeds the static pipeline's --max-prompt-len " +
                          std::to_string(max) + " (use --overflow truncate-left to keep the last " +
                          std::to_string(max) + " tokens, or compile with a larger limit)");
}

StaticRunner::StaticRunner(const Model& model, ThreadPool& pool, PlanSet plans, Communicator* comm)
    : model_(model),
      pool_(pool),
      comm_(comm ? *comm : one_process_communicator()),
      plans_(std::move(plans)),
      cache_(model.rank_config(), plans_.config.capacity(), plans_.config.slots,
             plans_.config.kv_format) {
  if (pool.size() != plans_.n_threads)
    throw std::invalid_argument("static runner: plans compiled for " +
                                std::to_string(plans_.n_threads) + " threads, the pool has " +
                                std::to_string(pool.size()));
  check_communicator(model, comm_, "static runner");
  prefill_exec_ = std::make_unique<PlanExecutor>(model, comm_, plans_.prefill, plans_.n_threads);
  for (const Plan& p : plans_.generate)
    generate_exec_.push_back(std::make_unique<PlanExecutor>(model, comm_, p, plans_.n_threads));
  const size_t arena_bytes = size_t(plans_.largest_arena_bytes());
  arena_storage_ = std::make_unique<uint8_t[]>(arena_bytes + 64);
  arena_ =
      arena_storage_.get() + (64 - reinterpret_cast<uintptr_t>(arena_storage_.get()) % 64) % 64;
  matmul_scratch_.reserve(size_t(plans_.largest_matmul_scratch_bytes()));
  const size_t rows = size_t(std::max(plans_.config.prefill_chunk, plans_.config.slots));
  reserve_column_parts(model, rows);
  row_tokens_.assign(rows, 0);
  row_positions_.assign(rows, 0);
  row_slots_.assign(rows, 0);
  row_valid_.assign(rows, 0);
  logit_rows_.assign(rows, 0);
  lengths_.assign(size_t(plans_.config.slots), 0);
  prefill_logits_.assign(size_t(model.config().n_vocab), 0.0f);
  steps_per_variant_.assign(plans_.generate.size(), 0);
  decode_one_tokens_.assign(size_t(plans_.config.slots), kIdleSlot);
}

// The column-part products of attn_output and ffn_down (matmul_column_parts)
// need buffers of their own: sized here so that no step allocates.
void StaticRunner::reserve_column_parts(const Model& model, size_t rows) {
  const TensorSplit& s = model.split();
  const ModelConfig& c = model.config();
  const size_t parts = size_t(std::max(s.attn_parts, s.ffn_parts));
  const size_t part_cols = size_t(std::max(c.max_q_dim() / s.attn_parts, c.n_ff / s.ffn_parts));
  matmul_scratch_.part_y.resize(rows * size_t(c.n_embd) * parts);
  matmul_scratch_.part_x.resize(rows * part_cols);
}

void StaticRunner::check_slot(int32_t slot) const {
  if (slot < 0 || slot >= slots())
    throw std::out_of_range("static runner: slot " + std::to_string(slot) + " outside [0, " +
                            std::to_string(slots()) + ")");
}

std::span<const float> StaticRunner::prefill(int32_t slot, std::span<const int32_t> tokens,
                                             int32_t from) {
  check_slot(slot);
  if (tokens.empty() || from < 0 || size_t(from) >= tokens.size())
    throw std::invalid_argument("static prefill: " + std::to_string(tokens.size()) +
                                " tokens from " + std::to_string(from) + ": none to compute");
  if (tokens.size() > size_t(config().max_prompt_len))
    throw std::length_error("static prefill: prompt of " + std::to_string(tokens.size()) +
                            " tokens exceeds max_prompt_len " +
                            std::to_string(config().max_prompt_len));
  if (lengths_[size_t(slot)] != from)
    throw std::logic_error("static prefill: slot " + std::to_string(slot) + " holds " +
                           std::to_string(lengths_[size_t(slot)]) + " tokens, expected " +
                           std::to_string(from));
  const size_t chunk = size_t(config().prefill_chunk);
  const int32_t n_vocab = model_.config().n_vocab;
  for (size_t done = size_t(from); done < tokens.size(); done += chunk) {
    const size_t n = std::min(chunk, tokens.size() - done);
    for (size_t i = 0; i < chunk; ++i) {
      const bool real = i < n;
      row_tokens_[i] = real ? tokens[done + i] : 0;
      row_positions_[i] = real ? int32_t(done + i) : 0;
      row_slots_[i] = slot;
      row_valid_[i] = real ? 1 : 0;
    }
    logit_rows_[0] = int32_t(n - 1);
    const PlanInputs in{{row_tokens_.data(), chunk},
                        {row_positions_.data(), chunk},
                        {row_slots_.data(), chunk},
                        {row_valid_.data(), chunk},
                        {logit_rows_.data(), 1}};
    std::span<const float> logits;
    try {
      logits = prefill_exec_->run(in, cache_, arena_, matmul_scratch_, pool_);
    } catch (...) {
      cache_.truncate(slot, 0);  // a half-filled prompt is no sequence
      lengths_[size_t(slot)] = 0;
      throw;
    }
    lengths_[size_t(slot)] = int32_t(done + n);
    if (done + n == tokens.size()) std::copy(logits.begin(), logits.end(), prefill_logits_.begin());
  }
  return {prefill_logits_.data(), size_t(n_vocab)};
}

void StaticRunner::import_run(int32_t slot, int32_t n, std::span<const uint8_t> in) {
  check_slot(slot);
  cache_.import_run(slot, lengths_[size_t(slot)], n, in);
  lengths_[size_t(slot)] += n;
}

size_t StaticRunner::variant_for(int32_t kv_needed) const {
  const std::vector<int32_t>& v = config().generate_variants;
  const auto it = std::lower_bound(v.begin(), v.end(), kv_needed);
  if (it == v.end())
    throw std::length_error("static KV cache full: " + std::to_string(kv_needed) +
                            " positions needed, capacity " + std::to_string(capacity()));
  return size_t(it - v.begin());
}

std::span<const float> StaticRunner::decode(std::span<const int32_t> tokens) {
  if (tokens.size() != size_t(slots()))
    throw std::invalid_argument("static decode: " + std::to_string(tokens.size()) + " tokens for " +
                                std::to_string(slots()) + " slots");
  int32_t longest = 0;
  for (size_t s = 0; s < tokens.size(); ++s)
    if (tokens[s] != kIdleSlot) longest = std::max(longest, lengths_[s]);
  if (longest >= capacity())
    throw std::length_error("static KV cache full: a slot holds " + std::to_string(longest) +
                            " of " + std::to_string(capacity()) + " positions");
  return run_generate(tokens, variant_for(longest + 1));
}

std::span<const float> StaticRunner::decode_with_variant(std::span<const int32_t> tokens,
                                                         size_t variant_index) {
  if (variant_index >= generate_exec_.size())
    throw std::out_of_range("static decode: variant index " + std::to_string(variant_index));
  return run_generate(tokens, variant_index);
}

std::span<const float> StaticRunner::run_generate(std::span<const int32_t> tokens,
                                                  size_t variant_index) {
  if (tokens.size() != size_t(slots()))
    throw std::invalid_argument("static decode: " + std::to_string(tokens.size()) + " tokens for " +
                                std::to_string(slots()) + " slots");
  const int32_t kv_len = config().generate_variants[variant_index];
  bool any = false;
  for (size_t s = 0; s < tokens.size(); ++s) {
    const bool active = tokens[s] != kIdleSlot;
    if (active && lengths_[s] == 0)
      throw std::logic_error("static decode: slot " + std::to_string(s) + " has no prompt");
    if (active && lengths_[s] >= kv_len)
      throw std::out_of_range("static decode: slot " + std::to_string(s) + " holds " +
                              std::to_string(lengths_[s]) + " positions, variant " +
                              std::to_string(kv_len) + " cannot take one more");
    any |= active;
    row_tokens_[s] = active ? tokens[s] : 0;
    row_positions_[s] = active ? lengths_[s] : 0;
    row_slots_[s] = int32_t(s);
    row_valid_[s] = active ? 1 : 0;
    logit_rows_[s] = int32_t(s);
  }
  if (!any) throw std::invalid_argument("static decode: every slot is idle");
  const size_t n = tokens.size();
  const PlanInputs in{{row_tokens_.data(), n},
                      {row_positions_.data(), n},
                      {row_slots_.data(), n},
                      {row_valid_.data(), n},
                      {logit_rows_.data(), n}};
  const std::span<const float> logits =
      generate_exec_[variant_index]->run(in, cache_, arena_, matmul_scratch_, pool_);
  for (size_t s = 0; s < n; ++s)
    if (row_valid_[s]) ++lengths_[s];
  ++steps_per_variant_[variant_index];
  last_variant_ = kv_len;
  return logits;
}

std::span<const float> StaticRunner::decode_one(int32_t slot, int32_t token) {
  check_slot(slot);
  if (token == kIdleSlot) throw std::invalid_argument("static decode: token id -1");
  std::vector<int32_t>& step = decode_one_tokens_;
  std::fill(step.begin(), step.end(), kIdleSlot);
  step[size_t(slot)] = token;
  const size_t n_vocab = size_t(model_.config().n_vocab);
  return decode(step).subspan(size_t(slot) * n_vocab, n_vocab);
}

bool StaticRunner::window_intact(int32_t slot, int32_t length) const {
  const int32_t window = model_.config().sliding_window;
  return length == 0 || window == 0 ||
         cache_.holds(slot, attended_keys(window, length).begin, length);
}

void StaticRunner::truncate(int32_t slot, int32_t length) {
  check_slot(slot);
  if (length < 0 || length > lengths_[size_t(slot)])
    throw std::out_of_range("static runner: truncate slot " + std::to_string(slot) + " to " +
                            std::to_string(length) + ", it holds " +
                            std::to_string(lengths_[size_t(slot)]));
  if (!window_intact(slot, length))
    throw std::logic_error("static runner: slot " + std::to_string(slot) + " truncated to " +
                           std::to_string(length) +
                           " positions would need positions its sliding-window ring of " +
                           std::to_string(cache_.ring_positions()) + " has overwritten");
  if (!state_intact(slot, length))
    throw std::logic_error("static runner: slot " + std::to_string(slot) + " truncated to " +
                           std::to_string(length) + " of its " +
                           std::to_string(lengths_[size_t(slot)]) +
                           " positions: its linear-attention layers' recurrent states have "
                           "folded in every position and cannot be cut back");
  cache_.truncate(slot, length);
  lengths_[size_t(slot)] = length;
}

bool StaticRunner::state_intact(int32_t slot, int32_t length) const {
  return !model_.config().hybrid() || length == 0 || length == lengths_.at(size_t(slot));
}

}  // namespace kvforge
