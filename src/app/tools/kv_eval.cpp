#include "app/tools/kv_eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "engine/kv/contiguous_kv_cache.h"
#include "model/forward.h"

namespace kvforge {
namespace {

// One run: a cache and the buffers to push a window through it.
struct Run {
  ContiguousKvCache cache;
  ForwardScratch scratch;
  std::vector<float> logits;  // [window][n_vocab]
  Run(const Model& m, int window, KvFormat f, int max_batch, int threads)
      : cache(m.config(), window, f),
        scratch(m.config()),
        logits(size_t(window) * size_t(m.config().n_vocab)) {
    scratch.reserve(std::min(window, max_batch), threads);
  }

  // Logits of every token of `chunk` (positions from 0), in batches.
  void forward_window(const Model& m, ThreadPool& pool, std::span<const int32_t> chunk,
                      int max_batch) {
    const size_t n_vocab = size_t(m.config().n_vocab);
    std::vector<int32_t> positions, rows;
    for (size_t start = 0; start < chunk.size(); start += size_t(max_batch)) {
      const size_t n = std::min(size_t(max_batch), chunk.size() - start);
      positions.resize(n);
      rows.resize(n);
      std::iota(positions.begin(), positions.end(), int32_t(start));
      std::iota(rows.begin(), rows.end(), 0);
      const StepInputs in{chunk.subspan(start, n), positions, {}, rows};
      forward(m, in, cache, scratch, pool, logits.data() + start * n_vocab);
    }
  }
};

double cosine(const float* a, const float* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  if (aa == 0 && bb == 0) return 1.0;
  if (aa == 0 || bb == 0) return 0.0;
  return ab / std::sqrt(aa * bb);
}

// log-softmax of logits into out (double).
void log_softmax(const float* logits, size_t n, std::vector<double>& out) {
  out.resize(n);
  const float mx = *std::max_element(logits, logits + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - mx);
  const double lse = std::log(sum) + mx;
  for (size_t i = 0; i < n; ++i) out[i] = double(logits[i]) - lse;
}

using Grid = std::vector<std::vector<double>>;

Grid zero_grid(const ModelConfig& c) {  // [n_layer][the layer's KV heads]
  Grid g;
  for (int l = 0; l < c.n_layer; ++l) g.emplace_back(size_t(c.layer_n_kv_head(l)), 0.0);
  return g;
}

// Adds, per (layer, kv head), the cosines over positions [0, n) of the two caches.
void add_kv_cosines(const ModelConfig& c, const ContiguousKvCache& ref,
                    const ContiguousKvCache& cand, int32_t n, KvEvalResult& r) {
  const int max_hd = c.max_head_dim();
  std::vector<float> b(static_cast<size_t>(max_hd)), q(static_cast<size_t>(max_hd));
  std::vector<uint8_t> rec(
      std::max(kv_head_bytes(cand.format().k, max_hd), kv_head_bytes(cand.format().v, max_hd)));
  for (int l = 0; l < c.n_layer; ++l) {
    const int hd = c.layer_head_dim(l);
    std::vector<KvSpan> rs, cs;
    ref.spans(l, 0, 0, n, rs);
    cand.spans(l, 0, 0, n, cs);
    for (int side = 0; side < 2; ++side) {
      const KvDtype t = side == 0 ? cand.format().k : cand.format().v;
      const uint8_t* rbase = side == 0 ? rs[0].k : rs[0].v;
      const uint8_t* cbase = side == 0 ? cs[0].k : cs[0].v;
      const size_t rps = side == 0 ? rs[0].k_pos_stride : rs[0].v_pos_stride;
      const size_t rhs = side == 0 ? rs[0].k_head_stride : rs[0].v_head_stride;
      const size_t cps = side == 0 ? cs[0].k_pos_stride : cs[0].v_pos_stride;
      const size_t chs = side == 0 ? cs[0].k_head_stride : cs[0].v_head_stride;
      auto& both = side == 0 ? r.k_cosine : r.v_cosine;
      auto& quant = side == 0 ? r.k_cosine_quant_only : r.v_cosine_quant_only;
      for (int32_t p = 0; p < n; ++p)
        for (int h = 0; h < c.layer_n_kv_head(l); ++h) {
          const float* x =
              reinterpret_cast<const float*>(rbase + size_t(p) * rps + size_t(h) * rhs);
          kv_decode_head(t, cbase + size_t(p) * cps + size_t(h) * chs, b.data(), hd);
          both[size_t(l)][size_t(h)] += cosine(x, b.data(), size_t(hd));
          kv_encode_head(t, x, rec.data(), hd);
          kv_decode_head(t, rec.data(), q.data(), hd);
          quant[size_t(l)][size_t(h)] += cosine(x, q.data(), size_t(hd));
        }
    }
  }
}

// Sums over the predicted positions: how the candidate's logits compare with
// the reference's, and both negative log-likelihoods of the next token.
struct LogitsComparison {
  int64_t top1_same = 0;
  double cos_sum = 0, kl_sum = 0, nll_ref = 0, nll_cand = 0;
  std::vector<double> lp_ref, lp_cand;  // scratch: [n_vocab] log-softmax of each

  void add(const float* a, const float* b, size_t n_vocab, size_t next, KvEvalResult& r) {
    const double cs = cosine(a, b, n_vocab);
    cos_sum += cs;
    r.logits_cosine_min = std::min(r.logits_cosine_min, cs);
    top1_same += std::max_element(a, a + n_vocab) - a == std::max_element(b, b + n_vocab) - b;
    log_softmax(a, n_vocab, lp_ref);
    log_softmax(b, n_vocab, lp_cand);
    double kl = 0;
    for (size_t v = 0; v < n_vocab; ++v) kl += std::exp(lp_ref[v]) * (lp_ref[v] - lp_cand[v]);
    kl_sum += kl;
    r.kl_max = std::max(r.kl_max, kl);
    nll_ref -= lp_ref[next];
    nll_cand -= lp_cand[next];
    ++r.n_predicted;
  }

  // Means over the predicted positions, and the grids' over the KV positions.
  void finish(int64_t kv_positions, KvEvalResult& r) const {
    const double np = double(r.n_predicted);
    r.logits_cosine_mean = cos_sum / np;
    r.top1_agreement = double(top1_same) / np;
    r.kl_mean = kl_sum / np;
    r.ppl_reference = std::exp(nll_ref / np);
    r.ppl_candidate = std::exp(nll_cand / np);
    for (Grid* g : {&r.k_cosine, &r.v_cosine, &r.k_cosine_quant_only, &r.v_cosine_quant_only})
      for (auto& layer : *g)
        for (double& x : layer) x /= double(kv_positions);
  }
};

int checked_window(const ModelConfig& c, const KvEvalOptions& o, size_t n_tokens) {
  const int window = o.window > 0 ? o.window : std::min(c.n_ctx_train, 512);
  if (window < 2 || window > c.n_ctx_train)
    throw std::invalid_argument("kv-eval window " + std::to_string(window) + " must be in [2, " +
                                std::to_string(c.n_ctx_train) + "] (the training context)");
  if (n_tokens < 2) throw std::invalid_argument("kv-eval needs at least 2 tokens");
  return window;
}

}  // namespace

KvEvalResult evaluate_kv_format(const Model& model, ThreadPool& pool,
                                std::span<const int32_t> tokens, const KvEvalOptions& o) {
  const ModelConfig& c = model.config();
  const int window = checked_window(c, o, tokens.size());
  const auto t0 = std::chrono::steady_clock::now();
  const int batch = std::max(1, o.max_batch);
  Run ref(model, window, {}, batch, pool.size());
  Run cand(model, window, o.candidate, batch, pool.size());
  KvEvalResult r;
  r.candidate = o.candidate;
  r.window = window;
  r.n_tokens = int64_t(tokens.size());
  r.k_cosine = r.v_cosine = r.k_cosine_quant_only = r.v_cosine_quant_only = zero_grid(c);
  const size_t n_vocab = size_t(c.n_vocab);
  LogitsComparison sums;
  int64_t kv_positions = 0;
  for (size_t start = 0; start + 1 < tokens.size(); start += size_t(window)) {
    const auto chunk = tokens.subspan(start, std::min(size_t(window), tokens.size() - start));
    ref.forward_window(model, pool, chunk, batch);
    cand.forward_window(model, pool, chunk, batch);
    add_kv_cosines(c, ref.cache, cand.cache, int32_t(chunk.size()), r);
    kv_positions += int64_t(chunk.size());
    for (size_t i = 0; i + 1 < chunk.size(); ++i)
      sums.add(ref.logits.data() + i * n_vocab, cand.logits.data() + i * n_vocab, n_vocab,
               size_t(chunk[i + 1]), r);
    ++r.n_windows;
  }
  sums.finish(kv_positions, r);
  r.kv_bytes_per_token_reference = c.kv_bytes_per_token(4);
  r.kv_bytes_per_token_candidate = 0;
  for (int l = 0; l < c.n_layer; ++l)
    r.kv_bytes_per_token_candidate +=
        size_t(c.layer_n_kv_head(l)) * (kv_head_bytes(o.candidate.k, c.layer_head_dim(l)) +
                                        kv_head_bytes(o.candidate.v, c.layer_head_dim(l)));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace kvforge
