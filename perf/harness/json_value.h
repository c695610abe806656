// A JSON object written field by field, in insertion order, for the -J files. The benchmarks
// write a handful of flat records, so a small builder serves; nothing here parses JSON.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xccl_perf {

class JsonObject {
 public:
  // Each returns *this, so that a record is built in one expression. Names say the JSON type so
  // that a size_t, an int and a double never pick an overload by accident.
  JsonObject& String(const std::string& key, const std::string& value);
  JsonObject& Int(const std::string& key, int64_t value);
  // Non-finite values (a time of zero gives an infinite bandwidth) become null: JSON has no
  // NaN or Infinity.
  JsonObject& Number(const std::string& key, double value);
  JsonObject& Bool(const std::string& key, bool value);
  JsonObject& Null(const std::string& key);
  JsonObject& Object(const std::string& key, const JsonObject& value);
  JsonObject& Array(const std::string& key, const std::vector<JsonObject>& values);
  JsonObject& Strings(const std::string& key, const std::vector<std::string>& values);

  // The object's text, on one line.
  std::string Text() const;

 private:
  JsonObject& Raw(const std::string& key, std::string json);

  std::vector<std::pair<std::string, std::string>> fields_;  // key, value as JSON text
};

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(const std::string& text);

}  // namespace xccl_perf
