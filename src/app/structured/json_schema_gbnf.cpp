// GCC 12 reports a false -Wrestrict in std::string's operator+ ("lit" + str),
// which grammar text is built from throughout this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include "app/structured/json_schema_gbnf.h"

#include <set>
#include <unordered_map>
#include <vector>

#include "app/structured/json_primitives_gbnf.h"
#include "app/structured/regex_gbnf.h"
#include "engine/sampling/grammar/grammar_error.h"

namespace kvforge {
namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string>& known_keywords() {
  static const std::set<std::string> k = {
      "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems",
      "maxItems", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions",
      "nullable", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
      "exclusiveMinimum", "exclusiveMaximum",
      // annotations: no effect on what validates
      "title", "description", "$schema", "$id", "$comment", "default", "examples", "deprecated",
      "readOnly", "writeOnly"};
  return k;
}

std::string sanitize(const std::string& hint) {
  std::string out;
  for (char c : hint)
    out += ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '-';
  if (out.empty() || out.size() > 40) out = "r" + out.substr(0, 39);
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  return out;
}

class SchemaConverter {
 public:
  // Rule names are `prefix` + a name from the schema; `prefix` keeps the
  // rules of several schemas in one grammar apart.
  SchemaConverter(const Json& root, const JsonSchemaLimits& limits, std::string prefix = "")
      : root_(root), limits_(limits), prefix_(std::move(prefix)) {
    for (const auto& [name, body] : json_primitive_rules()) names_.insert(name);
    names_.insert(prefix_.empty() ? "root" : prefix_);
  }

  // "top ::= ..." and the schema's own rules, without the shared primitives.
  std::string rules(const std::string& top_name) {
    const std::string top = visit(root_, "#", 0);
    std::string out = top_name + " ::= " + top + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  [[noreturn]] static void fail(const std::string& what, const std::string& path) {
    throw GrammarError("json_schema: " + what + " at " + path);
  }

  std::string reserve(const std::string& hint) {
    if (rules_.size() >= limits_.max_rules)
      fail("more than " + std::to_string(limits_.max_rules) + " grammar rules", "#");
    std::string name = sanitize(prefix_ + hint);
    for (int i = 1; names_.count(name); ++i)
      name = sanitize(prefix_ + hint) + "-" + std::to_string(i);
    names_.insert(name);
    return name;
  }

  std::string add_rule(const std::string& hint, const std::string& body) {
    const std::string name = reserve(hint);
    rules_.emplace_back(name, body);
    return name;
  }

  std::string visit(const Json& s, const std::string& path, int depth) {
    if (depth > limits_.max_depth)
      fail("schema nested deeper than " + std::to_string(limits_.max_depth), path);
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail("the schema false matches nothing", path);
      return "value";
    }
    if (!s.is_object()) fail("a schema must be an object or a boolean", path);
    for (const auto& [key, v] : s.items())
      if (!known_keywords().count(key)) fail("unsupported keyword '" + key + "'", path);
    if (s.contains("$ref")) return visit_ref(s, path, depth);
    std::string expr = visit_value(s, path, depth);
    if (s.value("nullable", false)) expr = "(" + expr + " | null)";
    return expr;
  }

  std::string visit_value(const Json& s, const std::string& path, int depth) {
    if (s.contains("const")) return literal(s["const"]);
    if (s.contains("enum")) return visit_enum(s["enum"], path);
    for (const char* k : {"anyOf", "oneOf"}) {
      if (!s.contains(k)) continue;
      if (!s[k].is_array() || s[k].empty())
        fail(std::string(k) + " must be a non-empty array", path);
      std::vector<std::string> alts;
      for (size_t i = 0; i < s[k].size(); ++i)
        alts.push_back(visit(s[k][i], path + "/" + k + "/" + std::to_string(i), depth + 1));
      return add_rule(k, join(alts, " | "));
    }
    if (s.contains("allOf")) return visit_all_of(s, path, depth);
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) return visit_type(t.get<std::string>(), s, path, depth);
      if (!t.is_array() || t.empty()) fail("type must be a string or a non-empty array", path);
      std::vector<std::string> alts;
      for (const Json& one : t) {
        if (!one.is_string()) fail("type must list strings", path);
        alts.push_back(visit_type(one.get<std::string>(), s, path, depth));
      }
      return "(" + join(alts, " | ") + ")";
    }
    if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required"))
      return visit_type("object", s, path, depth);
    if (s.contains("items") || s.contains("prefixItems"))
      return visit_type("array", s, path, depth);
    return "value";
  }

  std::string literal(const Json& v) { return gbnf_literal(v.dump()) + " space"; }

  std::string visit_enum(const Json& values, const std::string& path) {
    if (!values.is_array() || values.empty()) fail("enum must be a non-empty array", path);
    if (values.size() > limits_.max_enum)
      fail("enum of " + std::to_string(values.size()) + " values, at most " +
               std::to_string(limits_.max_enum) + " allowed",
           path);
    std::vector<std::string> alts;
    for (const Json& v : values) alts.push_back(gbnf_literal(v.dump()));
    return add_rule("enum", "(" + join(alts, " | ") + ") space");
  }

  std::string visit_ref(const Json& s, const std::string& path, int depth) {
    const std::string ref = s["$ref"].is_string() ? s["$ref"].get<std::string>() : "";
    for (const auto& [key, v] : s.items())
      if (key != "$ref" && key != "$defs" && key != "definitions" && key != "title" &&
          key != "description" && key != "$schema" && key != "$id" && key != "$comment")
        fail("keyword '" + key + "' beside $ref is not supported", path);
    const auto memo = ref_rules_.find(ref);
    if (memo != ref_rules_.end()) return memo->second;
    if (ref.empty() || ref[0] != '#')
      fail("$ref '" + ref + "': only local references (#...)", path);
    Json::json_pointer ptr;
    try {
      ptr = Json::json_pointer(ref.substr(1));
    } catch (const std::exception&) {
      fail("$ref '" + ref + "' is not a JSON pointer", path);
    }
    if (!root_.contains(ptr)) fail("$ref '" + ref + "' points to nothing", path);
    const std::string name = reserve(ref.size() > 1 ? ref.substr(ref.rfind('/') + 1) : "root-ref");
    ref_rules_[ref] = name;
    const size_t slot = rules_.size();
    rules_.emplace_back(name, "");
    const std::string body = visit(root_.at(ptr), ref, depth + 1);
    rules_[slot].second = body;
    return name;
  }

  std::string visit_type(const std::string& type, const Json& s, const std::string& path,
                         int depth) {
    if (type == "string") return visit_string(s, path);
    if (type == "integer" || type == "number") return visit_number(s, type == "integer", path);
    if (type == "boolean") return "boolean";
    if (type == "null") return "null";
    if (type == "object") return visit_object(s, path, depth);
    if (type == "array") return visit_array(s, path, depth);
    fail("unknown type '" + type + "'", path);
  }

  std::string visit_string(const Json& s, const std::string& path) {
    const bool lengths = s.contains("minLength") || s.contains("maxLength");
    if (s.contains("format")) {
      const std::string f = s["format"].is_string() ? s["format"].get<std::string>() : "";
      if (lengths || s.contains("pattern"))
        fail("format with pattern or minLength/maxLength is not supported", path);
      auto body = string_format_gbnf(f);
      if (!body) fail("unsupported format '" + f + "'", path);
      return add_rule(f, *body);
    }
    if (s.contains("pattern")) {
      if (lengths) fail("pattern with minLength/maxLength is not supported", path);
      if (!s["pattern"].is_string()) fail("pattern must be a string", path);
      return add_rule("pattern", regex_string_gbnf(s["pattern"].get<std::string>()));
    }
    if (!lengths) return "string";
    const size_t min = count(s, "minLength", 0, path);
    std::optional<size_t> max;
    if (s.contains("maxLength")) max = count(s, "maxLength", 0, path);
    if (max && *max < min) fail("maxLength below minLength", path);
    return add_rule("string", string_length_gbnf(min, max));
  }

  size_t count(const Json& s, const char* key, size_t fallback, const std::string& path) {
    if (!s.contains(key)) return fallback;
    if (!s[key].is_number_unsigned() || s[key].get<uint64_t>() > 10000)
      fail(std::string(key) + " must be an integer in [0, 10000]", path);
    return s[key].get<size_t>();
  }

  std::string visit_number(const Json& s, bool integer, const std::string& path) {
    std::optional<double> lo, hi;
    bool lo_x = false, hi_x = false;
    auto num = [&](const char* k) {
      if (!s[k].is_number()) fail(std::string(k) + " must be a number", path);
      return s[k].get<double>();
    };
    if (s.contains("minimum")) lo = num("minimum");
    if (s.contains("maximum")) hi = num("maximum");
    if (s.contains("exclusiveMinimum")) {
      if (s["exclusiveMinimum"].is_boolean())
        lo_x = s["exclusiveMinimum"].get<bool>();
      else
        lo = num("exclusiveMinimum"), lo_x = true;
    }
    if (s.contains("exclusiveMaximum")) {
      if (s["exclusiveMaximum"].is_boolean())
        hi_x = s["exclusiveMaximum"].get<bool>();
      else
        hi = num("exclusiveMaximum"), hi_x = true;
    }
    if (!lo && !hi) return integer ? "integer" : "number";
    try {
      return add_rule(integer ? "integer" : "number",
                      number_range_gbnf(lo, lo_x, hi, hi_x, integer));
    } catch (const GrammarError& e) {
      fail(std::string(e.what()).substr(13), path);
    }
  }

  std::string visit_object(const Json& s, const std::string& path, int depth);
  std::string object_members(const std::vector<std::pair<std::string, bool>>& props);
  std::string visit_all_of(const Json& s, const std::string& path, int depth);
  std::string visit_array(const Json& s, const std::string& path, int depth);

  const Json& root_;
  const JsonSchemaLimits& limits_;
  std::string prefix_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> names_;
  std::unordered_map<std::string, std::string> ref_rules_;
};

// Declared properties only (fewer keys always validate): required ones in
// order, then each optional one or not. With no properties, any keys whose
// values match additionalProperties (any value if absent or true).
std::string SchemaConverter::visit_object(const Json& s, const std::string& path, int depth) {
  for (const char* k : {"properties", "required"})
    if (s.contains(k) && !(k[0] == 'p' ? s[k].is_object() : s[k].is_array()))
      fail(std::string(k) + (k[0] == 'p' ? " must be an object" : " must be an array"), path);
  std::set<std::string> required;
  if (s.contains("required"))
    for (const Json& r : s["required"]) {
      if (!r.is_string()) fail("required must list strings", path);
      required.insert(r.get<std::string>());
    }
  std::vector<std::pair<std::string, bool>> props;  // (key: value, required)
  std::set<std::string> declared;
  auto kv = [&](const std::string& name, const std::string& value) {
    return gbnf_literal(Json(name).dump()) + " space \":\" space " + value;
  };
  if (s.contains("properties"))
    for (const auto& [name, sub] : s["properties"].items()) {
      declared.insert(name);
      const std::string v = visit(sub, path + "/properties/" + name, depth + 1);
      props.emplace_back(kv(name, v), required.count(name) > 0);
    }
  for (const std::string& name : required)
    if (!declared.count(name)) props.emplace_back(kv(name, "value"), true);
  std::string inner;
  if (!props.empty()) {
    inner = object_members(props);
  } else {
    const Json addl = s.contains("additionalProperties") ? s["additionalProperties"] : Json(true);
    if (addl.is_boolean() && !addl.get<bool>()) {
      inner = "";
    } else {
      const std::string v = visit(addl, path + "/additionalProperties", depth + 1);
      const std::string pair = "any-string \":\" space " + v;
      inner = "(" + pair + " (\",\" space " + pair + "){0,5})?";
    }
  }
  return add_rule("object", "\"{\" space " + inner + " \"}\" space");
}

// Members in declared order, required ones always, optional ones or not.
// more[i]: the members from i on after one was written (each with its
// comma); first[i]: from i on before any was written. Linear in the count.
std::string SchemaConverter::object_members(
    const std::vector<std::pair<std::string, bool>>& props) {
  const size_t n = props.size();
  std::vector<std::string> more(n + 1), first(n + 1);
  for (size_t i = n; i-- > 0;) {
    const auto& [member, required] = props[i];
    std::string body = required ? "\",\" space " + member : "(\",\" space " + member + ")?";
    if (!more[i + 1].empty()) body += " " + more[i + 1];
    more[i] = add_rule("more", body);
    std::string start = member + (more[i + 1].empty() ? "" : " " + more[i + 1]);
    if (required)
      first[i] = start;
    else
      first[i] =
          add_rule("members", start + " | " + (first[i + 1].empty() ? "\"\"" : first[i + 1]));
  }
  return first[0];
}

// allOf of object schemas (and $refs to them): one object with every
// property and every required name.
std::string SchemaConverter::visit_all_of(const Json& s, const std::string& path, int depth) {
  if (!s["allOf"].is_array() || s["allOf"].empty()) fail("allOf must be a non-empty array", path);
  Json merged = {{"type", "object"}, {"properties", Json::object()}, {"required", Json::array()}};
  std::vector<const Json*> parts;
  for (const Json& sub : s["allOf"]) parts.push_back(&sub);
  parts.push_back(&s);
  for (size_t i = 0; i < parts.size(); ++i) {
    const Json* part = parts[i];
    const std::string where = i + 1 < parts.size() ? path + "/allOf/" + std::to_string(i) : path;
    for (int hops = 0; part->is_object() && part->contains("$ref"); ++hops) {
      const std::string ref = (*part)["$ref"].get<std::string>();
      if (hops > 16 || ref.empty() || ref[0] != '#' ||
          !root_.contains(Json::json_pointer(ref.substr(1))))
        fail("allOf: $ref '" + ref + "' cannot be resolved", where);
      part = &root_.at(Json::json_pointer(ref.substr(1)));
    }
    if (!part->is_object()) fail("allOf: only object schemas can be combined", where);
    for (const auto& [key, v] : part->items()) {
      if (key == "properties") {
        for (const auto& [name, sub] : v.items()) merged["properties"][name] = sub;
      } else if (key == "required") {
        for (const Json& r : v) merged["required"].push_back(r);
      } else if (key == "type") {
        if (v != "object") fail("allOf: only object schemas can be combined", where);
      } else if (key != "allOf" && key != "additionalProperties" && key != "$defs" &&
                 key != "definitions" && key != "title" && key != "description") {
        fail("allOf: keyword '" + key + "' is not supported in a combined object", where);
      }
    }
  }
  return visit_object(merged, path, depth);
}

// prefixItems as a tuple (cut to maxItems; filled up to minItems with
// `items`), else `items` repeated between minItems and maxItems.
std::string SchemaConverter::visit_array(const Json& s, const std::string& path, int depth) {
  const size_t min = count(s, "minItems", 0, path);
  std::optional<size_t> max;
  if (s.contains("maxItems")) max = count(s, "maxItems", 0, path);
  if (max && *max < min) fail("maxItems below minItems", path);
  const bool items_false =
      s.contains("items") && s["items"].is_boolean() && !s["items"].get<bool>();
  std::string item = "value";
  if (s.contains("items") && !items_false) item = visit(s["items"], path + "/items", depth + 1);
  std::vector<std::string> parts;
  if (s.contains("prefixItems")) {
    if (!s["prefixItems"].is_array()) fail("prefixItems must be an array", path);
    const size_t n = std::min(s["prefixItems"].size(), max.value_or(SIZE_MAX));
    for (size_t i = 0; i < n; ++i)
      parts.push_back(
          visit(s["prefixItems"][i], path + "/prefixItems/" + std::to_string(i), depth + 1));
    if (parts.size() < min && items_false)
      fail("minItems needs more items than prefixItems allows", path);
    while (parts.size() < min) parts.push_back(item);
    return add_rule("tuple", "\"[\" space " + join(parts, " \",\" space ") + " \"]\" space");
  }
  if (items_false && min > 0) fail("minItems needs items, but items is false", path);
  if (items_false || (max && *max == 0)) return add_rule("array", "\"[\" space \"]\" space");
  const std::string more = "(\",\" space " + item + ")";
  std::string reps;
  const size_t lo = min > 0 ? min - 1 : 0;
  reps = max ? "{" + std::to_string(lo) + "," + std::to_string(*max - 1) + "}"
             : "{" + std::to_string(lo) + ",}";
  const std::string list = item + " " + more + reps;
  return add_rule("array", "\"[\" space " + (min > 0 ? list : "(" + list + ")?") + " \"]\" space");
}

}  // namespace

std::string json_schema_value_to_gbnf(const nlohmann::ordered_json& schema,
                                      const JsonSchemaLimits& limits) {
  return SchemaConverter(schema, limits).rules("root") + json_primitives_gbnf();
}

std::string json_schema_rules_gbnf(const nlohmann::ordered_json& schema, const std::string& name,
                                   const JsonSchemaLimits& limits) {
  return SchemaConverter(schema, limits, name + "-").rules(name);
}

std::string json_primitives_gbnf() {
  std::string out;
  for (const auto& [rule, body] : json_primitive_rules()) out += rule + " ::= " + body + "\n";
  return out;
}

std::string json_schema_to_gbnf(std::string_view text, const JsonSchemaLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw GrammarError("json_schema: schema of " + std::to_string(text.size()) +
                       " bytes, at most " + std::to_string(limits.max_bytes) + " allowed");
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw GrammarError(std::string("json_schema: not JSON: ") + e.what());
  }
  return json_schema_value_to_gbnf(schema, limits);
}

std::string json_object_gbnf() { return "root ::= object\n" + json_primitives_gbnf(); }

}  // namespace kvforge
