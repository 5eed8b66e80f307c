#include "engine/static_pipeline/plan_file.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "core/byte_codec.h"
#include "model/model_fingerprint.h"

namespace kvforge {
namespace {

constexpr char kMagic[8] = {'K', 'V', 'F', 'P', 'L', 'A', 'N', '\0'};
constexpr uint32_t kMaxVariants = 4096;
constexpr uint32_t kMaxBufferName = 256;
constexpr uint32_t kMaxLayers = 1u << 15;  // PlanOp::layer is an i16
constexpr size_t kOpBytes = 1 + 1 + 1 + 2 + 2 + 4 + 2 * kMaxOperands;

// The plan file's reads: the shared bounds-checked reader, whose short reads
// and refusals name the file and say "truncated plan file".
class PlanReader {
 public:
  PlanReader(std::span<const uint8_t> bytes, const std::string& name)
      : r_(bytes,
           [&name](const ShortRead& s) {
             throw PlanError(name + ": truncated plan file: " + std::to_string(s.needed) +
                             " bytes of " + std::string(s.what) + " needed at byte " +
                             std::to_string(s.offset) + ", " + std::to_string(s.left) + " left");
           }),
        name_(name) {}

  template <class T>
  T get(const char* what) {
    return r_.get<T>(what);
  }
  // A count whose items take at least `min_item_bytes` each must fit in what remains.
  uint32_t count(const char* what, uint32_t max, size_t min_item_bytes) {
    const uint32_t n = r_.get<uint32_t>(what);
    if (n > max)
      fail(std::string(what) + " " + std::to_string(n) + " exceeds " + std::to_string(max));
    r_.need(uint64_t(n) * min_item_bytes, what);
    return n;
  }
  std::string string(size_t n, const char* what) { return r_.string(n, what); }
  size_t pos() const { return size_t(r_.offset()); }
  [[noreturn]] void fail(const std::string& what) const {
    throw PlanError(name_ + ": " + what + " (at byte " + std::to_string(pos()) + ")");
  }

 private:
  ByteReader r_;
  const std::string& name_;
};

void write_plan(ByteWriter& w, const Plan& p) {
  w.put(uint8_t(p.kind));
  w.put(p.rows);
  w.put(p.kv_len);
  w.put(p.n_logit_rows);
  w.put(p.arena_bytes);
  w.put(p.matmul_scratch_bytes);
  w.put(p.logits_buffer);
  w.put(p.attention_scratch_buffer);
  w.put(p.row_runs_buffer);
  w.put(uint32_t(p.buffers.size()));
  for (const PlanBuffer& b : p.buffers) {
    w.put(uint16_t(b.name.size()));
    w.bytes(b.name.data(), b.name.size());
    w.put(b.offset);
    w.put(b.bytes);
  }
  w.put(uint32_t(p.ops.size()));
  for (const PlanOp& op : p.ops) {
    w.put(uint8_t(op.code));
    w.put(op.norm);
    w.put(op.next_norm);
    w.put(op.layer);
    w.put(op.next_layer);
    w.put(op.rows);
    for (uint16_t b : op.buffers) w.put(b);
  }
  w.put(uint32_t(p.attention_split.size()));
  for (int32_t s : p.attention_split) w.put(s);
}

Plan read_plan(PlanReader& r) {
  Plan p;
  const uint8_t kind = r.get<uint8_t>("plan kind");
  if (kind > uint8_t(PlanKind::Generate)) r.fail("unknown plan kind " + std::to_string(kind));
  p.kind = PlanKind(kind);
  p.rows = r.get<int32_t>("plan rows");
  p.kv_len = r.get<int32_t>("plan KV length");
  p.n_logit_rows = r.get<int32_t>("plan logit rows");
  p.arena_bytes = r.get<uint64_t>("arena size");
  p.matmul_scratch_bytes = r.get<uint64_t>("matmul scratch size");
  p.logits_buffer = r.get<uint16_t>("logits buffer");
  p.attention_scratch_buffer = r.get<uint16_t>("attention scratch buffer");
  p.row_runs_buffer = r.get<uint16_t>("row runs buffer");
  const uint32_t n_buffers = r.count("buffer count", kNoBuffer, 2 + 16);
  p.buffers.resize(n_buffers);
  for (PlanBuffer& b : p.buffers) {
    const uint16_t len = r.get<uint16_t>("buffer name length");
    if (len > kMaxBufferName) r.fail("buffer name of " + std::to_string(len) + " bytes");
    b.name = r.string(len, "buffer name");
    b.offset = r.get<uint64_t>("buffer offset");
    b.bytes = r.get<uint64_t>("buffer size");
  }
  const uint32_t n_ops = r.count("op count", 1u << 20, kOpBytes);
  p.ops.resize(n_ops);
  for (PlanOp& op : p.ops) {
    const uint8_t code = r.get<uint8_t>("op code");
    if (code >= kOpCodeCount) r.fail("unknown op code " + std::to_string(code));
    op.code = OpCode(code);
    op.norm = r.get<uint8_t>("op norm");
    op.next_norm = r.get<uint8_t>("op next norm");
    op.layer = r.get<int16_t>("op layer");
    op.next_layer = r.get<int16_t>("op next layer");
    op.rows = r.get<int32_t>("op rows");
    for (uint16_t& b : op.buffers) b = r.get<uint16_t>("op operand");
  }
  const uint32_t n_split = r.count("attention split size", 1025, 4);
  p.attention_split.resize(n_split);
  for (int32_t& s : p.attention_split) s = r.get<int32_t>("attention split");
  return p;
}

KvDtype read_kv_dtype(PlanReader& r, const char* what) {
  const uint8_t v = r.get<uint8_t>(what);
  const KvDtype t = KvDtype(v);
  if (kv_dtype_from_name(kv_dtype_name(t)) != t)
    r.fail(std::string("unknown ") + what + " " + std::to_string(v));
  return t;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::vector<uint8_t> serialize_plans(const PlanSet& set) {
  ByteWriter w;
  // Reserving up front also spares GCC 12 a false -Warray-bounds on the first small writes.
  w.reserve(4096);
  w.bytes(kMagic, sizeof kMagic);
  w.put(kPlanFileVersion);
  w.put(set.model_fingerprint);
  w.put(config_fingerprint(set.config));
  const StaticConfig& c = set.config;
  w.put(c.max_prompt_len);
  w.put(c.min_response_len);
  w.put(c.prefill_chunk);
  w.put(uint32_t(c.generate_variants.size()));
  for (int32_t v : c.generate_variants) w.put(v);
  w.put(c.slots);
  w.put(uint8_t(c.kv_format.k));
  w.put(uint8_t(c.kv_format.v));
  w.put(set.n_threads);
  w.put(uint32_t(set.layer_windows.size()));
  for (int32_t window : set.layer_windows) w.put(window);
  w.put(uint32_t(1 + set.generate.size()));
  write_plan(w, set.prefill);
  for (const Plan& p : set.generate) write_plan(w, p);
  Fnv1a64 h;
  h.bytes(w.data(), w.size());
  w.put(h.value());
  return w.take();
}

PlanSet parse_plans(std::span<const uint8_t> bytes, const std::string& name) {
  PlanReader r(bytes, name);
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw PlanError(name + ": not a kvforge plan file (bad magic; expected \"KVFPLAN\")");
  r.string(sizeof kMagic, "magic");
  const uint32_t version = r.get<uint32_t>("version");
  if (version != kPlanFileVersion)
    throw PlanError(name + ": plan file version " + std::to_string(version) +
                    " is not supported (expected " + std::to_string(kPlanFileVersion) +
                    "); recompile it with kvforge compile");
  PlanSet set;
  set.model_fingerprint = r.get<uint64_t>("model fingerprint");
  const uint64_t config_fp = r.get<uint64_t>("configuration fingerprint");
  StaticConfig& c = set.config;
  c.max_prompt_len = r.get<int32_t>("max_prompt_len");
  c.min_response_len = r.get<int32_t>("min_response_len");
  c.prefill_chunk = r.get<int32_t>("prefill_chunk");
  const uint32_t n_variants = r.count("variant count", kMaxVariants, 4);
  c.generate_variants.resize(n_variants);
  for (int32_t& v : c.generate_variants) v = r.get<int32_t>("generate variant");
  c.slots = r.get<int32_t>("slots");
  c.kv_format.k = read_kv_dtype(r, "K dtype");
  c.kv_format.v = read_kv_dtype(r, "V dtype");
  set.n_threads = r.get<int32_t>("thread count");
  const uint32_t n_layers = r.count("layer count", kMaxLayers, 4);
  set.layer_windows.resize(n_layers);
  for (int32_t& window : set.layer_windows) window = r.get<int32_t>("layer window");
  const uint32_t n_plans = r.count("plan count", kMaxVariants + 1, 42);
  if (n_plans != n_variants + 1)
    r.fail(std::to_string(n_plans) + " plans for " + std::to_string(n_variants) + " variants");
  set.prefill = read_plan(r);
  for (uint32_t i = 1; i < n_plans; ++i) set.generate.push_back(read_plan(r));
  const size_t body = r.pos();
  const uint64_t checksum = r.get<uint64_t>("checksum");
  if (r.pos() != bytes.size())
    r.fail(std::to_string(bytes.size() - r.pos()) + " unexpected bytes after the checksum");
  Fnv1a64 h;
  h.bytes(bytes.data(), body);
  if (h.value() != checksum)
    throw PlanError(name + ": checksum mismatch (stored " + hex(checksum) + ", computed " +
                    hex(h.value()) + "): the plan file is corrupted");
  if (config_fingerprint(c) != config_fp)
    throw PlanError(name + ": configuration fingerprint does not match its fields");
  return set;
}

void write_plan_file(const std::filesystem::path& path, const PlanSet& set) {
  const std::vector<uint8_t> bytes = serialize_plans(set);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path.string() + ": cannot open for writing");
  out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error(path.string() + ": write failed");
}

PlanSet load_plans(std::span<const uint8_t> bytes, const std::string& name, const Model& model) {
  PlanSet set = parse_plans(bytes, name);
  const uint64_t fp = model_fingerprint(model);
  if (set.model_fingerprint != fp)
    throw PlanError(name + ": compiled for a different model (plan fingerprint " +
                    hex(set.model_fingerprint) + ", model " + model.file().name() + " " + hex(fp) +
                    "); recompile with kvforge compile -m MODEL");
  try {
    validate_plan_set(set, model);
  } catch (const PlanError& e) {
    throw PlanError(name + ": " + e.what());
  }
  return set;
}

PlanSet load_plan_file(const std::filesystem::path& path, const Model& model) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw PlanError(path.string() + ": cannot open plan file");
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  return load_plans(bytes, path.string(), model);
}

void check_plan_config(const PlanSet& set, const StaticConfig& wanted, const std::string& name) {
  const StaticConfig& c = set.config;
  std::string diff;
  const auto field = [&](const char* flag, const std::string& have, const std::string& want) {
    if (have != want)
      diff += std::string(diff.empty() ? "" : "; ") + flag + " " + have + " in the plan, " + want +
              " requested";
  };
  field("--max-prompt-len", std::to_string(c.max_prompt_len),
        std::to_string(wanted.max_prompt_len));
  field("--min-response-len", std::to_string(c.min_response_len),
        std::to_string(wanted.min_response_len));
  field("--prefill-chunk", std::to_string(c.prefill_chunk), std::to_string(wanted.prefill_chunk));
  field("--generate-variants", format_variant_list(c.generate_variants),
        format_variant_list(wanted.generate_variants));
  field("--static-slots", std::to_string(c.slots), std::to_string(wanted.slots));
  field("--kv-type-k", kv_dtype_name(c.kv_format.k), kv_dtype_name(wanted.kv_format.k));
  field("--kv-type-v", kv_dtype_name(c.kv_format.v), kv_dtype_name(wanted.kv_format.v));
  if (!diff.empty())
    throw PlanError(name + ": compiled for another static configuration: " + diff +
                    "; recompile with kvforge compile or drop the flags");
}

}  // namespace kvforge
