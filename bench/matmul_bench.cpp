// Matmul kernels per weight type and SIMD level, for the n_embd 768 / n_ff
// 2048 shapes of the default model: "up" (2048 x 768) and "down" (768 x 2048),
// decode (1 token), a batched decode step of 16 sequences (weights from
// DRAM) and prefill (64 and 512 tokens), on a 2-thread pool.
//
// Bytes/s counts weight bytes per call: for decode the kernel must stream
// them, so the baseline is a plain read of the same bytes on the same pool
// ("roof"). "hot" weights fit in L2/L3 and are reused every call; "cold"
// cycles through enough copies (>= 256 MiB) that every call reads DRAM.
// Q4_0 and Q8_0 also run at the AVX-512 level on rows regrouped as a model's
// are at load (kernels/weight_repack.h: ".../avx512_groups8"), Q4_0 and
// Q8_0 on rows in the AMX tile layouts (".../avx512_tiles16": AMX for
// batches where the machine has it, else AVX-512 VNNI), Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K, IQ4_NL, IQ4_XS, Q5_0, Q5_1, Q4_1 and MXFP4 on their 16-row tiles
// (".../avx512_tiles16", VNNI), and F16 and BF16 on
// rows interleaved 16 by 16 (".../avx512_interleaved16"). After the runs a table gives each
// kernel's speed relative to the scalar kernel, the regrouped rows' relative
// to the native ones, the tile layout's relative to groups8, and (decode)
// the best against the read roof, all measured in this run.
//
//   matmul_bench [--benchmark_filter=q4_k] [--benchmark_min_time=0.2]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/formats/row_codec.h"
#include "core/kernels/matmul.h"
#include "core/kernels/weight_repack.h"
#include "core/threadpool.h"

namespace kvforge {
namespace {

constexpr size_t kColdBytes = size_t(256) << 20;

// KVFORGE_BENCH_THREADS (default 2). With 1 thread the benchmarks time CPU
// rather than wall clock, which stays meaningful on a busy machine.
int bench_threads() {
  static const int n = [] {
    const char* env = std::getenv("KVFORGE_BENCH_THREADS");
    return env ? std::max(1, std::atoi(env)) : 2;
  }();
  return n;
}

ThreadPool& pool() {
  static ThreadPool p(bench_threads());
  return p;
}

struct Shape {
  const char* name;
  int64_t rows, cols;
};
const Shape kShapes[] = {{"up", 2048, 768}, {"down", 768, 2048}};
const GgmlType kTypes[] = {GgmlType::F32,    GgmlType::F16,  GgmlType::BF16,   GgmlType::Q8_0,
                           GgmlType::Q4_0,   GgmlType::Q4_1, GgmlType::Q5_0,   GgmlType::Q5_1,
                           GgmlType::IQ4_NL, GgmlType::Q2_K, GgmlType::Q3_K,   GgmlType::Q4_K,
                           GgmlType::Q5_K,   GgmlType::Q6_K, GgmlType::IQ4_XS, GgmlType::MXFP4};

// `copies` consecutive copies of one quantized matrix.
struct Matrix {
  std::vector<uint8_t> bytes;
  size_t matrix_bytes = 0;
  int copies = 1;
};

// layout: Native, or the regrouped layout to put the rows in (kernels/weight_repack.h).
std::shared_ptr<Matrix> make_matrix(GgmlType type, const Shape& s, bool cold, WeightLayout layout) {
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> row(size_t(s.cols));
  auto m = std::make_shared<Matrix>();
  m->matrix_bytes = row_bytes(type, size_t(s.cols)) * size_t(s.rows);
  m->copies = cold ? int(kColdBytes / m->matrix_bytes) + 1 : 1;
  m->bytes.resize(m->matrix_bytes * size_t(m->copies));
  const size_t rb = row_bytes(type, size_t(s.cols));
  for (int64_t r = 0; r < s.rows; ++r) {
    for (float& v : row) v = dist(rng);
    quantize_row(type, row.data(), m->bytes.data() + size_t(r) * rb, s.cols);
  }
  if (layout != WeightLayout::Native) {
    const std::vector<uint8_t> native(m->bytes.begin(), m->bytes.begin() + long(m->matrix_bytes));
    regroup_rows(layout, native.data(), s.rows, s.cols, m->bytes.data());
  }
  for (int c = 1; c < m->copies; ++c) {
    std::copy(m->bytes.begin(), m->bytes.begin() + long(m->matrix_bytes),
              m->bytes.begin() + long(size_t(c) * m->matrix_bytes));
  }
  return m;
}

// Hot matrices stay cached (a few MiB each); only the latest cold one is kept,
// since the benchmarks sharing it run one after another.
std::shared_ptr<Matrix> matrix(GgmlType type, const Shape& s, bool cold,
                               WeightLayout layout = WeightLayout::Native) {
  static std::map<std::string, std::shared_ptr<Matrix>> hot;
  static std::string cold_key;
  static std::shared_ptr<Matrix> cold_matrix;
  const std::string key = std::string(type_name(type)) + s.name + "/" + layout_name(layout);
  if (!cold) {
    auto& m = hot[key];
    if (!m) m = make_matrix(type, s, false, layout);
    return m;
  }
  if (cold_key != key) {
    cold_matrix.reset();
    cold_matrix = make_matrix(type, s, true, layout);
    cold_key = key;
  }
  return cold_matrix;
}

void run_matmul(benchmark::State& state, GgmlType type, Shape shape, int64_t n_tokens,
                SimdLevel level, bool cold, WeightLayout layout) {
  const std::shared_ptr<Matrix> m = matrix(type, shape, cold, layout);
  set_simd_level(level);
  if (simd_level() != level) {
    state.SkipWithError("SIMD level not available on this machine");
    return;
  }
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(size_t(n_tokens * shape.cols)), y(size_t(n_tokens * shape.rows));
  for (float& v : x) v = dist(rng);
  MatmulScratch scratch;
  scratch.reserve(
      matmul_scratch_bytes(WeightView{type, nullptr, shape.rows, shape.cols}, n_tokens));
  int copy = 0;
  for (auto _ : state) {
    const WeightView w{type, m->bytes.data() + size_t(copy) * m->matrix_bytes, shape.rows,
                       shape.cols, layout};
    matmul(w, x.data(), n_tokens, y.data(), pool(), scratch);
    benchmark::DoNotOptimize(y.data());
    copy = copy + 1 == m->copies ? 0 : copy + 1;
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(m->matrix_bytes));
  state.SetItemsProcessed(int64_t(state.iterations()) * shape.rows * shape.cols * n_tokens);
  state.counters["MAC/s"] =
      benchmark::Counter(double(state.items_processed()), benchmark::Counter::kIsRate);
}

// Sums the same bytes on the same pool: what streaming the weights alone costs.
void run_read_roof(benchmark::State& state, GgmlType type, Shape shape, bool cold) {
  const std::shared_ptr<Matrix> m = matrix(type, shape, cold);
  int copy = 0;
  std::vector<uint64_t> sums(size_t(bench_threads()) * 8);
  for (auto _ : state) {
    const auto* words =
        reinterpret_cast<const uint64_t*>(m->bytes.data() + size_t(copy) * m->matrix_bytes);
    const size_t n = m->matrix_bytes / 8;
    pool().run([&](int t, int nt) {
      uint64_t a = 0, b = 0, c = 0, d = 0;
      const size_t begin = n * size_t(t) / size_t(nt), end = n * size_t(t + 1) / size_t(nt);
      size_t i = begin;
      for (; i + 4 <= end; i += 4)
        a += words[i], b += words[i + 1], c += words[i + 2], d += words[i + 3];
      for (; i < end; ++i) a += words[i];
      sums[size_t(t) * 8] = a + b + c + d;
    });
    benchmark::DoNotOptimize(sums.data());
    copy = copy + 1 == m->copies ? 0 : copy + 1;
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(m->matrix_bytes));
}

std::string bench_name(const char* what, const Shape& s, int64_t n_tokens, bool cold) {
  return std::string(what) + "/" + s.name + "/" +
         (n_tokens == 1 ? "decode" : "prefill" + std::to_string(n_tokens)) + "/" +
         (cold ? "cold" : "hot");
}

void configure(benchmark::internal::Benchmark* b) {
  if (bench_threads() > 1) b->UseRealTime();
  b->Unit(benchmark::kMicrosecond);
}

void register_all() {
  const SimdLevel levels[] = {SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512};
  for (const Shape& s : kShapes) {
    for (GgmlType t : kTypes) {
      for (bool cold : {false, true}) {
        for (int64_t n_tokens : {int64_t(1), int64_t(16), int64_t(64), int64_t(512)}) {
          // Long prefills are compute-bound: hot only. 16 tokens is a batched
          // decode step (16 sequences), which streams the weights from DRAM once.
          if (cold && n_tokens != 1 && n_tokens != 16) continue;
          if (!cold && n_tokens == 16) continue;
          const std::string base = bench_name(std::string(type_name(t)).c_str(), s, n_tokens, cold);
          for (SimdLevel l : levels) {
            configure(benchmark::RegisterBenchmark((base + "/" + simd_level_name(l)).c_str(),
                                                   run_matmul, t, s, n_tokens, l, cold,
                                                   WeightLayout::Native));
          }
          // The layouts a model's Q4_0 / Q8_0 matrices get at load on the AVX-512 level.
          const WeightLayout groups8 =
              t == GgmlType::Q4_0 ? WeightLayout::Q4_0Groups8 : WeightLayout::Q8_0Groups8;
          if ((t == GgmlType::Q4_0 || t == GgmlType::Q8_0) &&
              layout_fits(groups8, s.rows, s.cols)) {
            configure(benchmark::RegisterBenchmark((base + "/avx512_groups8").c_str(), run_matmul,
                                                   t, s, n_tokens, SimdLevel::Avx512, cold,
                                                   groups8));
          }
          const WeightLayout interleaved =
              t == GgmlType::F16 ? WeightLayout::F16Interleaved16 : WeightLayout::BF16Interleaved16;
          if ((t == GgmlType::F16 || t == GgmlType::BF16) &&
              layout_fits(interleaved, s.rows, s.cols)) {
            configure(benchmark::RegisterBenchmark((base + "/avx512_interleaved16").c_str(),
                                                   run_matmul, t, s, n_tokens, SimdLevel::Avx512,
                                                   cold, interleaved));
          }
          const WeightLayout tiles16 = t == GgmlType::Q4_0     ? WeightLayout::Q4_0Tiles16
                                       : t == GgmlType::Q4_K   ? WeightLayout::Q4_KTiles16
                                       : t == GgmlType::Q5_K   ? WeightLayout::Q5_KTiles16
                                       : t == GgmlType::Q6_K   ? WeightLayout::Q6_KTiles16
                                       : t == GgmlType::IQ4_NL ? WeightLayout::IQ4_NLTiles16
                                       : t == GgmlType::Q5_0   ? WeightLayout::Q5_0Tiles16
                                       : t == GgmlType::Q5_1   ? WeightLayout::Q5_1Tiles16
                                       : t == GgmlType::Q4_1   ? WeightLayout::Q4_1Tiles16
                                       : t == GgmlType::Q2_K   ? WeightLayout::Q2_KTiles16
                                       : t == GgmlType::Q3_K   ? WeightLayout::Q3_KTiles16
                                       : t == GgmlType::IQ4_XS ? WeightLayout::IQ4_XSTiles16
                                       : t == GgmlType::Q8_0   ? WeightLayout::Q8_0Tiles16
                                       : t == GgmlType::MXFP4  ? WeightLayout::MXFP4Tiles16
                                                               : WeightLayout::Native;
          if (tiles16 != WeightLayout::Native && layout_fits(tiles16, s.rows, s.cols)) {
            configure(benchmark::RegisterBenchmark((base + "/avx512_tiles16").c_str(), run_matmul,
                                                   t, s, n_tokens, SimdLevel::Avx512, cold,
                                                   tiles16));
          }
        }
        const std::string roof =
            bench_name(("roof_" + std::string(type_name(t))).c_str(), s, 1, cold);
        configure(benchmark::RegisterBenchmark(roof.c_str(), run_read_roof, t, s, cold));
      }
    }
  }
}

// Collects bytes/s per benchmark and prints ratios against the baselines.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      auto it = r.counters.find("bytes_per_second");
      std::string name = r.benchmark_name();
      const std::string suffix = "/real_time";
      if (name.size() > suffix.size() && name.ends_with(suffix))
        name.resize(name.size() - suffix.size());
      if (it != r.counters.end()) rate_[name] = it->second.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  void Finalize() override {
    ConsoleReporter::Finalize();
    std::printf("\n%-36s %10s %9s %9s %9s %9s %9s\n", "kernel (GB/s of weights)", "scalar", "avx2",
                "avx512", "regroup", "tiles16", "roof");
    for (const auto& [name, rate] : rate_) {
      const size_t slash = name.rfind('/');
      if (name.substr(slash + 1) != "scalar") continue;
      const std::string base = name.substr(0, slash);
      const double scalar = rate;
      std::printf("%-36s %10.2f", base.c_str(), scalar / 1e9);
      for (const char* level : {"avx2", "avx512"}) {
        auto it = rate_.find(base + "/" + level);
        if (it == rate_.end()) {
          std::printf(" %9s", "-");
        } else {
          std::printf(" %8.1fx", it->second / scalar);
        }
      }
      // Regrouped rows at the AVX-512 level, against the native ones.
      auto g8 = rate_.find(base + "/avx512_groups8");
      auto interleaved = rate_.find(base + "/avx512_interleaved16");
      auto native = rate_.find(base + "/avx512");
      if (g8 != rate_.end() && native != rate_.end()) {
        std::printf(" %8.2fx", g8->second / native->second);
      } else if (interleaved != rate_.end() && native != rate_.end()) {
        std::printf(" %8.2fx", interleaved->second / native->second);
      } else {
        std::printf(" %9s", "-");
      }
      // The tile layout, against groups8 (Q4_0, Q8_0) or the native rows (Q4_K).
      auto t16 = rate_.find(base + "/avx512_tiles16");
      if (t16 != rate_.end() && g8 != rate_.end()) {
        std::printf(" %8.2fx", t16->second / g8->second);
      } else if (t16 != rate_.end() && native != rate_.end()) {
        std::printf(" %8.2fx", t16->second / native->second);
      } else {
        std::printf(" %9s", "-");
      }
      // Roof: the read baseline for the same bytes, as a fraction reached by the best level.
      const size_t type_end = base.find('/');
      const std::string roof_name = "roof_" + base.substr(0, type_end) + base.substr(type_end);
      auto roof = rate_.find(roof_name);
      if (roof != rate_.end() && base.find("decode") != std::string::npos) {
        double best = scalar;
        for (const char* level :
             {"avx2", "avx512", "avx512_groups8", "avx512_tiles16", "avx512_interleaved16"}) {
          auto it = rate_.find(base + "/" + level);
          if (it != rate_.end() && it->second > best) best = it->second;
        }
        std::printf(" %8.0f%%", 100.0 * best / roof->second);
      }
      std::printf("\n");
    }
    std::printf(
        "(avx columns: speed-up over scalar; regroup: the rows regrouped at load "
        "(kernels/weight_repack.h: Groups8, Interleaved16) against avx512; tiles16: the 16-row "
        "tile layout against groups8, or against avx512 for the other types "
        "(AMX %s); roof: best level as %% of a plain read of the same bytes on %d threads)\n",
        cpu_features().amx_int8 ? "in use for batches" : "not on this CPU: VNNI only",
        bench_threads());
  }

 private:
  std::map<std::string, double> rate_;
};

}  // namespace
}  // namespace kvforge

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  kvforge::register_all();
  kvforge::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
