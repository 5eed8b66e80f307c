#include "app/bench/bench_kv_tiers.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "app/bench/token_digest.h"
#include "app/cli/command_engine.h"
#include "app/cli/engine_flags.h"
#include "app/percentiles.h"
#include "app/text_engine.h"
#include "engine/kv/kv_disk_tier.h"
#include "engine/kv/paged_kv_cache.h"
#include "engine/kv/prefix_cache.h"
#include "model/model_fingerprint.h"

namespace kvforge::cli {
namespace {

namespace fs = std::filesystem;

// A fresh directory for one tier, removed with this object.
struct TierDir {
  fs::path path;
  explicit TierDir(const std::string& parent) {
    const fs::path base = parent.empty() ? fs::temp_directory_path() : fs::path(parent);
    fs::create_directories(base);
    std::string tmpl = (base / "kvforge-tier-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      throw std::runtime_error("cannot create a directory in " + base.string());
    path = tmpl;
  }
  ~TierDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Drops the tier's files from the page cache, so the next read comes from
// the device. Written back first: the kernel keeps dirty pages.
void drop_from_page_cache(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

std::vector<int32_t> random_ids(std::mt19937& rng, int n, int n_vocab) {
  std::uniform_int_distribution<int32_t> pick(3, n_vocab - 1);  // 0..2: <unk>, <s>, </s>
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& t : v) t = pick(rng);
  return v;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

SamplingParams greedy(int max_tokens) {
  SamplingParams p;
  p.temperature = 0;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

// Runs one request alone; its time to first token in ms.
double ttft_ms(TextEngine& e, const std::vector<int32_t>& prompt) {
  e.add_tokens(prompt, greedy(1));
  double t = 0;
  while (e.has_unfinished())
    for (TextEvent& ev : e.step())
      if (ev.result) t = ev.result->timings.ttft_seconds * 1e3;
  return t;
}

struct TierRow {
  const char* name;
  std::vector<double> ms{};
  std::vector<double> read_bytes{};
  std::vector<double> load_ms{};  // the disk tier's read + verify time
};

}  // namespace

namespace {

// One round of bench_tier_ttft on a fresh prefix: a TTFT and bytes read per row.
void tier_round(const Model& model, const Tokenizer& tok, ThreadPool& pool, EngineOptions options,
                const KvTierBenchOptions& o, std::mt19937& rng, std::vector<TierRow>& rows) {
  const int n_vocab = model.config().n_vocab;
  const std::vector<int32_t> prefix = random_ids(rng, o.prefix_len, n_vocab);
  const auto prompt = [&] { return concat(prefix, random_ids(rng, o.suffix_len, n_vocab)); };
  const auto record = [&](size_t row, TextEngine& e, const std::vector<int32_t>& p) {
    const KvDiskStats before = e.engine().stats().disk;
    rows[row].ms.push_back(ttft_ms(e, p));
    const KvDiskStats after = e.engine().stats().disk;
    rows[row].read_bytes.push_back(double(after.bytes_read - before.bytes_read));
    rows[row].load_ms.push_back(1e3 * (after.load_seconds - before.load_seconds));
  };
  options.kv_disk_dir.clear();
  {
    TextEngine off(model, tok, pool, options);
    record(0, off, prompt());
  }
  TierDir dir(o.parent_dir);
  options.kv_disk_dir = dir.path.string();
  {
    TextEngine on(model, tok, pool, options);
    record(1, on, prompt());
    record(2, on, prompt());
  }
  {
    TextEngine restarted(model, tok, pool, options);
    record(3, restarted, prompt());
  }
  drop_from_page_cache(dir.path);
  TextEngine cold(model, tok, pool, options);
  record(4, cold, prompt());
}

}  // namespace

namespace {

struct StepTimes {
  std::vector<double> quiet_ms;    // the decoding request's steps before the other arrives
  std::vector<double> all_ms;      // all its decode steps, the other's arrival among them
  std::vector<double> ttft_ms;     // the arriving request's time to first token
  std::vector<double> arrival_ms;  // the step that admitted the arriving request
};

// A request decodes alone, then a request whose prefix is on disk arrives:
// the decoding request's step times, alone and over its whole decode.
void overlap_round(const Model& model, ThreadPool& pool, const EngineOptions& options,
                   const KvTierBenchOptions& o, std::mt19937& rng, bool drop_cache, StepTimes& t) {
  const int n_vocab = model.config().n_vocab;
  const std::vector<int32_t> prefix = random_ids(rng, o.prefix_len, n_vocab);
  TierDir dir(o.parent_dir);
  EngineOptions on = options;
  on.kv_disk_dir = dir.path.string();
  {
    Engine writer(model, pool, on);
    writer.add_request(concat(prefix, random_ids(rng, o.suffix_len, n_vocab)), greedy(1));
    while (writer.has_unfinished()) writer.step();
  }
  if (drop_cache) drop_from_page_cache(dir.path);
  Engine e(model, pool, on);
  constexpr int kQuietSteps = 16, kDecodes = 64;
  const RequestId decoding = e.add_request(random_ids(rng, 16, n_vocab), greedy(kDecodes));
  RequestId other = -1;
  std::chrono::steady_clock::time_point arrived;
  for (int step = 0; e.has_unfinished(); ++step) {
    if (step == kQuietSteps) {
      other = e.add_request(concat(prefix, random_ids(rng, o.suffix_len, n_vocab)), greedy(1));
      arrived = std::chrono::steady_clock::now();
    }
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<StepEvent> events = e.step();
    const auto t1 = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const auto has = [&](RequestId r) {
      return std::any_of(events.begin(), events.end(),
                         [&](const StepEvent& ev) { return ev.request == r && ev.token; });
    };
    if (has(other))
      t.ttft_ms.push_back(std::chrono::duration<double, std::milli>(t1 - arrived).count());
    if (step == 0 || !has(decoding)) continue;  // its own prefill, or it is done
    t.all_ms.push_back(ms);
    if (other < 0) t.quiet_ms.push_back(ms);
    if (step == kQuietSteps) t.arrival_ms.push_back(ms);
  }
}

}  // namespace

void bench_tier_load_overlap(const Model& model, ThreadPool& pool, const EngineOptions& options,
                             const KvTierBenchOptions& o) {
  std::printf(
      "\n## KV tiers: step times of a decoding request (64 tokens) while another request's "
      "%d-token prefix loads from disk (%s KV, %d rounds)\n\n| page cache | decode step ms alone: "
      "median / max | all its decode steps: median / p99 / max ms | the step admitting the other: "
      "median ms | arriving request TTFT ms median |\n|---|---|---|---|---|\n",
      o.prefix_len, kv_dtype_name(options.kv_format.k), o.rounds);
  for (const bool drop : {false, true}) {
    StepTimes t;
    std::mt19937 rng(o.seed * 31337u);
    for (int r = 0; r < o.rounds; ++r) overlap_round(model, pool, options, o, rng, drop, t);
    std::printf("| %s | %.1f / %.1f | %.1f / %.1f / %.1f | %.1f | %.1f |\n",
                drop ? "dropped" : "warm", percentile(t.quiet_ms, 0.5),
                *std::max_element(t.quiet_ms.begin(), t.quiet_ms.end()), percentile(t.all_ms, 0.5),
                percentile(t.all_ms, 0.99), *std::max_element(t.all_ms.begin(), t.all_ms.end()),
                percentile(t.arrival_ms, 0.5), percentile(t.ttft_ms, 0.5));
    std::fflush(stdout);
  }
}

void bench_tier_ttft(const Model& model, const Tokenizer& tok, ThreadPool& pool,
                     EngineOptions options, const KvTierBenchOptions& o) {
  std::printf(
      "\n## KV tiers: time to first token, %d-token prefix + %d own tokens, medians of %d "
      "prefixes\n\n| KV | prefix | TTFT ms median (min-max) | (a) / this | read per request | read "
      "+ verify ms |\n"
      "|---|---|---|---|---|---|\n",
      o.prefix_len, o.suffix_len, o.rounds);
  {
    TextEngine warm(model, tok, pool, options);  // faults the weights in before any timing
    ttft_ms(warm, {1, 2, 3});
  }
  for (const KvFormat& f : o.formats) {
    options.kv_format = f;
    std::vector<TierRow> rows = {{"(a) not cached, no disk tier"},
                                 {"(a) not cached, disk tier writing it"},
                                 {"(b) in the RAM pool"},
                                 {"(c) on disk, new engine (page cache warm)"},
                                 {"(c) on disk, new engine, files dropped from page cache"}};
    std::mt19937 rng(o.seed * 7919u);
    for (int r = 0; r < o.rounds; ++r) tier_round(model, tok, pool, options, o, rng, rows);
    const double base = percentile(rows[0].ms, 0.5);
    const std::string kv = kv_dtype_name(f.k);
    for (const TierRow& row : rows) {
      const double med = percentile(row.ms, 0.5);
      std::printf("| %s | %s | %.1f (%.1f-%.1f) | %.1fx | %s | %.1f |\n", kv.c_str(), row.name, med,
                  *std::min_element(row.ms.begin(), row.ms.end()),
                  *std::max_element(row.ms.begin(), row.ms.end()), med > 0 ? base / med : 0,
                  human_bytes(percentile(row.read_bytes, 0.5)).c_str(),
                  percentile(row.load_ms, 0.5));
      std::fflush(stdout);
    }
  }
  for (const KvFormat& f : o.formats) {
    options.kv_format = f;
    bench_tier_load_overlap(model, pool, options, o);
    bench_tier_read_modes(model, options, o);
  }
}

namespace {

// Block files in `dir` for the prefix `tokens`, one per `bs` tokens, of random payload bytes;
// returns their chain hashes.
std::vector<uint64_t> write_random_blocks(const std::filesystem::path& dir,
                                          const KvBlockIdentity& id,
                                          const std::vector<int32_t>& tokens, int32_t bs,
                                          std::mt19937& rng) {
  std::vector<uint64_t> hashes;
  KvDiskTier writer(dir, uint64_t(1) << 40, id);
  std::vector<uint8_t> payload(id.payload_bytes);
  uint64_t h = PrefixCache::kRootHash;
  for (size_t b = 0; b < tokens.size() / size_t(bs); ++b) {
    for (auto& x : payload) x = uint8_t(rng());
    h = PrefixCache::chain_hash(h, std::span(tokens).subspan(b * size_t(bs), size_t(bs)));
    hashes.push_back(h);
    writer.store(h, std::span(tokens).first((b + 1) * size_t(bs)), payload);
  }
  return hashes;
}

}  // namespace

void bench_tier_read_modes(const Model& model, EngineOptions options, const KvTierBenchOptions& o) {
  const int32_t bs = options.block_size;
  const int32_t n_blocks = o.prefix_len / bs;
  const KvBlockIdentity id{model_fingerprint(model), options.kv_format, bs,
                           PagedKvCache::block_bytes(model.rank_config(), bs, options.kv_format)};
  std::printf(
      "\n## KV tiers: reading a %d-token prefix (%d block files of %s, %s KV) buffered vs "
      "O_DIRECT, medians of %d\n\n| read | page cache | ms median (min-max) | GB/s |\n"
      "|---|---|---|---|\n",
      n_blocks * bs, n_blocks, human_bytes(double(id.payload_bytes)).c_str(),
      kv_dtype_name(options.kv_format.k), o.rounds);
  TierDir dir(o.parent_dir);
  std::mt19937 rng(o.seed * 65537u);
  const std::vector<int32_t> tokens = random_ids(rng, n_blocks * bs, model.config().n_vocab);
  const std::vector<uint64_t> hashes = write_random_blocks(dir.path, id, tokens, bs, rng);
  struct Case {
    KvReadMode mode;
    bool drop;
    std::vector<double> ms{};
  };
  std::vector<Case> cases = {{KvReadMode::kBuffered, true},
                             {KvReadMode::kDirect, true},
                             {KvReadMode::kBuffered, false},
                             {KvReadMode::kDirect, false}};
  std::vector<uint8_t> out(id.payload_bytes);
  int64_t bytes = 0;
  for (int r = 0; r < o.rounds; ++r)
    for (Case& c : cases) {
      if (c.drop) drop_from_page_cache(dir.path);
      KvDiskTier tier(dir.path, uint64_t(1) << 40, id);
      tier.set_read_mode(c.mode);
      if (!c.drop)  // warm: one read first, timing the second
        for (int32_t b = 0; b < n_blocks; ++b)
          tier.load(hashes[size_t(b)], std::span(tokens).first(size_t((b + 1) * bs)), out);
      const int64_t before = tier.stats().hits;
      const auto t0 = std::chrono::steady_clock::now();
      for (int32_t b = 0; b < n_blocks; ++b)
        tier.load(hashes[size_t(b)], std::span(tokens).first(size_t((b + 1) * bs)), out);
      c.ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (tier.stats().hits - before != n_blocks)
        throw std::runtime_error("read-mode bench: a block file failed to load");
      bytes = tier.stats().bytes_read / (c.drop ? 1 : 2);
    }
  for (const Case& c : cases) {
    const double med = percentile(c.ms, 0.5);
    std::printf("| %s | %s | %.1f (%.1f-%.1f) | %.2f |\n",
                c.mode == KvReadMode::kDirect ? "O_DIRECT" : "buffered",
                c.drop ? "dropped" : "warm", med, *std::min_element(c.ms.begin(), c.ms.end()),
                *std::max_element(c.ms.begin(), c.ms.end()), double(bytes) / med / 1e6);
    std::fflush(stdout);
  }
}

namespace {

struct ChatRun {
  std::vector<double> first_ms, later_ms;  // TTFT of turn 1, of turns 2..
  double seconds = 0;
  EngineStats stats;
  std::vector<std::vector<int32_t>> histories;  // [conversation] at the end
};

// Every conversation's turn t is sent at once (the whole history plus the
// new user tokens); the replies join the histories before turn t + 1.
// Tensor parallel: ranks other than 0 follow rank 0's engine and return an
// empty run.
ChatRun run_chat(const Model& model, const Tokenizer& tok, ThreadPool& pool,
                 const EngineOptions& options, const KvTierBenchOptions& o,
                 const std::vector<std::vector<std::vector<int32_t>>>& user) {
  ChatRun r;
  const std::unique_ptr<TextEngine> made = lead_or_follow_paged(model, tok, pool, options);
  if (!made) return r;
  TextEngine& e = *made;
  r.histories.assign(size_t(o.conversations), {});
  const auto t0 = std::chrono::steady_clock::now();
  for (int turn = 0; turn < o.turns; ++turn) {
    std::map<RequestId, size_t> conversation;
    for (size_t c = 0; c < r.histories.size(); ++c) {
      r.histories[c] = concat(r.histories[c], user[c][size_t(turn)]);
      conversation[e.add_tokens(r.histories[c], greedy(o.reply_len))] = c;
    }
    while (e.has_unfinished())
      for (TextEvent& ev : e.step()) {
        if (!ev.result) continue;
        (turn == 0 ? r.first_ms : r.later_ms).push_back(ev.result->timings.ttft_seconds * 1e3);
        std::vector<int32_t>& h = r.histories[conversation.at(ev.request)];
        h.insert(h.end(), ev.result->tokens.begin(), ev.result->tokens.end());
      }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.stats = e.engine().stats();
  return r;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

}  // namespace

void bench_multi_turn_chat(const Model& model, const Tokenizer& tok, ThreadPool& pool,
                           EngineOptions options, const KvTierBenchOptions& o) {
  std::mt19937 rng(o.seed * 104729u);
  std::vector<std::vector<std::vector<int32_t>>> user(size_t(o.conversations));
  for (auto& turns : user)
    for (int t = 0; t < o.turns; ++t)
      turns.push_back(random_ids(rng, t == 0 ? o.context_len + o.user_len : o.user_len,
                                 model.config().n_vocab));
  const int64_t final_len = o.context_len + int64_t(o.turns) * (o.user_len + o.reply_len);
  if (options.kv_blocks == 0)  // a pool for about a quarter of the conversations
    options.kv_blocks = int32_t(std::max<int64_t>(
        (final_len * o.conversations / 4 + options.block_size - 1) / options.block_size,
        2 * (final_len + options.block_size - 1) / options.block_size));
  std::printf(
      "\n## Multi-turn chat: %d conversations x %d turns (%d own + %d user tokens, then %d user "
      "tokens per turn, %d-token replies; up to %lld tokens each), pool %d blocks x %d = %lld "
      "tokens, %s KV\n\n| disk tier | TTFT turn 1 mean ms | TTFT turns 2+ mean / p50 / p90 ms | "
      "wall s | RAM hits | disk hits | disk read (s) | disk written (s) | preemptions |\n"
      "|---|---|---|---|---|---|---|---|---|\n",
      o.conversations, o.turns, o.context_len, o.user_len, o.user_len, o.reply_len,
      (long long)final_len, options.kv_blocks, options.block_size,
      (long long)options.kv_blocks * options.block_size, kv_dtype_name(options.kv_format.k));
  // Tensor parallel the engine turns the disk tier off: only the row without it.
  const int rows = model.tp() > 1 ? 1 : 2;
  ChatRun runs[2];
  for (int on = 0; on < rows; ++on) {
    TierDir dir(o.parent_dir);
    options.kv_disk_dir = on ? dir.path.string() : "";
    const ChatRun& r = runs[on] = run_chat(model, tok, pool, options, o, user);
    std::printf(
        "| %s | %.1f | %.1f / %.1f / %.1f | %.2f | %lld | %lld | %s (%.2f) | %s (%.2f) | %lld |\n",
        on ? "on" : "off", mean(r.first_ms), mean(r.later_ms), percentile(r.later_ms, 0.5),
        percentile(r.later_ms, 0.9), r.seconds, (long long)r.stats.prefix.hits,
        (long long)r.stats.disk.hits, human_bytes(double(r.stats.disk.bytes_read)).c_str(),
        r.stats.disk.load_seconds, human_bytes(double(r.stats.disk.bytes_written)).c_str(),
        r.stats.disk.store_seconds, (long long)r.stats.preemptions);
    std::fflush(stdout);
  }
  int64_t tokens = 0;
  for (const auto& h : runs[0].histories) tokens += int64_t(h.size());
  std::printf("\nConversations at the end (tier off): %lld tokens, digest %016llx\n",
              (long long)tokens, (unsigned long long)digest_token_lists(runs[0].histories));
  if (rows == 1) {
    std::printf("(no disk tier row: the KV disk tier is off when tensor parallel)\n");
    return;
  }
  std::printf("TTFT turns 2+ off / on: %.2fx; replies identical with the tier on and off: %s\n",
              mean(runs[0].later_ms) / std::max(1e-9, mean(runs[1].later_ms)),
              runs[0].histories == runs[1].histories ? "yes" : "NO");
}

}  // namespace kvforge::cli
