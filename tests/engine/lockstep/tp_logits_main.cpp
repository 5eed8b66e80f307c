// tp_logits MODEL OUT [--paged-only]: runs a fixed workload through the paged engine on this
// rank's share of MODEL (all of it in one process, a share of it under
// `mpirun -np N`) and, on rank 0, writes to OUT one line per distribution a
// branch sampled from: the request, branch and an FNV-1a digest of the
// logits' bits, then every branch's greedy tokens and the engine's counts
// of prefix-cache hits and preemptions (which show the workload took those
// paths). The same workload again without the logits callback, so that on
// several ranks its greedy steps gather only each vocabulary slice's maximum,
// must give the same tokens with fewer bytes sent. tp_test.sh compares the
// files of 1, 2 and 4 ranks byte for byte.
//
// The workload: three requests with greedy sampling, one of them with two
// branches, another added mid-run sharing the first one's prompt prefix
// (prefix-cache hits); 8-token prefill chunks batched with decodes, blocks
// of 4 positions and a pool too small for all at once (preemption). Then the
// static pipeline: two slots, prefill in 8-row chunks and batched decodes
// through two generate variants, each logits row digested ("static ...");
// --paged-only leaves it out, for architectures the static pipeline refuses.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/comm/communicator.h"
#include "core/threadpool.h"
#include "engine/static_pipeline/plan_compiler.h"
#include "engine/static_pipeline/static_runner.h"
#include "kvforge/engine.h"
#include "model/model.h"

namespace {

using kvforge::RequestId;

uint64_t digest(std::span<const float> logits) {
  uint64_t h = 1469598103934665603ull;
  for (float x : logits) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

std::vector<int32_t> prompt(int n, int salt) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(3 + (i * 37 + salt * 101) % 250);
  return p;
}

std::string argmax_line(const char* what, int step, std::span<const float> logits) {
  char line[96];
  std::snprintf(line, sizeof line, "static %s %d %016llx\n", what, step,
                (unsigned long long)digest(logits));
  return line;
}

// Greedy generation on the static pipeline's slots, every logits row digested.
std::string static_workload(const kvforge::Model& model, kvforge::ThreadPool& pool,
                            kvforge::Communicator& world) {
  kvforge::StaticConfig c;
  c.max_prompt_len = 32;
  c.min_response_len = 32;
  c.prefill_chunk = 8;
  c.generate_variants = {32, 64};
  c.slots = 2;
  kvforge::StaticRunner runner(model, pool, kvforge::compile_plans(model, c, pool.size()), &world);
  const size_t n_vocab = size_t(model.config().n_vocab);
  const auto greedy = [&](std::span<const float> row) {
    return int32_t(std::max_element(row.begin(), row.end()) - row.begin());
  };
  std::string lines;
  std::vector<int32_t> next(2);
  for (int32_t slot = 0; slot < 2; ++slot) {
    const std::span<const float> logits = runner.prefill(slot, prompt(19 + 5 * slot, 4 + slot));
    lines += argmax_line("prefill", slot, logits);
    next[size_t(slot)] = greedy(logits);
  }
  for (int step = 0; step < 12; ++step) {
    const std::span<const float> logits = runner.decode(next);
    for (size_t s = 0; s < 2; ++s) {
      const std::span<const float> row = logits.subspan(s * n_vocab, n_vocab);
      lines += argmax_line("decode", step, row);
      next[s] = greedy(row);
    }
  }
  return lines;
}

// The paged workload; with `digest_logits`, one line per distribution a
// branch sampled from (the logits callback: every rank gathers the full
// logits), else only the tokens and counts (greedy steps: the ranks gather
// each vocabulary slice's maximum, model/vocab_argmax.h).
std::string paged_workload(const kvforge::Model& model, kvforge::ThreadPool& pool,
                           kvforge::Communicator& world, bool digest_logits) {
  std::string lines;
  kvforge::EngineOptions o;
  o.block_size = 4;
  o.kv_blocks = 14;
  o.max_seqs = 4;
  o.max_batched_tokens = 8;
  o.n_ctx = 128;
  o.state_snapshots = 4;  // hybrids: prefix hits restore recurrent-state snapshots
  o.comm = &world;
  if (digest_logits)
    o.on_logits = [&](RequestId id, int branch, std::span<const float> logits) {
      char line[96];
      std::snprintf(line, sizeof line, "logits %llu/%d %016llx\n", (unsigned long long)id, branch,
                    (unsigned long long)digest(logits));
      lines += line;
    };
  kvforge::Engine engine(model, pool, o);
  kvforge::SamplingParams greedy;
  greedy.temperature = 0;
  greedy.max_tokens = 12;
  greedy.ignore_eos = true;
  const std::vector<int32_t> first = prompt(30, 1);
  engine.add_request(first, greedy);
  engine.add_request(prompt(9, 2), greedy, /*n=*/2);
  std::map<std::pair<RequestId, int>, std::string> tokens;
  for (int step = 0; engine.has_unfinished(); ++step) {
    if (step == 8) {  // the first prompt's blocks are computed by now: a prefix hit
      std::vector<int32_t> shared(first.begin(), first.begin() + 24);
      for (int32_t t : prompt(5, 3)) shared.push_back(t);
      engine.add_request(shared, greedy);
    }
    for (const kvforge::StepEvent& e : engine.step())
      if (e.token) tokens[{e.request, e.branch}].append(" ").append(std::to_string(e.token->id));
  }
  char line[96];
  for (const auto& [key, ids] : tokens) {
    std::snprintf(line, sizeof line, "tokens %llu/%d", (unsigned long long)key.first, key.second);
    lines.append(line).append(ids).append("\n");
  }
  const kvforge::EngineStats s = engine.stats();
  std::snprintf(line, sizeof line, "prefix hits %lld, preemptions %lld\n", (long long)s.prefix.hits,
                (long long)s.preemptions);
  return lines + line;
}

// Drops the logits lines: what is left is the tokens and counts.
std::string without_logits(const std::string& lines) {
  std::string out;
  for (size_t at = 0; at < lines.size();) {
    const size_t end = lines.find('\n', at) + 1;
    if (lines.compare(at, 7, "logits ") != 0) out.append(lines, at, end - at);
    at = end;
  }
  return out;
}

int run(int argc, char** argv, kvforge::Communicator& world) {
  const bool paged_only = argc == 4 && std::strcmp(argv[3], "--paged-only") == 0;
  if (argc != 3 && !paged_only) {
    std::fprintf(stderr, "usage: tp_logits MODEL OUT [--paged-only]\n");
    return 2;
  }
  const auto model = kvforge::Model::load(argv[1], world.size() > 1 ? &world : nullptr);
  kvforge::ThreadPool pool(1);
  const int64_t sent_before = world.stats().bytes_sent;
  std::string lines = paged_workload(*model, pool, world, /*digest_logits=*/true);
  const int64_t sent_full = world.stats().bytes_sent - sent_before;
  const std::string greedy = paged_workload(*model, pool, world, /*digest_logits=*/false);
  const int64_t sent_greedy = world.stats().bytes_sent - sent_before - sent_full;
  if (greedy != without_logits(lines))
    throw std::runtime_error("greedy steps gave other tokens than full logits:\n" + greedy +
                             "instead of\n" + without_logits(lines));
  // The same steps, the logits gather of each replaced by 4 floats per row and rank.
  if (world.size() > 1 && !(sent_greedy < sent_full))
    throw std::runtime_error("greedy steps sent " + std::to_string(sent_greedy) +
                             " bytes, full logits " + std::to_string(sent_full));
  lines += "greedy steps: the same tokens\n";
  if (!paged_only) lines += static_workload(*model, pool, world);
  if (world.rank() == 0) {
    FILE* out = std::fopen(argv[2], "w");
    if (!out) throw std::runtime_error(std::string(argv[2]) + ": cannot write");
    std::fputs(lines.c_str(), out);
    std::fclose(out);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const auto world = kvforge::make_world_communicator(&argc, &argv);
  try {
    return run(argc, argv, *world);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tp_logits: rank %d: %s\n", world->rank(), e.what());
    if (world->size() > 1) world->abort(1);
    return 1;
  }
}
