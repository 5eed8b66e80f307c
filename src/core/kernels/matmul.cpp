#include "core/kernels/matmul.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/cpu_features.h"
#include "core/kernels/matmul_task.h"

namespace kvforge {
namespace {

enum class ActivationForm { F32, Q8, Q8K };

struct KernelSet {
  ActivationForm form = ActivationForm::F32;
  RowKernel rows = nullptr;
  Q8ActivationQuantizer quantize_q8 = nullptr;
  Q8KActivationQuantizer quantize_q8_k = nullptr;
};

#define KVFORGE_KERNEL_SET(type, form, level)                                            \
  KernelSet {                                                                            \
    ActivationForm::form, matmul_rows_##type##_##level, quantize_activations_q8_##level, \
        quantize_activations_q8_k_##level                                                \
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
    {GgmlType::Q4_K, KVFORGE_KERNEL_LEVELS(q4_k, Q8K)},
    {GgmlType::Q6_K, KVFORGE_KERNEL_LEVELS(q6_k, Q8K)},
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

// Q8 activations: quants [n_tokens][cols] then, 64-byte aligned, scales [n_tokens][cols/32].
size_t q8_scales_offset(int64_t cols, int64_t n_tokens) { return align64(size_t(n_tokens * cols)); }

const TypeKernels& checked_kernels(const WeightView& w, int64_t n_tokens) {
  const TypeKernels* k = find_kernels(w.type);
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

}  // namespace

size_t matmul_scratch_bytes(const WeightView& w, int64_t n_tokens) {
  const TypeKernels& k = checked_kernels(w, n_tokens);
  switch (k.by_level[0].form) {
    case ActivationForm::Q8:
      return q8_scales_offset(w.cols, n_tokens) +
             size_t(n_tokens * (w.cols / kQ8BlockElems)) * sizeof(float);
    case ActivationForm::Q8K:
      return size_t(n_tokens * (w.cols / BlockQ8_K::kElems)) * sizeof(BlockQ8_K);
    case ActivationForm::F32:
      break;
  }
  return 0;
}

void matmul(const WeightView& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
            MatmulScratch& scratch) {
  const TypeKernels& kernels = checked_kernels(w, n_tokens);
  if (w.rows == 0 || n_tokens == 0) return;
  if (w.cols == 0) {
    std::fill(y, y + w.rows * n_tokens, 0.0f);
    return;
  }
  const KernelSet& ks = kernels.by_level[int(simd_level())];
  MatmulTask task;
  task.weights = static_cast<const uint8_t*>(w.data);
  task.row_bytes = row_bytes(w.type, size_t(w.cols));
  task.rows = w.rows;
  task.cols = w.cols;
  task.n_tokens = n_tokens;
  task.x = x;
  task.y = y;

  scratch.reserve(matmul_scratch_bytes(w, n_tokens));
  uint8_t* act = scratch.activations.data();
  if (ks.form == ActivationForm::Q8) {
    int8_t* quants = reinterpret_cast<int8_t*>(act);
    float* scales = reinterpret_cast<float*>(act + q8_scales_offset(w.cols, n_tokens));
    pool.parallel_for(size_t(n_tokens), [&](size_t t0, size_t t1) {
      ks.quantize_q8(x, w.cols, int64_t(t0), int64_t(t1), quants, scales);
    });
    task.act_quants = quants;
    task.act_scales = scales;
  } else if (ks.form == ActivationForm::Q8K) {
    BlockQ8_K* blocks = reinterpret_cast<BlockQ8_K*>(act);
    pool.parallel_for(size_t(n_tokens), [&](size_t t0, size_t t1) {
      ks.quantize_q8_k(x, w.cols, int64_t(t0), int64_t(t1), blocks);
    });
    task.act_k = blocks;
  }

  pool.parallel_for(size_t(w.rows),
                    [&](size_t r0, size_t r1) { ks.rows(task, int64_t(r0), int64_t(r1)); });
}

}  // namespace kvforge
