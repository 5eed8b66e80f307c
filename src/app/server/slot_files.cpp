#include "app/server/slot_files.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

#include "app/server/openai_error.h"
#include "app/server/slot_file.h"

namespace kvforge::server {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A slot file is a few pools' worth at most; anything larger is not one.
constexpr uintmax_t kMaxFileBytes = uintmax_t(16) << 30;

double slot_ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Runs `job` on the engine loop's thread and waits for it; an engine
// refusal (std::invalid_argument) becomes `status` with its message. The
// message is copied on the engine thread rather than the exception handed
// through the future: a shared exception object is freed by whichever
// thread drops it last, through a reference count inside libstdc++ that
// ThreadSanitizer cannot see, and the text is all the answer needs.
template <typename Job>
void on_slot_loop(EngineLoop& loop, int status, const char* type, Job job) {
  std::optional<std::string> refused;
  try {
    loop.run_between_steps([&] {
          try {
            job();
          } catch (const std::invalid_argument& e) {
            refused = e.what();
          }
        })
        .get();
  } catch (const std::future_error&) {
    throw ApiError(503, "the server is stopping", "server_error");
  }
  if (refused) throw ApiError(status, *refused, type);
}

std::vector<uint8_t> read_slot_file(const fs::path& path, const std::string& name) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (ec || !fs::exists(st))
    throw ApiError(404, "no slot file '" + name + "' under --slot-save-path", "not_found_error",
                   "filename");
  if (!fs::is_regular_file(st))
    throw ApiError(400, "slot file '" + name + "' is not a regular file (links are not followed)",
                   "invalid_request_error", "filename");
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxFileBytes)
    throw ApiError(400, "slot file '" + name + "' is too large to be a slot file",
                   "invalid_request_error", "filename");
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  if (!in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size)))
    throw ApiError(500, "slot file '" + name + "' could not be read", "server_error");
  return bytes;
}

void write_slot_file(const fs::path& path, const std::vector<uint8_t>& bytes,
                     const std::string& name) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out.flush())
      throw ApiError(500, "slot file '" + name + "' could not be written", "server_error");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw ApiError(500, "slot file '" + name + "': " + ec.message(), "server_error");
}

std::string slot_hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

SlotFiles::SlotFiles(fs::path dir, std::string model)
    : dir_(std::move(dir)), model_(std::move(model)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    throw std::runtime_error("--slot-save-path " + dir_.string() + ": not a directory (" +
                             (ec ? ec.message() : std::string("exists as a file")) + ")");
}

nlohmann::json SlotFiles::save(EngineLoop& loop, size_t slot, const std::string& filename) const {
  const auto t0 = Clock::now();
  SlotFile f;
  f.model = model_;
  on_slot_loop(loop, 501, "not_supported_error", [&] {
    Engine& engine = loop.engine().engine();
    const std::vector<int32_t> held = loop.slot_tokens(slot);
    f.blocks = engine.export_prefix(held);
    f.fingerprint = engine.block_fingerprint();
    // Blocks of EngineOptions::block_size tokens in either mode (static
    // slots: runs of a slot; Engine::block_size() is then the slot's capacity).
    f.tokens.assign(held.begin(),
                    held.begin() + f.blocks.size() * size_t(engine.options().block_size));
  });
  const std::vector<uint8_t> bytes = encode_slot_file(f);
  write_slot_file(dir_ / filename, bytes, filename);
  return {{"id_slot", slot},
          {"filename", filename},
          {"n_saved", f.tokens.size()},
          {"n_written", bytes.size()},
          {"timings", {{"save_ms", slot_ms_since(t0)}}}};
}

nlohmann::json SlotFiles::restore(EngineLoop& loop, size_t slot,
                                  const std::string& filename) const {
  const auto t0 = Clock::now();
  const std::vector<uint8_t> bytes = read_slot_file(dir_ / filename, filename);
  SlotFile f;
  try {
    f = decode_slot_file(bytes);
  } catch (const std::runtime_error& e) {
    throw ApiError(400, "slot file '" + filename + "': " + e.what(), "invalid_request_error",
                   "filename");
  }
  uint64_t ours = 0;
  on_slot_loop(loop, 501, "not_supported_error", [&] {
    Engine& engine = loop.engine().engine();
    ours = engine.block_fingerprint();
    if (ours == 0) engine.import_prefix({}, {});  // throws why this engine cannot
  });
  int32_t restored = 0;
  on_slot_loop(loop, 400, "invalid_request_error", [&] {
    Engine& engine = loop.engine().engine();
    if (f.fingerprint != ours)
      throw std::invalid_argument("slot file '" + filename + "' was saved by model '" + f.model +
                                  "' (blocks " + slot_hex(f.fingerprint) + "); this server runs '" +
                                  model_ + "' (blocks " + slot_hex(ours) +
                                  "): another model, KV format or block size");
    restored = engine.import_prefix(f.tokens, f.blocks);
    loop.set_slot_tokens(slot, {f.tokens.begin(), f.tokens.begin() + restored});
  });
  return {{"id_slot", slot},
          {"filename", filename},
          {"n_restored", restored},
          {"n_read", bytes.size()},
          {"timings", {{"restore_ms", slot_ms_since(t0)}}}};
}

}  // namespace kvforge::server
