#include "app/text_engine.h"

#include <random>
#include <stdexcept>

namespace kvforge {
namespace {

EngineOptions with_eos(EngineOptions o, const Tokenizer& t) {
  if (o.eos_token_ids.empty()) o.eos_token_ids = t.eog_ids();
  return o;
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// The continuation follows the prompt, so its leading space is real text.
constexpr DecodeOptions kContinuation{
    .skip_bos = true, .render_special = false, .strip_space_prefix = false};

DecodeOptions continuation(bool render_special) {
  DecodeOptions o = kContinuation;
  o.render_special = render_special;
  return o;
}

}  // namespace

TextEngine::Branch::Branch(const Tokenizer& t, const std::vector<std::string>& stop_strings,
                           bool render_special)
    : detok(t, continuation(render_special)), stops(stop_strings) {}

TextEngine::TextEngine(const Model& model, Tokenizer tokenizer, ThreadPool& pool,
                       EngineOptions options)
    : tokenizer_(std::move(tokenizer)) {
  engine_ = std::make_unique<Engine>(model, pool, with_eos(std::move(options), tokenizer_));
}

TextEngine::TextEngine(Tokenizer tokenizer, std::unique_ptr<Engine> engine)
    : tokenizer_(std::move(tokenizer)), engine_(std::move(engine)) {
  if (!engine_) throw std::invalid_argument("TextEngine: no engine");
}

RequestId TextEngine::add(std::string_view prompt, const SamplingParams& params,
                          const TextRequestOptions& options) {
  const std::vector<int32_t> ids = tokenizer_.encode(
      prompt, options.add_bos.value_or(tokenizer_.add_bos()), options.parse_special);
  return add_tokens(ids, params, options);
}

RequestId TextEngine::add_tokens(std::span<const int32_t> prompt, const SamplingParams& params,
                                 const TextRequestOptions& options) {
  // A fixed seed here, so the caller can report it and replay the run.
  SamplingParams p = params;
  if (!p.seed) p.seed = (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  const auto added = Clock::now();
  const RequestId id = engine_->add_request(prompt, p, options.n, options.logprobs);
  Request& req = requests_[id];
  req.added = added;
  req.seed = *p.seed;
  req.branches.reserve(size_t(options.n));
  for (int b = 0; b < options.n; ++b) {
    req.branches.emplace_back(tokenizer_, p.stop, options.render_special);
    req.branches.back().result.prompt_tokens = int(prompt.size());
  }
  req.open = options.n;
  return id;
}

std::vector<TextEvent> TextEngine::step() {
  const std::vector<StepEvent> events = engine_->step();
  const auto now = Clock::now();
  std::vector<TextEvent> out;
  out.reserve(events.size());
  for (const StepEvent& ev : events) on_event(ev, now, out);
  return out;
}

void TextEngine::on_event(const StepEvent& ev, Clock::time_point now, std::vector<TextEvent>& out) {
  auto it = requests_.find(ev.request);
  if (it == requests_.end()) return;  // aborted meanwhile
  Request& req = it->second;
  Branch& b = req.branches.at(size_t(ev.branch));
  if (b.done) return;
  TextEvent te{ev.request, ev.branch, {}, ev.token, std::nullopt, std::nullopt};
  b.result.cached_tokens = te.cached_tokens = ev.cached_tokens;
  if (ev.token) {
    BranchTimings& t = b.result.timings;
    if (b.last_token)
      t.inter_token_seconds.push_back(seconds(now - *b.last_token));
    else
      t.ttft_seconds = seconds(now - req.added);
    b.last_token = now;
    b.result.tokens.push_back(ev.token->id);
    te.text = b.stops.feed(b.detok.push(ev.token->id));
    if (b.stops.stopped()) {
      engine_->stop_branch(ev.request, ev.branch);
      finish(req, b, te, FinishReason::Stop, now);
    }
  }
  if (ev.finish && !b.done) {
    te.text += b.stops.feed(b.detok.flush());
    finish(req, b, te, b.stops.stopped() ? FinishReason::Stop : *ev.finish, now);
  }
  const bool erase = req.open == 0;
  out.push_back(std::move(te));
  if (erase) requests_.erase(it);
}

void TextEngine::finish(Request& req, Branch& b, TextEvent& ev, FinishReason reason,
                        Clock::time_point now) {
  ev.text += b.stops.finish();
  b.result.text = b.stops.text();
  b.result.finish = reason;
  ev.stop_index = b.stops.matched();
  b.result.timings.total_seconds = seconds(now - req.added);
  b.done = true;
  --req.open;
  ev.result = std::move(b.result);
}

bool TextEngine::abort(RequestId id) {
  requests_.erase(id);
  return engine_->abort(id);
}

uint64_t TextEngine::seed(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? 0 : it->second.seed;
}

}  // namespace kvforge
