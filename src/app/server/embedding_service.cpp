#include "app/server/embedding_service.h"

#include <chrono>
#include <future>

#include "app/server/openai_error.h"

namespace kvforge::server {
namespace {

// Tokens tokenized beyond the context when an input is cut to it (Ollama's
// "truncate"), so that the cut falls far from where the merges could differ.
constexpr size_t kEmbedTruncationSlack = 16;

[[noreturn]] void embed_too_long(size_t limit) {
  throw bad_param("input",
                  "an input exceeds the context window of " + std::to_string(limit) + " tokens",
                  "context_length_exceeded");
}

// The longest prefix of `s` of at most n bytes that ends on a UTF-8 character boundary.
std::string_view embed_utf8_prefix(std::string_view s, size_t n) {
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

EmbeddingService::EmbeddingService(const Embedder& embedder, CompletionService& completions,
                                   int max_tokens)
    : embedder_(embedder),
      completions_(completions),
      max_tokens_(max_tokens),
      batcher_(embedder, completions.loop()) {}

std::vector<int32_t> EmbeddingService::tokens_of(const EmbeddingInput& input, bool truncate) const {
  const Tokenizer& tok = completions_.tokenizer();
  const auto limit = static_cast<size_t>(max_tokens_);
  std::vector<int32_t> tokens;
  if (const auto* text = std::get_if<std::string>(&input)) {
    // A token covers at most max_token_bytes of text: a longer text is refused,
    // or cut to what its first tokens can cover, before it is tokenized.
    std::string_view view = *text;
    const size_t covered = (limit + kEmbedTruncationSlack) * completions_.max_token_bytes();
    if (view.size() > covered) {
      if (!truncate) embed_too_long(limit);
      view = embed_utf8_prefix(view, covered);
    }
    try {
      // One token past the limit tells "too long" without tokenizing the rest.
      tokens = tok.encode(view, tok.add_bos(), /*parse_special=*/true, limit + 1);
    } catch (const TokenizerError& e) {
      throw bad_param("input", e.what());
    }
  } else {
    tokens = std::get<std::vector<int32_t>>(input);
    for (int32_t t : tokens)
      if (t >= tok.n_vocab())
        throw bad_param("input", "token id " + std::to_string(t) + " is outside the vocabulary (" +
                                     std::to_string(tok.n_vocab()) + " tokens)");
  }
  if (tokens.empty()) throw bad_param("input", "an input is empty after tokenization");
  if (tokens.size() > limit) {
    if (!truncate) embed_too_long(limit);
    tokens.resize(limit);
  }
  return tokens;
}

EmbeddingResult EmbeddingService::embed(const EmbeddingsRequest& r,
                                        const std::function<bool()>& client_gone) {
  std::vector<std::vector<int32_t>> token_lists;
  EmbeddingResult out;
  for (const EmbeddingInput& input : r.inputs) {
    token_lists.push_back(tokens_of(input, r.truncate));
    out.prompt_tokens += static_cast<int>(token_lists.back().size());
  }
  std::vector<std::future<std::vector<float>>> pending;
  for (std::vector<int32_t>& tokens : token_lists)
    pending.push_back(batcher_.submit(std::move(tokens)));
  for (std::future<std::vector<float>>& vector : pending) {
    // Computed whatever the client does (it may share a batch with other requests).
    while (vector.wait_for(std::chrono::milliseconds(20)) != std::future_status::ready)
      if (client_gone && client_gone())
        throw ApiError(499, "the client closed the connection; the request was aborted");
    try {
      out.vectors.push_back(r.dimensions > 0
                                ? shorten_embedding(vector.get(), r.dimensions, embedder_.norm())
                                : vector.get());
    } catch (const std::invalid_argument& e) {
      throw bad_param("input", e.what());
    } catch (const std::out_of_range& e) {
      throw bad_param("input", e.what());
    }
  }
  return out;
}

}  // namespace kvforge::server
