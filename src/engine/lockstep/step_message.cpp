#include "engine/lockstep/step_message.h"

#include <cstring>
#include <stdexcept>

#include "core/byte_codec.h"
#include "engine/lockstep/grammar_wire.h"
#include "engine/sampling/grammar/grammar_constraint.h"

namespace kvforge {
namespace {

[[noreturn]] void bad_message(std::string_view field, const char* why) {
  throw std::runtime_error("step message from rank 0: " + std::string(field) + " " + why);
}

ByteReader message_reader(const uint8_t* data, size_t bytes) {
  return ByteReader({data, bytes}, [](const ShortRead& s) {
    bad_message(s.what, "runs past the end of the message");
  });
}

// A u64 byte count, then that many bytes of whole `T`s, copied into `out`.
template <class T>
void get_array(ByteReader& r, std::vector<T>& out, const char* field) {
  const std::span<const uint8_t> bytes = r.sized_bytes(field);
  if (bytes.size() % sizeof(T) != 0) bad_message(field, "not a whole number of elements");
  out.resize(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
}

void put_params(ByteWriter& w, const SamplingParams& p) {
  w.put(p.temperature);
  w.put(p.top_k);
  w.put(p.top_p);
  w.put(p.min_p);
  w.put(p.repetition_penalty);
  w.put(p.presence_penalty);
  w.put(p.frequency_penalty);
  w.put(p.penalty_last_n);
  w.put(uint8_t(p.seed.has_value()));
  w.put(p.seed.value_or(0));
  w.put(uint8_t(p.max_tokens.has_value()));
  w.put(int32_t(p.max_tokens.value_or(0)));
  w.put(uint8_t(p.ignore_eos));
  w.put(uint32_t(p.stop.size()));
  for (const std::string& s : p.stop) w.sized_bytes(s.data(), s.size());
  w.put(int8_t(p.context_shift ? int8_t(*p.context_shift) : int8_t(-1)));
  w.put(uint8_t(p.n_keep.has_value()));
  w.put(p.n_keep.value_or(0));
  w.put(uint8_t(p.grammar != nullptr));
  if (p.grammar) put_grammar(w, source_rules(*p.grammar));
}

SamplingParams get_params(ByteReader& r) {
  SamplingParams p;
  p.temperature = r.get<float>("temperature");
  p.top_k = r.get<int>("top_k");
  p.top_p = r.get<float>("top_p");
  p.min_p = r.get<float>("min_p");
  p.repetition_penalty = r.get<float>("repetition_penalty");
  p.presence_penalty = r.get<float>("presence_penalty");
  p.frequency_penalty = r.get<float>("frequency_penalty");
  p.penalty_last_n = r.get<int>("penalty_last_n");
  const bool has_seed = r.get<uint8_t>("seed flag");
  const uint64_t seed = r.get<uint64_t>("seed");
  if (has_seed) p.seed = seed;
  const bool has_max = r.get<uint8_t>("max_tokens flag");
  const int32_t max_tokens = r.get<int32_t>("max_tokens");
  if (has_max) p.max_tokens = max_tokens;
  p.ignore_eos = r.get<uint8_t>("ignore_eos");
  const uint32_t n_stop = r.get<uint32_t>("stop count");
  for (uint32_t i = 0; i < n_stop; ++i) {
    std::vector<char> s;
    get_array(r, s, "stop string");
    p.stop.emplace_back(s.begin(), s.end());
  }
  const auto shift = r.get<int8_t>("context_shift");
  if (shift < -1 || shift > 1) bad_message("context_shift", "is not -1, 0 or 1");
  if (shift >= 0) p.context_shift = shift == 1;
  const bool has_keep = r.get<uint8_t>("n_keep flag");
  const auto n_keep = r.get<int32_t>("n_keep");
  if (has_keep) p.n_keep = n_keep;
  return p;
}

}  // namespace

std::vector<uint8_t> encode_commands(const std::vector<StepCommand>& commands) {
  ByteWriter w;
  for (const StepCommand& c : commands) {
    w.put(uint8_t(c.op));
    if (c.op == StepCommand::Op::Add) {
      w.put(c.add.id);
      w.sized_bytes(c.add.prompt.data(), c.add.prompt.size() * sizeof(int32_t));
      put_params(w, c.add.params);
      w.put(int32_t(c.add.n));
      w.put(uint8_t(c.add.logprobs.enabled));
      w.put(int32_t(c.add.logprobs.top));
    } else {
      w.put(c.id);
      w.put(c.branch);
    }
  }
  return w.take();
}

std::vector<StepCommand> decode_commands(const uint8_t* data, size_t bytes, uint32_t count) {
  ByteReader r = message_reader(data, bytes);
  std::vector<StepCommand> out(count);
  for (StepCommand& c : out) {
    const auto op = r.get<uint8_t>("command op");
    if (op < 1 || op > 3)
      throw std::runtime_error("step message from rank 0: unknown op " + std::to_string(int(op)));
    c.op = StepCommand::Op(op);
    if (c.op == StepCommand::Op::Add) {
      c.add.id = r.get<RequestId>("request id");
      get_array(r, c.add.prompt, "prompt");
      c.add.params = get_params(r);
      if (r.get<uint8_t>("grammar flag")) c.add.rules = std::make_shared<Grammar>(get_grammar(r));
      c.add.n = r.get<int32_t>("n");
      c.add.logprobs.enabled = r.get<uint8_t>("logprobs");
      c.add.logprobs.top = r.get<int32_t>("top logprobs");
    } else {
      c.id = r.get<RequestId>("request id");
      c.branch = r.get<int32_t>("branch");
    }
  }
  if (r.remaining() != 0)
    throw std::runtime_error("step message from rank 0: " + std::to_string(r.remaining()) +
                             " bytes after " + std::to_string(count) + " commands");
  return out;
}

}  // namespace kvforge
