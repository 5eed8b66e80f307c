#include "app/chat/jinja_lexer.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "app/chat/jinja_error.h"
#include "app/tokenizer/utf8.h"

namespace kvforge::jinja {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

int count_newlines(std::string_view s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// Position of the next "{{", "{%" or "{#" at or after `from`, or npos.
size_t find_tag_open(std::string_view src, size_t from) {
  for (size_t p = src.find('{', from); p != std::string_view::npos; p = src.find('{', p + 1)) {
    if (p + 1 < src.size() && (src[p + 1] == '{' || src[p + 1] == '%' || src[p + 1] == '#'))
      return p;
  }
  return std::string_view::npos;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The character a one-letter Python escape stands for (\n, \t, \\, \' ...), if it is one.
std::optional<char> simple_escape(char e) {
  switch (e) {
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case 'r':
      return '\r';
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    case 'a':
      return '\a';
    case '0':
      return '\0';
    case '\\':
      return '\\';
    case '\'':
      return '\'';
    case '"':
      return '"';
    default:
      return std::nullopt;
  }
}

class TagLexer {
 public:
  TagLexer(std::string_view src, size_t pos, int line, std::vector<Token>& out)
      : src_(src), pos_(pos), line_(line), out_(out) {}

  // Lexes expression tokens up to the closing delimiter ("}}" or "%}"); returns
  // whether the closer had a '-' (strip whitespace after the tag).
  bool lex_until(char closer_first) {
    const int open_line = line_;
    int brace_depth = 0;
    while (true) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= src_.size())
        throw TemplateError(open_line, closer_first == '}' ? "unterminated '{{' (no '}}')"
                                                           : "unterminated '{%' (no '%}')");
      if (brace_depth == 0 || closer_first == '%') {
        if (closes_at(pos_, closer_first)) {
          pos_ += 2;
          return false;
        }
        if (src_[pos_] == '-' && closes_at(pos_ + 1, closer_first)) {
          pos_ += 3;
          return true;
        }
      }
      const char c = src_[pos_];
      if (is_name_start(c)) {
        size_t end = pos_;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        push(TokenKind::kName, std::string(src_.substr(pos_, end - pos_)));
        pos_ = end;
      } else if (is_digit(c)) {
        lex_number();
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        lex_operator(brace_depth);
      }
    }
  }

  size_t pos() const { return pos_; }
  int line() const { return line_; }

 private:
  bool closes_at(size_t p, char closer_first) const {
    return p + 1 < src_.size() && src_[p] == closer_first && src_[p + 1] == '}';
  }

  void push(TokenKind kind, std::string text) { out_.push_back({kind, std::move(text), line_}); }

  void lex_number() {
    size_t end = pos_;
    while (end < src_.size() && is_digit(src_[end])) ++end;
    bool is_float = false;
    if (end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1])) {
      is_float = true;
      ++end;
      while (end < src_.size() && is_digit(src_[end])) ++end;
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t e = end + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && is_digit(src_[e])) {
        is_float = true;
        end = e;
        while (end < src_.size() && is_digit(src_[end])) ++end;
      }
    }
    push(is_float ? TokenKind::kFloat : TokenKind::kInt,
         std::string(src_.substr(pos_, end - pos_)));
    pos_ = end;
  }

  // Python string-literal escapes: \n \t \r \\ \' \" \xHH \uXXXX \UXXXXXXXX...;
  // an unknown escape keeps its backslash, as Python does.
  void lex_string(char quote) {
    const int start_line = line_;
    std::string value;
    size_t p = pos_ + 1;
    while (true) {
      if (p >= src_.size()) throw TemplateError(start_line, "unterminated string literal");
      const char c = src_[p];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\') {
        value += c;
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) throw TemplateError(start_line, "unterminated string literal");
      const char e = src_[p + 1];
      p += 2;
      if (const std::optional<char> plain = simple_escape(e)) {
        value += *plain;
      } else if (e == '\n') {
        ++line_;  // line continuation
      } else if (e == 'x' || e == 'u' || e == 'U') {
        p = lex_code_point_escape(e, p, value);
      } else {
        value += '\\';
        value += e;
      }
    }
    out_.push_back({TokenKind::kString, std::move(value), start_line});
    pos_ = p + 1;
  }

  // The hex digits of \xHH, \uXXXX or \UXXXXXXXX from `p`, appended as UTF-8;
  // returns the position after them.
  size_t lex_code_point_escape(char e, size_t p, std::string& value) const {
    const size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
    uint32_t cp = 0;
    for (size_t i = 0; i < digits; ++i) {
      const int h = p + i < src_.size() ? hex_value(src_[p + i]) : -1;
      if (h < 0) throw TemplateError(line_, std::string("truncated \\") + e + " escape in string");
      cp = cp * 16 + static_cast<uint32_t>(h);
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      throw TemplateError(line_, "escape names an invalid code point");
    append_utf8(value, static_cast<char32_t>(cp));
    return p + digits;
  }

  void lex_operator(int& brace_depth) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", "<=", ">="};
    for (std::string_view op : kTwo) {
      if (src_.substr(pos_, 2) == op) {
        push(TokenKind::kOperator, std::string(op));
        pos_ += 2;
        return;
      }
    }
    const char c = src_[pos_];
    if (std::string_view("+-*/%~<>=()[]{}.,:|!").find(c) == std::string_view::npos) {
      std::string shown =
          (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
              ? "byte " + std::to_string(static_cast<unsigned char>(c))
              : std::string("'") + c + "'";
      throw TemplateError(line_, "unexpected character " + shown + " inside a tag");
    }
    if (c == '{') ++brace_depth;
    if (c == '}') brace_depth = std::max(0, brace_depth - 1);
    push(TokenKind::kOperator, std::string(1, c));
    ++pos_;
  }

  std::string_view src_;
  size_t pos_;
  int line_;
  std::vector<Token>& out_;
};

void strip_trailing_whitespace(std::string& s) {
  while (!s.empty() && is_space(s.back())) s.pop_back();
}

// lstrip_blocks: drop spaces/tabs between the start of the line and the tag.
void lstrip_line(std::string& text, bool line_starting) {
  const size_t nl = text.rfind('\n');
  const size_t from = nl == std::string::npos ? 0 : nl + 1;
  if (nl == std::string::npos && !line_starting) return;
  for (size_t i = from; i < text.size(); ++i)
    if (text[i] != ' ' && text[i] != '\t') return;
  text.resize(from);
}

// After `{% raw %}`: everything up to `{% endraw %}` is text.
size_t lex_raw_body(std::string_view src, size_t pos, int& line, std::vector<Token>& out,
                    bool& strip_after) {
  for (size_t p = src.find("{%", pos); p != std::string_view::npos; p = src.find("{%", p + 2)) {
    size_t q = p + 2;
    const bool strip_before = q < src.size() && src[q] == '-';
    if (q < src.size() && (src[q] == '-' || src[q] == '+')) ++q;
    while (q < src.size() && is_space(src[q])) ++q;
    if (src.substr(q, 6) != "endraw") continue;
    q += 6;
    while (q < src.size() && is_space(src[q])) ++q;
    strip_after = q < src.size() && src[q] == '-';
    if (strip_after) ++q;
    if (src.substr(q, 2) != "%}") continue;
    std::string body(src.substr(pos, p - pos));
    if (strip_before) strip_trailing_whitespace(body);
    line += count_newlines(src.substr(pos, q + 2 - pos));
    if (!body.empty()) out.push_back({TokenKind::kText, std::move(body), line});
    return q + 2;
  }
  throw TemplateError(line, "unterminated '{% raw %}' (no '{% endraw %}')");
}

// Splits a template into text and the tokens of its tags, applying the
// whitespace control of '-', '+', trim_blocks and lstrip_blocks.
class TemplateLexer {
 public:
  explicit TemplateLexer(std::string_view source) : src_(source) {}

  std::vector<Token> lex() {
    while (pos_ <= src_.size()) {
      const size_t open = find_tag_open(src_, pos_);
      lex_text(open);
      if (open == std::string_view::npos) break;
      const char kind = src_[open + 1];
      const char modifier = open + 2 < src_.size() ? src_[open + 2] : '\0';
      const size_t body = open + 2 + ((modifier == '-' || modifier == '+') ? 1 : 0);
      if (kind == '#')
        skip_comment(open, body);
      else
        lex_tag(kind == '%', body);
    }
    out_.push_back({TokenKind::kEnd, "", line_});
    return std::move(out_);
  }

 private:
  // The text from pos_ up to the tag at `open` (or to the end if npos).
  void lex_text(size_t open) {
    const size_t text_end = open == std::string_view::npos ? src_.size() : open;
    std::string text(src_.substr(pos_, text_end - pos_));
    const int text_line = line_;
    line_ += count_newlines(text);
    if (strip_leading_) {
      const auto first =
          std::find_if(text.begin(), text.end(), [](char c) { return !is_space(c); });
      text.erase(text.begin(), first);
    } else if (trim_newline_ && !text.empty() && text.front() == '\n') {
      text.erase(0, 1);
      line_starting_ = true;
    }
    if (open != std::string_view::npos) {
      const char kind = src_[open + 1];
      const char modifier = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (modifier == '-')
        strip_trailing_whitespace(text);
      else if ((kind == '%' || kind == '#') && modifier != '+')
        lstrip_line(text, line_starting_);
    }
    if (!text.empty()) out_.push_back({TokenKind::kText, std::move(text), text_line});
  }

  // A '{#' comment whose content starts at `body`.
  void skip_comment(size_t open, size_t body) {
    const size_t close = src_.find("#}", body);
    if (close == std::string_view::npos) throw TemplateError(line_, "unterminated comment '{#'");
    line_ += count_newlines(src_.substr(open, close - open));
    strip_leading_ = close > body && src_[close - 1] == '-';
    trim_newline_ = !strip_leading_;
    line_starting_ = false;
    pos_ = close + 2;
  }

  // A '{%' block or '{{' expression whose content starts at `body`.
  void lex_tag(bool is_block, size_t body) {
    out_.push_back({is_block ? TokenKind::kBlockBegin : TokenKind::kVarBegin, "", line_});
    const size_t first_token = out_.size();
    TagLexer tag(src_, body, line_, out_);
    strip_leading_ = tag.lex_until(is_block ? '%' : '}');
    pos_ = tag.pos();
    line_ = tag.line();
    out_.push_back({is_block ? TokenKind::kBlockEnd : TokenKind::kVarEnd, "", line_});
    trim_newline_ = is_block && !strip_leading_;
    line_starting_ = false;
    if (is_block && out_.size() == first_token + 2 && out_[first_token].kind == TokenKind::kName &&
        out_[first_token].text == "raw") {
      out_.resize(first_token - 1);
      lex_raw_block();
    }
  }

  // After `{% raw %}` (its tokens dropped): the body as one text, up to `{% endraw %}`.
  void lex_raw_block() {
    if (strip_leading_) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
    } else if (pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
      ++line_;
    }
    pos_ = lex_raw_body(src_, pos_, line_, out_, strip_leading_);
    trim_newline_ = !strip_leading_;
  }

  std::string_view src_;
  std::vector<Token> out_;
  size_t pos_ = 0;
  int line_ = 1;
  bool strip_leading_ = false;  // the previous tag ended with '-'
  bool trim_newline_ = false;   // the previous tag was a block or comment (trim_blocks)
  bool line_starting_ = true;   // the text about to be read starts a line
};

}  // namespace

std::vector<Token> lex_template(std::string_view source) {
  if (!source.empty() && source.back() == '\n') source.remove_suffix(1);
  return TemplateLexer(source).lex();
}

std::string describe_token(const Token& t) {
  switch (t.kind) {
    case TokenKind::kText:
      return "text";
    case TokenKind::kVarBegin:
      return "'{{'";
    case TokenKind::kVarEnd:
      return "'}}'";
    case TokenKind::kBlockBegin:
      return "'{%'";
    case TokenKind::kBlockEnd:
      return "'%}'";
    case TokenKind::kName:
      return "'" + t.text + "'";
    case TokenKind::kString:
      return "string literal";
    case TokenKind::kInt:
    case TokenKind::kFloat:
      return "number " + t.text;
    case TokenKind::kOperator:
      return "'" + t.text + "'";
    case TokenKind::kEnd:
      return "end of template";
  }
  return "?";
}

}  // namespace kvforge::jinja
