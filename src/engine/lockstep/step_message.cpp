#include "engine/lockstep/step_message.h"

#include <cstring>
#include <stdexcept>
#include <type_traits>

namespace kvforge {
namespace {

class Writer {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = out_.size();
    out_.resize(at + sizeof v);
    std::memcpy(out_.data() + at, &v, sizeof v);
  }
  void put_bytes(const void* p, size_t n) {
    put(uint64_t(n));
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), left_(n) {}
  template <class T>
  T get(const char* field) {
    T v;
    need(sizeof v, field);
    std::memcpy(&v, p_, sizeof v);
    advance(sizeof v);
    return v;
  }
  // A length-prefixed run of `elem`-byte elements, copied into `out`.
  template <class T>
  void get_array(std::vector<T>& out, const char* field) {
    const uint64_t bytes = get<uint64_t>(field);
    need(bytes, field);
    if (bytes % sizeof(T) != 0) fail(field, "not a whole number of elements");
    out.resize(bytes / sizeof(T));
    if (bytes) std::memcpy(out.data(), p_, bytes);
    advance(bytes);
  }
  size_t left() const { return left_; }

 private:
  void need(uint64_t n, const char* field) const {
    if (n > left_) fail(field, "runs past the end of the message");
  }
  [[noreturn]] static void fail(const char* field, const char* why) {
    throw std::runtime_error(std::string("step message from rank 0: ") + field + " " + why);
  }
  void advance(size_t n) {
    p_ += n;
    left_ -= n;
  }
  const uint8_t* p_;
  size_t left_;
};

void put_params(Writer& w, const SamplingParams& p) {
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
  for (const std::string& s : p.stop) w.put_bytes(s.data(), s.size());
}

SamplingParams get_params(Reader& r) {
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
    r.get_array(s, "stop string");
    p.stop.emplace_back(s.begin(), s.end());
  }
  return p;
}

}  // namespace

std::vector<uint8_t> encode_commands(const std::vector<StepCommand>& commands) {
  Writer w;
  for (const StepCommand& c : commands) {
    w.put(uint8_t(c.op));
    if (c.op == StepCommand::Op::Add) {
      w.put(c.add.id);
      w.put_bytes(c.add.prompt.data(), c.add.prompt.size() * sizeof(int32_t));
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
  Reader r(data, bytes);
  std::vector<StepCommand> out(count);
  for (StepCommand& c : out) {
    const auto op = r.get<uint8_t>("command op");
    if (op < 1 || op > 3)
      throw std::runtime_error("step message from rank 0: unknown op " + std::to_string(int(op)));
    c.op = StepCommand::Op(op);
    if (c.op == StepCommand::Op::Add) {
      c.add.id = r.get<RequestId>("request id");
      r.get_array(c.add.prompt, "prompt");
      c.add.params = get_params(r);
      c.add.n = r.get<int32_t>("n");
      c.add.logprobs.enabled = r.get<uint8_t>("logprobs");
      c.add.logprobs.top = r.get<int32_t>("top logprobs");
    } else {
      c.id = r.get<RequestId>("request id");
      c.branch = r.get<int32_t>("branch");
    }
  }
  if (r.left() != 0)
    throw std::runtime_error("step message from rank 0: " + std::to_string(r.left()) +
                             " bytes after " + std::to_string(count) + " commands");
  return out;
}

}  // namespace kvforge
