#include "app/server/slot_actions.h"

#include <algorithm>
#include <charconv>
#include <future>

#include "app/server/json_body_parser.h"
#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

// llama.cpp's fs_validate_filename, in short: a bare file name, never a path.
bool valid_slot_filename(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == ':') return false;
  return true;
}

std::string slot_filename(std::string_view body) {
  nlohmann::ordered_json j;
  try {
    j = parse_json_linear(body, JsonBodyChecks{});
  } catch (const nlohmann::json::exception&) {
  }
  const auto name = j.is_object() ? j.find("filename") : j.end();
  if (!j.is_object() || name == j.end() || !name->is_string())
    throw ApiError(400, "'filename' is required: a string", "invalid_request_error", "filename");
  if (!valid_slot_filename(name->get_ref<const std::string&>()))
    throw ApiError(400, "Invalid filename", "invalid_request_error", "filename");
  return name->get<std::string>();
}

// Forgets what the entry holds, and the K/V the engine keeps of it that no
// running request holds; returns the tokens it held, as llama-server does.
size_t erase_slot(EngineLoop& loop, size_t slot) {
  size_t held = 0;
  try {
    loop.run_between_steps([&] {
          const std::vector<int32_t> tokens = loop.slot_tokens(slot);
          held = tokens.size();
          loop.engine().engine().forget_prefix(tokens);
          loop.set_slot_tokens(slot, {});
        })
        .get();
  } catch (const std::future_error&) {
    throw ApiError(503, "the server is stopping", "server_error");
  }
  return held;
}

}  // namespace

SlotAction parse_slot_action(std::string_view id, std::string_view action, std::string_view body,
                             size_t entries) {
  SlotAction a;
  const auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), a.slot);
  if (ec != std::errc() || end != id.data() + id.size() || a.slot >= entries)
    throw ApiError(400, "Invalid slot ID: '" + std::string(id) + "' (GET /slots lists " +
                            std::to_string(entries) + " slots)");
  a.action = action;
  if (action == "save" || action == "restore")
    a.filename = slot_filename(body);
  else if (action != "erase")
    throw ApiError(400, "Invalid action: '" + std::string(action) + "' (save, restore or erase)",
                   "invalid_request_error", "action");
  return a;
}

nlohmann::json slot_action_response(EngineLoop& loop, const SlotFiles* files, int total_slots,
                                    const std::string& id, const std::string& action,
                                    const std::string& body) {
  const std::vector<EngineLoop::RunningRequest> running = loop.running();
  const size_t entries = std::max(running.size(), static_cast<size_t>(std::max(total_slots, 0)));
  const SlotAction a = parse_slot_action(id, action, body, entries);
  if (a.action != "erase") {
    if (!files)
      throw ApiError(501,
                     "slot " + a.action +
                         " needs `kvforge serve --slot-save-path DIR` (the directory of the slot "
                         "files): without it the server keeps no KV per slot to save or restore. "
                         "The paged engine reuses an earlier prompt's blocks for any request with "
                         "the same prefix by itself (--kv-disk keeps them across restarts)",
                     "not_supported_error");
    return a.action == "save" ? files->save(loop, a.slot, a.filename)
                              : files->restore(loop, a.slot, a.filename);
  }
  if (a.slot < running.size())
    throw ApiError(409,
                   "slot " + id + " is processing request " + std::to_string(running[a.slot].id) +
                       "; erase it once it is idle",
                   "invalid_request_error");
  return {{"id_slot", a.slot}, {"n_erased", erase_slot(loop, a.slot)}};
}

}  // namespace kvforge::server
