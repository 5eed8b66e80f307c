#include "core/kernels/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/cpu_features.h"
#include "core/kernels/matmul_task.h"
#include "core/kernels/weight_repack.h"

namespace kvforge {
namespace {

enum class ActivationForm { F32, Q8, Q8K, Q8Rows, Q8Blocks };
constexpr int kActivationForms = 5;

struct KernelSet {
  ActivationForm form = ActivationForm::F32;
  RowKernel rows = nullptr;
  Q8ActivationQuantizer quantize_q8 = nullptr;
  Q8KActivationQuantizer quantize_q8_k = nullptr;
  Q8BlocksActivationQuantizer quantize_q8_blocks = nullptr;
  // A Tiles16 kernel (16-row groups): batches split as batch_split says; the
  // Q8_0 / Q4_0 ones run batches of kAmxMinTokens or more on AMX where usable.
  bool tiles16 = false;
};

#define KVFORGE_KERNEL_SET(type, form, level)                                            \
  KernelSet {                                                                            \
    ActivationForm::form, matmul_rows_##type##_##level, quantize_activations_q8_##level, \
        quantize_activations_q8_k_##level, quantize_activations_q8_blocks_##level        \
  }

#define KVFORGE_KERNEL_LEVELS(type, form)                                         \
  {                                                                               \
    KVFORGE_KERNEL_SET(type, form, scalar), KVFORGE_KERNEL_SET(type, form, avx2), \
        KVFORGE_KERNEL_SET(type, form, avx512)                                    \
  }

struct TypeKernels {
  GgmlType type;
  KernelSet by_level[3];  // indexed by SimdLevel
};

const TypeKernels kKernels[] = {
    {GgmlType::F32, KVFORGE_KERNEL_LEVELS(f32, F32)},
    {GgmlType::F16, KVFORGE_KERNEL_LEVELS(f16, F32)},
    {GgmlType::BF16, KVFORGE_KERNEL_LEVELS(bf16, F32)},
    {GgmlType::Q8_0, KVFORGE_KERNEL_LEVELS(q8_0, Q8)},
    {GgmlType::Q4_0, KVFORGE_KERNEL_LEVELS(q4_0, Q8)},
    {GgmlType::Q2_K, KVFORGE_KERNEL_LEVELS(q2_k, Q8K)},
    {GgmlType::Q3_K, KVFORGE_KERNEL_LEVELS(q3_k, Q8K)},
    {GgmlType::Q4_1, KVFORGE_KERNEL_LEVELS(q4_1, Q8Blocks)},
    {GgmlType::Q5_1, KVFORGE_KERNEL_LEVELS(q5_1, Q8Blocks)},
    {GgmlType::Q4_K, KVFORGE_KERNEL_LEVELS(q4_k, Q8K)},
    {GgmlType::Q5_K, KVFORGE_KERNEL_LEVELS(q5_k, Q8K)},
    {GgmlType::Q6_K, KVFORGE_KERNEL_LEVELS(q6_k, Q8K)},
    {GgmlType::IQ4_XS, KVFORGE_KERNEL_LEVELS(iq4_xs, Q8K)},
    {GgmlType::Q5_0, KVFORGE_KERNEL_LEVELS(q5_0, Q8Blocks)},
    {GgmlType::IQ4_NL, KVFORGE_KERNEL_LEVELS(iq4_nl, Q8Blocks)},
    {GgmlType::MXFP4, KVFORGE_KERNEL_LEVELS(mxfp4, Q8Blocks)},
};

#undef KVFORGE_KERNEL_LEVELS
#undef KVFORGE_KERNEL_SET

const TypeKernels* find_kernels(GgmlType t) {
  for (const TypeKernels& k : kKernels) {
    if (k.type == t) return &k;
  }
  return nullptr;
}

constexpr int64_t kQ8BlockElems = 32;

size_t align64(size_t n) { return (n + 63) & ~size_t(63); }

// Q8 activations, sized for every level's layout (matmul_task.h): quants
// [n_tokens][quads * 128] (>= cols), then, each 64-byte aligned, scales and
// sums [n_tokens][quads * 16] (>= cols / 32).
int64_t q8_quads(int64_t cols) { return (cols / kQ8BlockElems + 3) / 4; }
size_t q8_quant_bytes(int64_t cols, int64_t n_tokens) {
  return align64(size_t(n_tokens * q8_quads(cols) * kQ8QuadBytes));
}
size_t q8_lane_bytes(int64_t cols, int64_t n_tokens) {
  return align64(size_t(n_tokens * q8_quads(cols) * kQ8QuadLanes) * sizeof(float));
}

// A regrouped layout's one kernel, at the AVX-512 level: the same set at
// every level, the other levels' entries never used (checked_layout refuses
// them).
struct LayoutKernels {
  WeightLayout layout;
  TypeKernels kernels;
};

constexpr LayoutKernels regrouped(WeightLayout layout, GgmlType type, ActivationForm form,
                                  RowKernel rows, bool tiles16) {
  const KernelSet set{form,
                      rows,
                      quantize_activations_q8_avx512,
                      quantize_activations_q8_k_avx512,
                      quantize_activations_q8_blocks_avx512,
                      tiles16};
  return {layout, {type, {set, set, set}}};
}

using enum ActivationForm;
constexpr bool kTiles16 = true;  // batches split as batch_split says (KernelSet::tiles16)

const LayoutKernels kRegroupedKernels[] = {
    regrouped(WeightLayout::Q4_0Groups8, GgmlType::Q4_0, Q8, matmul_rows_q4_0_groups8_avx512,
              false),
    regrouped(WeightLayout::Q8_0Groups8, GgmlType::Q8_0, Q8, matmul_rows_q8_0_groups8_avx512,
              false),
    // Q8_0 / Q4_0 Tiles16: one kernel (VNNI, AMX for batches where usable), the Q8-rows form.
    regrouped(WeightLayout::Q8_0Tiles16, GgmlType::Q8_0, Q8Rows, matmul_rows_q8_0_tiles16_avx512,
              kTiles16),
    regrouped(WeightLayout::Q4_0Tiles16, GgmlType::Q4_0, Q8Rows, matmul_rows_q4_0_tiles16_avx512,
              kTiles16),
    // F16Interleaved16, BF16Interleaved16: f32 activations as given.
    regrouped(WeightLayout::F16Interleaved16, GgmlType::F16, F32,
              matmul_rows_f16_interleaved16_avx512, false),
    regrouped(WeightLayout::BF16Interleaved16, GgmlType::BF16, F32,
              matmul_rows_bf16_interleaved16_avx512, false),
    // K-quant and IQ4_XS Tiles16: Q8_K activations, as the native kernels.
    regrouped(WeightLayout::Q4_KTiles16, GgmlType::Q4_K, Q8K, matmul_rows_q4_k_tiles16_avx512,
              false),
    regrouped(WeightLayout::Q5_KTiles16, GgmlType::Q5_K, Q8K, matmul_rows_q5_k_tiles16_avx512,
              false),
    regrouped(WeightLayout::Q6_KTiles16, GgmlType::Q6_K, Q8K, matmul_rows_q6_k_tiles16_avx512,
              false),
    regrouped(WeightLayout::Q2_KTiles16, GgmlType::Q2_K, Q8K, matmul_rows_q2_k_tiles16_avx512,
              false),
    regrouped(WeightLayout::Q3_KTiles16, GgmlType::Q3_K, Q8K, matmul_rows_q3_k_tiles16_avx512,
              false),
    regrouped(WeightLayout::IQ4_XSTiles16, GgmlType::IQ4_XS, Q8K, matmul_rows_iq4_xs_tiles16_avx512,
              false),
    // IQ4_NLTiles16, Q5_0Tiles16, MXFP4Tiles16: the Q8-rows form, whose
    // offsets undo the levels' + 128 / + 16; Q5_1Tiles16, Q4_1Tiles16: the Q8-blocks form, as
    // the native kernels. Batches split as the other VNNI tiles (Stealing).
    regrouped(WeightLayout::IQ4_NLTiles16, GgmlType::IQ4_NL, Q8Rows,
              matmul_rows_iq4_nl_tiles16_avx512, kTiles16),
    regrouped(WeightLayout::Q5_0Tiles16, GgmlType::Q5_0, Q8Rows, matmul_rows_q5_0_tiles16_avx512,
              kTiles16),
    regrouped(WeightLayout::Q5_1Tiles16, GgmlType::Q5_1, Q8Blocks, matmul_rows_q5_1_tiles16_avx512,
              kTiles16),
    regrouped(WeightLayout::Q4_1Tiles16, GgmlType::Q4_1, Q8Blocks, matmul_rows_q4_1_tiles16_avx512,
              kTiles16),
    regrouped(WeightLayout::MXFP4Tiles16, GgmlType::MXFP4, Q8Rows, matmul_rows_mxfp4_tiles16_avx512,
              kTiles16),
};

const TypeKernels& checked_layout(const WeightView& w) {
  const std::string name = layout_name(w.layout);
  if (layout_type(w.layout) != w.type || !layout_fits(w.layout, w.rows, w.cols)) {
    throw std::invalid_argument("matmul: the " + name + " layout needs " +
                                std::string(type_name(layout_type(w.layout))) + " weights with " +
                                layout_requirement(w.layout) + ", got " +
                                std::string(type_name(w.type)) + " " + std::to_string(w.rows) +
                                " x " + std::to_string(w.cols));
  }
  if (!regrouping_preferred()) {
    throw std::invalid_argument("matmul: weights regrouped for the AVX-512 kernel (" + name +
                                ") at SIMD level " + simd_level_name(simd_level()) +
                                "; load the model at the level that will run it");
  }
  for (const LayoutKernels& k : kRegroupedKernels)
    if (k.layout == w.layout) return k.kernels;
  throw std::logic_error("matmul: no kernel for the " + name + " layout");
}

const TypeKernels& checked_kernels(const WeightView& w, int64_t n_tokens) {
  const TypeKernels* k =
      w.layout == WeightLayout::Native ? find_kernels(w.type) : &checked_layout(w);
  if (!k) {
    throw std::invalid_argument("matmul: weight type " + std::string(type_name(w.type)) +
                                " is not supported");
  }
  const int64_t block = type_traits(w.type).block_elems;
  if (w.rows < 0 || w.cols < 0 || n_tokens < 0) {
    throw std::invalid_argument("matmul: negative shape (rows " + std::to_string(w.rows) +
                                ", cols " + std::to_string(w.cols) + ", tokens " +
                                std::to_string(n_tokens) + ")");
  }
  if (w.cols % block != 0) {
    throw std::invalid_argument("matmul: cols " + std::to_string(w.cols) +
                                " is not a multiple of the " + std::string(type_name(w.type)) +
                                " block size " + std::to_string(block));
  }
  return *k;
}

constexpr size_t kMaxBatchWeights = kMatmulBatchMaxWeights;

// Rows per claimed unit of an AMX batch: whole group triples of the AMX
// kernel (48 rows), about 2 units per thread. Units cost: within one, each
// triple prefetches the next, but a unit's first triple starts cold, and
// each claim is a locked add that waits for the stores before it, so many
// small units cost more than they balance. Two per thread still let a
// thread that starts late, or runs on a busier core, leave a unit to the
// other.
int64_t rows_per_claim(int64_t total_rows, int threads) {
  const int64_t want = total_rows / (2 * int64_t(threads)) / 48 * 48;
  return std::max<int64_t>(want, 48);
}

// Whether every weight is in a Tiles16 layout and the batch runs on AMX.
// By the sets' flag, not by comparing set addresses: every table entry
// holds its own copy of a set.
bool all_tiles16_on_amx(const KernelSet* const* sets, size_t n, int64_t n_tokens) {
  if (!tiles16_batch_on_amx(n_tokens)) return false;
  for (size_t i = 0; i < n; ++i)
    if (!sets[i]->tiles16) return false;
  return true;
}

// Tiles16 batches (more than kTiles16DecodeMaxTokens) on VNNI:
// parallel_for_stealing, own pieces of 256 rows (8 group pairs), stolen
// pieces of 64, edges at group pairs: a thread held up by a busy core
// leaves its tail to the other instead of keeping it waiting. The kernel
// prefetches the next pair past a piece's end, so an owner's next piece
// starts warm. Decode on any 16-row tile layout steals too, from own pieces
// of 512 rows: longer pieces restart each thread's forward walk through the
// weights (its prefetches, and the Q8_0/Q4_0/block32 kernels' 4 group
// streams) less often.
constexpr size_t kStealOwnRows = 256, kStealOwnDecodeRows = 512, kStealRows = 64,
                 kStealGrainRows = 2 * kTiles16Rows;

// Whether `layout` holds 16-row groups whose kernel takes any range of
// whole groups (every Tiles16 layout; the Groups8 and Interleaved16 ones
// split their range their own way).
bool in_16_row_tiles(WeightLayout layout) {
  switch (layout) {
    case WeightLayout::Q8_0Tiles16:
    case WeightLayout::Q4_0Tiles16:
    case WeightLayout::Q4_KTiles16:
    case WeightLayout::Q5_KTiles16:
    case WeightLayout::Q6_KTiles16:
    case WeightLayout::IQ4_NLTiles16:
    case WeightLayout::Q5_0Tiles16:
    case WeightLayout::Q5_1Tiles16:
    case WeightLayout::Q4_1Tiles16:
    case WeightLayout::Q2_KTiles16:
    case WeightLayout::Q3_KTiles16:
    case WeightLayout::IQ4_XSTiles16:
    case WeightLayout::MXFP4Tiles16:
      return true;
    default:
      return false;
  }
}

MatmulSplit batch_split(std::span<const MatmulOutput> outputs, const KernelSet* const* sets,
                        int64_t n_tokens, int n_threads) {
  const size_t n = outputs.size();
  if (n_threads < 2 || n == 0) return MatmulSplit::RangePerThread;
  if (n_tokens <= kTiles16DecodeMaxTokens) {
    for (const MatmulOutput& o : outputs)
      if (!in_16_row_tiles(o.w.layout)) return MatmulSplit::RangePerThread;
    return MatmulSplit::Stealing;
  }
  for (size_t i = 0; i < n; ++i)
    if (!sets[i]->tiles16) return MatmulSplit::RangePerThread;
  if (all_tiles16_on_amx(sets, n, n_tokens)) return MatmulSplit::ClaimedUnits;
  return MatmulSplit::Stealing;
}

// Bytes of converted activations of one form for n_tokens of `cols` values.
size_t activation_bytes(ActivationForm form, int64_t cols, int64_t n_tokens) {
  switch (form) {
    case ActivationForm::Q8:
      return q8_quant_bytes(cols, n_tokens) + 2 * q8_lane_bytes(cols, n_tokens);
    case ActivationForm::Q8K:
      return size_t(n_tokens * (cols / BlockQ8_K::kElems)) * sizeof(BlockQ8_K);
    case ActivationForm::Q8Rows:    // quants, then scales and offsets, each 64-byte aligned
    case ActivationForm::Q8Blocks:  // quants, then scales and block sums, each 64-byte aligned
      return align64(size_t(n_tokens * cols)) +
             2 * align64(size_t(n_tokens * (cols / kQ8BlockElems)) * sizeof(float));
    case ActivationForm::F32:
      break;
  }
  return 0;
}

struct ConvertedActivations {
  int8_t* quants = nullptr;      // Q8: layouts in matmul_task.h
  float* scales = nullptr;       // Q8
  int32_t* sums = nullptr;       // Q8, AVX-512 only
  BlockQ8_K* blocks = nullptr;   // Q8_K: [n_tokens][cols / 256]
  int8_t* row_quants = nullptr;  // Q8 rows: [n_tokens][cols]
  float* row_scales = nullptr;   // Q8 rows: [n_tokens][cols / 32]
  int32_t* row_offsets = nullptr;
  int8_t* block_quants = nullptr;  // Q8 blocks: [n_tokens][cols]
  float* block_scales = nullptr;   // Q8 blocks: [n_tokens][cols / 32]
  float* block_sums = nullptr;     // Q8 blocks: [n_tokens][cols / 32]
};

MatmulTask make_task(const MatmulOutput& o, ActivationForm form, const float* x, int64_t n_tokens,
                     const ConvertedActivations& c) {
  MatmulTask task;
  task.weights = static_cast<const uint8_t*>(o.w.data);
  task.row_bytes = row_bytes(o.w.type, size_t(o.w.cols));
  task.rows = o.w.rows;
  task.cols = o.w.cols;
  task.n_tokens = n_tokens;
  task.x = x;
  task.y = o.y;
  if (form == ActivationForm::Q8) {
    task.act_quants = c.quants;
    task.act_scales = c.scales;
    task.act_sums = c.sums;
  } else if (form == ActivationForm::Q8K) {
    task.act_k = c.blocks;
  } else if (form == ActivationForm::Q8Rows) {
    task.act_quants = c.row_quants;
    task.act_scales = c.row_scales;
    task.act_offsets = c.row_offsets;
  } else if (form == ActivationForm::Q8Blocks) {
    task.act_quants = c.block_quants;
    task.act_scales = c.block_scales;
    task.act_block_sums = c.block_sums;
  }
  return task;
}

// The kernels of a batch's weights at the running SIMD level, and which
// activation forms they need.
struct BatchKernels {
  const KernelSet* sets[kMaxBatchWeights] = {};
  // The set of the first weight wanting each activation form: its quantizers
  // make that form (every set of a form at one level has the same ones).
  const KernelSet* wants[kActivationForms] = {};
  int64_t total_rows = 0;

  const KernelSet* wanting(ActivationForm form) const { return wants[int(form)]; }
};

// Checks the batch (count, equal column counts) and picks its kernels.
BatchKernels select_batch_kernels(std::span<const MatmulOutput> outputs, int64_t n_tokens) {
  if (outputs.size() > kMaxBatchWeights)
    throw std::invalid_argument("matmul_batch: " + std::to_string(outputs.size()) +
                                " weights, at most " + std::to_string(kMaxBatchWeights));
  const SimdLevel level = simd_level();
  BatchKernels k;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const WeightView& w = outputs[i].w;
    k.sets[i] = &checked_kernels(w, n_tokens).by_level[int(level)];
    if (w.cols != outputs[0].w.cols)
      throw std::invalid_argument("matmul_batch: weight " + std::to_string(i) + " has " +
                                  std::to_string(w.cols) + " cols, weight 0 has " +
                                  std::to_string(outputs[0].w.cols));
    if (!k.wants[int(k.sets[i]->form)]) k.wants[int(k.sets[i]->form)] = k.sets[i];
    k.total_rows += w.rows;
  }
  return k;
}

// Lays the scratch out as Q8 activations (quants, scales, sums), Q8_K blocks,
// Q8 rows and Q8 blocks, each only as large as the batch wants it.
ConvertedActivations place_activations(const BatchKernels& k, int64_t cols, int64_t n_tokens,
                                       MatmulScratch& scratch) {
  const auto bytes_if_wanted = [&](ActivationForm form) {
    return k.wanting(form) ? activation_bytes(form, cols, n_tokens) : size_t(0);
  };
  const size_t q8_bytes = align64(bytes_if_wanted(ActivationForm::Q8));
  const size_t q8k_bytes = align64(bytes_if_wanted(ActivationForm::Q8K));
  const size_t rows_bytes = bytes_if_wanted(ActivationForm::Q8Rows);
  const size_t blocks_bytes = bytes_if_wanted(ActivationForm::Q8Blocks);
  scratch.reserve(q8_bytes + q8k_bytes + align64(rows_bytes) + blocks_bytes);
  // Pointers only into the parts the batch wants: F32-only batches leave the
  // scratch empty (data() may be null, and no offset may be applied to it).
  uint8_t* act = scratch.activations.data();
  ConvertedActivations converted;
  if (k.wanting(ActivationForm::Q8)) {
    converted.quants = reinterpret_cast<int8_t*>(act);
    converted.scales = reinterpret_cast<float*>(act + q8_quant_bytes(cols, n_tokens));
    converted.sums = reinterpret_cast<int32_t*>(act + q8_quant_bytes(cols, n_tokens) +
                                                q8_lane_bytes(cols, n_tokens));
  }
  if (k.wanting(ActivationForm::Q8K))
    converted.blocks = reinterpret_cast<BlockQ8_K*>(act + q8_bytes);
  const size_t quant_bytes = align64(size_t(n_tokens * cols));
  const size_t rows_lanes = align64(size_t(n_tokens * (cols / kQ8BlockElems)) * sizeof(float));
  if (k.wanting(ActivationForm::Q8Rows)) {
    uint8_t* rows_act = act + q8_bytes + q8k_bytes;
    converted.row_quants = reinterpret_cast<int8_t*>(rows_act);
    converted.row_scales = reinterpret_cast<float*>(rows_act + quant_bytes);
    converted.row_offsets = reinterpret_cast<int32_t*>(rows_act + quant_bytes + rows_lanes);
  }
  if (k.wanting(ActivationForm::Q8Blocks)) {
    uint8_t* blocks_act = act + q8_bytes + q8k_bytes + align64(rows_bytes);
    converted.block_quants = reinterpret_cast<int8_t*>(blocks_act);
    converted.block_scales = reinterpret_cast<float*>(blocks_act + quant_bytes);
    converted.block_sums = reinterpret_cast<float*>(blocks_act + quant_bytes + rows_lanes);
  }
  return converted;
}

// Quantizes x [n_tokens][cols] into every form the batch wants, split by tokens.
void convert_activations(const BatchKernels& k, const float* x, int64_t cols, int64_t n_tokens,
                         const ConvertedActivations& c, ThreadPool& pool) {
  if (const KernelSet* s = k.wanting(ActivationForm::Q8)) {
    pool.parallel_for(size_t(n_tokens), [&](size_t t0, size_t t1) {
      s->quantize_q8(x, cols, int64_t(t0), int64_t(t1), c.quants, c.scales, c.sums);
    });
  }
  if (const KernelSet* s = k.wanting(ActivationForm::Q8K)) {
    pool.parallel_for(size_t(n_tokens), [&](size_t t0, size_t t1) {
      s->quantize_q8_k(x, cols, int64_t(t0), int64_t(t1), c.blocks);
    });
  }
  if (const KernelSet* s = k.wanting(ActivationForm::Q8Blocks)) {
    pool.parallel_for(size_t(n_tokens), [&](size_t t0, size_t t1) {
      s->quantize_q8_blocks(x, cols, int64_t(t0), int64_t(t1), c.block_quants, c.block_scales,
                            c.block_sums);
    });
  }
  if (k.wanting(ActivationForm::Q8Rows)) {  // Tiles16: AVX-512 only (checked_layout)
    pool.parallel_for(size_t(n_tokens), [&](size_t t0, size_t t1) {
      quantize_activations_q8_rows_avx512(x, cols, int64_t(t0), int64_t(t1), c.row_quants,
                                          c.row_scales, c.row_offsets);
    });
  }
}

// Runs run_rows over [0, total_rows) on the pool, split as `split` says.
template <typename RunRows>
void run_split(MatmulSplit split, int64_t total_rows, int64_t n_tokens, ThreadPool& pool,
               const RunRows& run_rows) {
  if (split == MatmulSplit::Stealing) {
    const size_t own = n_tokens <= kTiles16DecodeMaxTokens ? kStealOwnDecodeRows : kStealOwnRows;
    pool.parallel_for_stealing(
        size_t(total_rows), own, kStealRows,
        [&](size_t r0, size_t r1) { run_rows(int64_t(r0), int64_t(r1)); }, kStealGrainRows);
    return;
  }
  if (split == MatmulSplit::ClaimedUnits) {
    // AMX batches: units of whole 16-row groups (every weight's rows being
    // a multiple of 16) claimed from a shared counter, so a thread that runs
    // slower (a busy sibling core) takes fewer of them.
    std::atomic<int64_t> next{0};
    const int64_t unit = rows_per_claim(total_rows, pool.size());
    const int64_t units = (total_rows + unit - 1) / unit;
    pool.run([&](int, int) {
      for (int64_t u; (u = next.fetch_add(1, std::memory_order_relaxed)) < units;)
        run_rows(u * unit, std::min(total_rows, (u + 1) * unit));
    });
    return;
  }
  pool.parallel_for(size_t(total_rows),
                    [&](size_t r0, size_t r1) { run_rows(int64_t(r0), int64_t(r1)); });
}

}  // namespace

bool tiles16_batch_on_amx(int64_t n_tokens) {
  return n_tokens >= kAmxMinTokens && amx_int8_usable();
}

MatmulSplit matmul_batch_split(std::span<const MatmulOutput> outputs, int64_t n_tokens,
                               int n_threads) {
  if (n_threads < 2 || outputs.size() > kMaxBatchWeights) return MatmulSplit::RangePerThread;
  const KernelSet* sets[kMaxBatchWeights];
  for (size_t i = 0; i < outputs.size(); ++i)
    sets[i] = &checked_kernels(outputs[i].w, n_tokens).by_level[int(simd_level())];
  return batch_split(outputs, sets, n_tokens, n_threads);
}

size_t matmul_scratch_bytes(const WeightView& w, int64_t n_tokens) {
  const TypeKernels& k = checked_kernels(w, n_tokens);
  return activation_bytes(k.by_level[0].form, w.cols, n_tokens);
}

size_t matmul_batch_scratch_bytes(std::span<const MatmulOutput> outputs, int64_t n_tokens) {
  bool counted[kActivationForms] = {};
  size_t bytes = 0;
  for (const MatmulOutput& o : outputs) {
    const ActivationForm form = checked_kernels(o.w, n_tokens).by_level[0].form;
    if (counted[int(form)]) continue;
    counted[int(form)] = true;
    bytes += align64(activation_bytes(form, o.w.cols, n_tokens));
  }
  return bytes;
}

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatmulScratch& scratch) {
  const MatmulOutput one{w, y};
  matmul_batch(std::span<const MatmulOutput>(&one, 1), x, n_tokens, pool, scratch);
}

namespace {

// Advances a task's activations by `k` tokens of the converted whole:
// every form is token-major, at the per-token strides of matmul_task.h.
void skip_tokens(MatmulTask& t, ActivationForm form, int64_t k) {
  const int64_t blocks = t.cols / kQ8BlockElems;
  t.x += k * t.cols;
  switch (form) {
    case ActivationForm::Q8:
      if (simd_level() == SimdLevel::Avx512) {  // quads
        const int64_t quads = q8_quads(t.cols);
        t.act_quants += k * quads * kQ8QuadBytes;
        t.act_scales += k * quads * kQ8QuadLanes;
        t.act_sums += k * quads * kQ8QuadLanes;
      } else {
        t.act_quants += k * t.cols;
        t.act_scales += k * blocks;
      }
      break;
    case ActivationForm::Q8K:
      t.act_k += k * (t.cols / BlockQ8_K::kElems);
      break;
    case ActivationForm::Q8Rows:
      t.act_quants += k * t.cols;
      t.act_scales += k * blocks;
      t.act_offsets += k * blocks;
      break;
    case ActivationForm::Q8Blocks:
      t.act_quants += k * t.cols;
      t.act_scales += k * blocks;
      t.act_block_sums += k * blocks;
      break;
    case ActivationForm::F32:
      break;
  }
}

// matmul_batch, and with own_tokens matmul_batch_own_tokens: output i then
// multiplies tokens [i n_tokens, (i + 1) n_tokens) of x, all of which are
// converted together (per token, so each its own bits).
void batch(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens, bool own_tokens,
           ThreadPool& pool, MatmulScratch& scratch) {
  const BatchKernels k = select_batch_kernels(outputs, n_tokens);
  if (outputs.empty() || k.total_rows == 0 || n_tokens == 0) return;
  const int64_t cols = outputs[0].w.cols;
  const int64_t n_conv = own_tokens ? n_tokens * int64_t(outputs.size()) : n_tokens;
  if (cols == 0) {
    for (const MatmulOutput& o : outputs) std::fill(o.y, o.y + o.w.rows * n_tokens, 0.0f);
    return;
  }
  const ConvertedActivations converted = place_activations(k, cols, n_conv, scratch);
  convert_activations(k, x, cols, n_conv, converted, pool);

  MatmulTask tasks[kMaxBatchWeights];
  for (size_t i = 0; i < outputs.size(); ++i) {
    tasks[i] = make_task(outputs[i], k.sets[i]->form, x, n_tokens, converted);
    if (own_tokens) skip_tokens(tasks[i], k.sets[i]->form, int64_t(i) * n_tokens);
  }
  // Rows of all weights in one index space [0, total_rows): weight i owns
  // [first_i, first_i + rows_i); a thread's range may span several weights.
  const auto run_rows = [&](int64_t r0, int64_t r1) {
    int64_t first = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const int64_t rows = outputs[i].w.rows;
      const int64_t b = std::max(r0, first), e = std::min(r1, first + rows);
      if (b < e) k.sets[i]->rows(tasks[i], b - first, e - first);
      first += rows;
    }
  };
  run_split(batch_split(outputs, k.sets, n_tokens, pool.size()), k.total_rows, n_tokens, pool,
            run_rows);
}

}  // namespace

void matmul_batch(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                  ThreadPool& pool, MatmulScratch& scratch) {
  batch(outputs, x, n_tokens, false, pool, scratch);
}

void matmul_batch_own_tokens(std::span<const MatmulOutput> outputs, const float* x,
                             int64_t n_tokens, ThreadPool& pool, MatmulScratch& scratch) {
  batch(outputs, x, n_tokens, true, pool, scratch);
}

}  // namespace kvforge
