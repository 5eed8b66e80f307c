// `kvforge chat --session FILE`: the conversation outlives the process. On
// exit the messages and the token ids they render to are written to FILE
// (JSON, atomically: a temporary file renamed over it); on start an existing
// FILE is loaded and the conversation goes on. The K/V of those tokens is
// not in the file: the next turn's prompt starts with them, so the KV tiers
// restore it (--kv-disk, by default FILE.kv/ next to the session) instead of
// recomputing it.
//
// Format: {"kvforge_session": 1, "messages": [OpenAI chat messages],
//          "tokens": [the history's token ids as last rendered]}.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kvforge::cli {

struct ChatSession {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  std::vector<int32_t> tokens;
};

// The tier directory a session uses when --kv-disk is not given.
std::string session_kv_dir(const std::string& session_file);
// nullopt when the file does not exist; std::runtime_error naming the file
// and the field when it is not a session.
std::optional<ChatSession> load_chat_session(const std::string& path);
// Throws std::runtime_error when the file cannot be written.
void save_chat_session(const std::string& path, const ChatSession& session);

}  // namespace kvforge::cli
