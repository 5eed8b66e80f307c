// kvforge kv-plan: weight and KV memory of a model at a context length and
// batch size, whether it fits a budget, and how far a budget stretches.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "app/cli/cli_common.h"
#include "app/cli/commands.h"
#include "app/cli/subcommand.h"
#include "engine/kv/kv_memory_plan.h"
#include "engine/kv/kv_pool_split.h"
#include "engine/kv/tp_memory_plan.h"
#include "model/random_model.h"

namespace kvforge::cli {
namespace {

struct KvPlanFlags : ModelFlags {
  std::string preset;
  std::string weight_type = "f16";
  KvTypeFlags kv;
  int64_t ctx = 2048;
  int64_t batch = 1;
  int64_t block_size = 16;
  double budget_gib = 0;
  int tp = 1;
  int64_t state_snapshots = 0;
};

// What a card holds when --tp is given without --budget-gib.
constexpr double kDefaultCardGib = 32;

std::string gib(uint64_t bytes) { return human_bytes(double(bytes)); }

void print_format_table(const ModelShape& s, uint64_t weights, const KvPlanFlags& f) {
  ModelShape mha = s;
  mha.n_kv_head = s.n_head;
  const uint64_t f16_total =
      plan_kv_memory(s, {KvDtype::F16, KvDtype::F16}, 0, f.ctx, f.batch, f.block_size).kv_total;
  std::printf("\nper KV format (%lld tokens x %lld sequences):\n", static_cast<long long>(f.ctx),
              static_cast<long long>(f.batch));
  std::printf("  %-6s %12s %12s %12s %8s %16s", "format", "bytes/token", "KV/sequence", "KV total",
              "vs f16", "if MHA (no GQA)");
  if (f.budget_gib > 0) std::printf(" %10s %10s", "max ctx", "max seqs");
  std::printf("\n");
  const uint64_t budget = uint64_t(f.budget_gib * kGiB);
  for (KvDtype t : kAllKvDtypes) {
    const KvFormat fmt{t, t};
    if (!kv_supports_head_dim(t, int(s.head_dim))) continue;
    const KvMemoryPlan p = plan_kv_memory(s, fmt, weights, f.ctx, f.batch, f.block_size);
    const uint64_t mha_total = plan_kv_memory(mha, fmt, 0, f.ctx, f.batch, f.block_size).kv_total;
    std::printf("  %-6s %12llu %12s %12s %7.3fx %16s", kv_dtype_name(t),
                static_cast<unsigned long long>(p.kv_per_token), gib(p.kv_per_sequence).c_str(),
                gib(p.kv_total).c_str(), double(p.kv_total) / double(f16_total),
                gib(mha_total).c_str());
    if (budget > 0)
      std::printf(
          " %10lld %10lld",
          static_cast<long long>(max_context_for(s, fmt, weights, f.batch, budget, f.block_size)),
          static_cast<long long>(max_sequences_for(s, fmt, weights, f.ctx, budget, f.block_size)));
    std::printf("\n");
  }
}

// The random-weight models of `kvforge make-model`, planned with the byte vocabulary (259
// tokens); the planner itself knows only the published shapes (ModelShape::preset).
const char* const kRandomModelPresets[] = {"small", "tiny"};

std::optional<ModelShape> random_model_shape(const std::string& name) {
  const auto spec = RandomModelSpec::preset(name);
  if (!spec) return std::nullopt;
  ModelShape s;
  s.name = name;
  s.n_vocab = kByteVocabTokens;
  s.n_embd = spec->n_embd;
  s.n_layer = spec->n_layer;
  s.n_head = spec->n_head;
  s.n_kv_head = spec->n_kv_head;
  s.head_dim = spec->head_dim > 0 ? spec->head_dim : spec->n_embd / spec->n_head;
  s.n_ff = spec->n_ff;
  s.n_ctx_train = spec->n_ctx;
  s.tied_output = spec->tied_output;
  return s;
}

// Every name --preset accepts, comma-separated.
std::string preset_list() {
  std::string names;
  for (const auto& n : ModelShape::preset_names()) names += (names.empty() ? "" : ", ") + n;
  for (const char* n : kRandomModelPresets) names += std::string(", ") + n;
  return names;
}

// The model's shape and weight bytes, from the preset or the file.
struct PlannedModel {
  ModelShape shape;
  uint64_t weight_bytes = 0;
  std::string weights_what;  // what the weight bytes count
  WeightSplitBytes split;    // the same bytes by how tensor parallelism divides them
};

PlannedModel planned_model(const KvPlanFlags& f) {
  PlannedModel m;
  if (f.preset.empty()) {
    const GgufWeights w = read_gguf_weights(f.model);
    m.shape = w.shape;
    m.weight_bytes = w.bytes;
    m.weights_what = "every tensor of " + f.model;
    m.split = weight_split_bytes(gguf::GgufFile::open(f.model));
    return m;
  }
  auto p = ModelShape::preset(f.preset);
  if (!p) p = random_model_shape(f.preset);
  if (!p)
    throw std::invalid_argument("kv-plan: unknown preset '" + f.preset +
                                "' (known: " + preset_list() + ")");
  m.shape = *p;
  const auto type = parse_type_name(f.weight_type);
  if (!type) throw std::invalid_argument("kv-plan: unknown --weight-type '" + f.weight_type + "'");
  m.weight_bytes = weight_bytes(m.shape, *type);
  m.split = weight_split_bytes(m.shape, *type);
  m.weights_what =
      f.weight_type + " matrices, f32 norms, " + std::to_string(m.shape.n_params()) + " parameters";
  if (m.shape.n_expert > 0)
    m.weights_what += " (" + std::to_string(m.shape.n_active_params()) +
                      " active per token: " + std::to_string(m.shape.n_expert_used) + " of " +
                      std::to_string(m.shape.n_expert) + " experts)";
  return m;
}

void print_window_lines(const ModelShape& s, const KvMemoryPlan& p, const KvPlanFlags& f) {
  std::printf(
      "sliding window %lld of %lld layers attend the last %lld positions: paged in "
      "blocks of %lld, they keep min(%lld, (ceil(W/B) + 1) * B) = %lld\n",
      static_cast<long long>(s.n_swa_layers), static_cast<long long>(s.n_layer),
      static_cast<long long>(s.sliding_window), static_cast<long long>(f.block_size),
      static_cast<long long>(f.ctx),
      static_cast<long long>(std::min(f.ctx, kv_window_positions(s, f.block_size))));
  std::printf(
      "  KV/sequence  %s window-aware vs %s with every position of every layer "
      "(%.1f%%, %llu vs %llu bytes)\n",
      gib(p.kv_per_sequence).c_str(), gib(p.kv_per_sequence_full).c_str(),
      100.0 * double(p.kv_per_sequence) / double(p.kv_per_sequence_full),
      static_cast<unsigned long long>(p.kv_per_sequence),
      static_cast<unsigned long long>(p.kv_per_sequence_full));
}

// Gemma 4: the K/V its shared layers do not keep.
void print_shared_kv_line(const ModelShape& s, const KvMemoryPlan& p, KvFormat fmt) {
  const uint64_t unshared = kv_bytes_per_token(without_kv_sharing(s), fmt);
  std::printf(
      "shared KV      %lld of %lld layers read an earlier layer's K/V and keep none: %llu "
      "bytes/token vs %llu without sharing (%.1f%%)\n",
      static_cast<long long>(s.n_shared_kv_layers), static_cast<long long>(s.n_layer),
      static_cast<unsigned long long>(p.kv_per_token), static_cast<unsigned long long>(unshared),
      100.0 * double(p.kv_per_token) / double(unshared));
}

void print_budget_lines(const ModelShape& s, const KvMemoryPlan& p, const KvPlanFlags& f,
                        KvFormat fmt, uint64_t weights) {
  const uint64_t budget = uint64_t(f.budget_gib * kGiB);
  std::printf("budget %.2f GiB: %s (%s %s)\n", f.budget_gib,
              p.total <= budget ? "fits" : "does NOT fit",
              gib(p.total <= budget ? budget - p.total : p.total - budget).c_str(),
              p.total <= budget ? "to spare" : "short");
  std::printf(
      "max context for %lld sequences: %lld tokens\n", static_cast<long long>(f.batch),
      static_cast<long long>(max_context_for(s, fmt, weights, f.batch, budget, f.block_size)));
  std::printf(
      "max sequences of %lld tokens:   %lld\n", static_cast<long long>(f.ctx),
      static_cast<long long>(max_sequences_for(s, fmt, weights, f.ctx, budget, f.block_size)));
}

// A hybrid model: how the engine's pool splits the KV part of the budget
// (--kv-memory of budget - weights) into snapshots, state slots and K/V blocks.
void print_pool_split(const ModelShape& s, const KvPlanFlags& f, KvFormat fmt, uint64_t weights) {
  const uint64_t budget = uint64_t(f.budget_gib * kGiB);
  if (budget <= weights) return;
  const uint64_t kv_memory = budget - weights;
  if (snapshot_bytes(s, f.state_snapshots) >= kv_memory) {
    std::printf("pool split     --kv-memory %s does not hold the %lld snapshots\n",
                gib(kv_memory).c_str(), static_cast<long long>(f.state_snapshots));
    return;
  }
  const KvPoolSplit p =
      split_kv_pool(s, fmt, kv_budget_after_snapshots(s, kv_memory, f.state_snapshots), f.ctx,
                    f.block_size, f.batch);
  std::printf(
      "pool split     --kv-memory %s at -c %lld, --parallel %lld: %lld snapshots (%s), "
      "%lld state slots (%s) + %lld blocks of %lld tokens (%s); at most %lld sequences run at "
      "once\n",
      gib(kv_memory).c_str(), static_cast<long long>(f.ctx), static_cast<long long>(f.batch),
      static_cast<long long>(f.state_snapshots), gib(snapshot_bytes(s, f.state_snapshots)).c_str(),
      static_cast<long long>(p.state_slots), gib(p.state_bytes).c_str(),
      static_cast<long long>(p.blocks), static_cast<long long>(f.block_size),
      gib(p.block_bytes).c_str(), static_cast<long long>(p.state_slots));
}

// --tp N: one rank's weights and KV, and whether they fit a card of the budget.
void print_tp_lines(const PlannedModel& m, const KvPlanFlags& f, KvFormat fmt) {
  const TpRankPlan r = plan_tp_rank(m.shape, m.split, f.tp);
  const KvMemoryPlan p =
      plan_kv_memory(r.rank_shape, fmt, r.weight_bytes, f.ctx, f.batch, f.block_size);
  const std::string windowed =
      m.shape.n_kv_head_swa > 0
          ? " (windowed layers: " + describe_kv_sharding(m.shape.n_kv_head_swa, f.tp) + ")"
          : "";
  std::printf("\ntensor parallel over %d ranks: %s%s\n", f.tp,
              describe_kv_sharding(m.shape.n_kv_head, f.tp).c_str(), windowed.c_str());
  std::printf(
      "per rank       weights %s (embedding and norms whole, the rest split), KV %s "
      "(%llu bytes/token), total %s\n",
      gib(p.weight_bytes).c_str(), gib(p.kv_total).c_str(),
      static_cast<unsigned long long>(p.kv_per_token), gib(p.total).c_str());
  const double card = f.budget_gib > 0 ? f.budget_gib : kDefaultCardGib;
  const uint64_t budget = uint64_t(card * kGiB);
  std::printf("a %.0f GiB card per rank: %s (%s %s); at most %lld sequences of %lld tokens\n", card,
              p.total <= budget ? "fits" : "does NOT fit",
              gib(p.total <= budget ? budget - p.total : p.total - budget).c_str(),
              p.total <= budget ? "to spare" : "short",
              static_cast<long long>(max_sequences_for(r.rank_shape, fmt, r.weight_bytes, f.ctx,
                                                       budget, f.block_size)),
              static_cast<long long>(f.ctx));
}

void kv_plan(const KvPlanFlags& f) {
  if (f.model.empty() == f.preset.empty())
    throw std::invalid_argument("kv-plan: give exactly one of -m MODEL or --preset NAME");
  if (f.ctx <= 0 || f.batch <= 0) throw std::invalid_argument("kv-plan: -c and -b must be ≥ 1");
  if (f.block_size <= 0)
    throw std::invalid_argument("kv-plan: --block-size must be ≥ 1, got " +
                                std::to_string(f.block_size));
  const PlannedModel m = planned_model(f);
  const ModelShape& s = m.shape;
  const KvFormat fmt = f.kv.format();
  const KvMemoryPlan p = plan_kv_memory(s, fmt, m.weight_bytes, f.ctx, f.batch, f.block_size);
  std::printf("kv-plan: %s: %lld layers, %lld heads, %lld KV heads of %lld (GQA group %lld)%s\n",
              s.name.c_str(), static_cast<long long>(s.n_layer), static_cast<long long>(s.n_head),
              static_cast<long long>(s.n_kv_head), static_cast<long long>(s.head_dim),
              static_cast<long long>(s.n_head / s.n_kv_head),
              s.n_kv_head_swa > 0
                  ? (", windowed layers " + std::to_string(s.n_kv_head_swa) + " of " +
                     std::to_string(s.head_dim_swa > 0 ? s.head_dim_swa : s.head_dim))
                        .c_str()
                  : "");
  std::printf("weights        %s  (%s)\n", gib(p.weight_bytes).c_str(), m.weights_what.c_str());
  std::printf("KV %-10s  %llu bytes/token, %s/sequence of %lld tokens, %s for %lld sequences\n",
              f.kv.describe().c_str(), static_cast<unsigned long long>(p.kv_per_token),
              gib(p.kv_per_sequence).c_str(), static_cast<long long>(f.ctx),
              gib(p.kv_total).c_str(), static_cast<long long>(f.batch));
  if (s.n_swa_layers > 0) print_window_lines(s, p, f);
  if (s.n_shared_kv_layers > 0) print_shared_kv_line(s, p, fmt);
  if (s.n_recurrent_layers > 0)
    std::printf(
        "state          %llu bytes/sequence in %lld recurrent layers (f32, any length), "
        "in KV/sequence above; K/V in %lld layers\n"
        "snapshots      %lld for prefix reuse (--state-snapshots), %s, out of --kv-memory "
        "before the state slots and blocks; not in the total below\n",
        static_cast<unsigned long long>(s.state_bytes_per_sequence),
        static_cast<long long>(s.n_recurrent_layers), static_cast<long long>(s.n_kv_layers()),
        static_cast<long long>(f.state_snapshots),
        gib(snapshot_bytes(s, f.state_snapshots)).c_str());
  std::printf("total          %s  (weights + KV; activations and scratch not counted)\n",
              gib(p.total).c_str());
  if (f.budget_gib > 0) print_budget_lines(s, p, f, fmt, m.weight_bytes);
  if (f.budget_gib > 0 && s.n_recurrent_layers > 0) print_pool_split(s, f, fmt, m.weight_bytes);
  if (f.tp > 1) print_tp_lines(m, f, fmt);
  print_format_table(s, m.weight_bytes, f);
}

void declare_flags(CLI::App& sub, KvPlanFlags& f) {
  f.add_model_flag(sub, "GGUF model (its metadata and tensor sizes)");
  sub.add_option("--preset", f.preset, "a named shape: " + preset_list());
  sub.add_option("--weight-type", f.weight_type, "matrix type for a preset (f32, f16, q8_0, ...)")
      ->capture_default_str();
  f.kv.add_to(sub);
  sub.add_option("-c,--ctx-size", f.ctx, "tokens per sequence")->capture_default_str();
  sub.add_option("--parallel,--batch", f.batch, "concurrent sequences (llama.cpp's -np)")
      ->capture_default_str();
  sub.add_option("--block-size", f.block_size,
                 "paged KV block (tokens): a windowed layer keeps window + block positions")
      ->capture_default_str();
  sub.add_option("--budget-gib", f.budget_gib,
                 "memory budget in GiB (weights + KV); with --tp, per rank (default 32)");
  sub.add_option("--state-snapshots", f.state_snapshots,
                 "hybrid models: recurrent-state snapshots kept for prefix reuse, as the "
                 "engine's flag (out of the KV budget before the split)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_option("--tp", f.tp, "tensor-parallel ranks: also print one rank's share")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
}

}  // namespace

void declare_kv_plan_command(CLI::App& sub) {
  declare_command<KvPlanFlags>(sub, kv_plan, declare_flags);
}

}  // namespace kvforge::cli
