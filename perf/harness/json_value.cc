#include "harness/json_value.h"

#include <cmath>
#include <cstdio>

namespace xccl_perf {

std::string JsonQuote(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char escape[8];
          snprintf(escape, sizeof(escape), "\\u%04x", c);
          out += escape;
        } else {
          out += static_cast<char>(c);  // UTF-8 passes through unchanged
        }
    }
  }
  return out + "\"";
}

JsonObject& JsonObject::Raw(const std::string& key, std::string json) {
  fields_.emplace_back(key, std::move(json));
  return *this;
}

JsonObject& JsonObject::String(const std::string& key, const std::string& value) {
  return Raw(key, JsonQuote(value));
}

JsonObject& JsonObject::Int(const std::string& key, int64_t value) {
  return Raw(key, std::to_string(value));
}

JsonObject& JsonObject::Number(const std::string& key, double value) {
  if (!std::isfinite(value)) return Null(key);
  char text[32];
  // Enough digits that a reader recovers the value the table was printed from.
  snprintf(text, sizeof(text), "%.10g", value);
  return Raw(key, text);
}

JsonObject& JsonObject::Bool(const std::string& key, bool value) {
  return Raw(key, value ? "true" : "false");
}

JsonObject& JsonObject::Null(const std::string& key) { return Raw(key, "null"); }

JsonObject& JsonObject::Object(const std::string& key, const JsonObject& value) {
  return Raw(key, value.Text());
}

JsonObject& JsonObject::Array(const std::string& key, const std::vector<JsonObject>& values) {
  std::string json = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) json += ", ";
    json += values[i].Text();
  }
  return Raw(key, json + "]");
}

JsonObject& JsonObject::Strings(const std::string& key, const std::vector<std::string>& values) {
  std::string json = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) json += ", ";
    json += JsonQuote(values[i]);
  }
  return Raw(key, json + "]");
}

std::string JsonObject::Text() const {
  std::string json = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i > 0) json += ", ";
    json += JsonQuote(fields_[i].first) + ": " + fields_[i].second;
  }
  return json + "}";
}

}  // namespace xccl_perf
