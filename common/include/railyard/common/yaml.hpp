// A yaml-cpp node that remembers its file, line and dotted path, so every error it raises names all three.
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/common/units.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace railyard {

class YamlNode {
public:
  YamlNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path);

  /// Parses a file (read_input_file: not a folder, at most 64 MiB); a syntax error becomes an InputError with the
  /// line yaml-cpp reports. Also refused, with the line, where yaml-cpp would accept them silently: invalid UTF-8 or
  /// control characters, no document or more than one (yaml-cpp reads the first and drops the rest), a key given
  /// twice (yaml-cpp keeps one), a key that is a list or a map, and aliases expanding to far more values than the
  /// text holds.
  static YamlNode load_file(const std::string& path);
  /// Parses text held in memory, with the same checks; `name` stands for the file in messages.
  static YamlNode load_string(const std::string& text, const std::string& name);

  [[nodiscard]] bool has(std::string_view key) const;
  /// Required child: missing is an InputError naming the key.
  [[nodiscard]] YamlNode at(std::string_view key) const;
  [[nodiscard]] std::optional<YamlNode> get(std::string_view key) const;
  [[nodiscard]] std::vector<YamlNode> items() const; ///< elements of a sequence (error if not a sequence)
  [[nodiscard]] std::vector<std::string> keys() const;

  [[nodiscard]] bool is_map() const { return node_.IsMap(); }
  [[nodiscard]] bool is_sequence() const { return node_.IsSequence(); }
  [[nodiscard]] bool is_scalar() const { return node_.IsScalar(); }

  [[nodiscard]] std::string as_string() const;
  /// A whole number in [min, max], the range the field's consumer can take (an int count, a channel number); out of
  /// range, the message names the field and the range, and `why` (e.g. "NCCL's MAXCHANNELS") when given.
  [[nodiscard]] std::int64_t as_int(std::int64_t min, std::int64_t max, std::string_view why = {}) const;
  /// A 64-bit unsigned whole number (seeds): 0..2^64-1.
  [[nodiscard]] std::uint64_t as_uint64() const;
  /// A finite number (NaN, inf, hexadecimal and values beyond a double are refused).
  [[nodiscard]] double as_double() const;
  [[nodiscard]] bool as_bool() const;
  // Units and the ranges of units.hpp (limits): a size 0..2^53 B, a time 0..1e6 s, a bandwidth above 0 up to 1e15 B/s.
  [[nodiscard]] Bytes as_bytes() const;          ///< "4 MiB", "1 GB" or a plain count of bytes
  [[nodiscard]] Seconds as_seconds() const;      ///< "1.5 us"; a unit is required
  [[nodiscard]] BytesPerSec as_bandwidth() const; ///< "400 Gb/s", "50 GB/s"; a unit is required

  /// Optional scalars with defaults.
  [[nodiscard]] std::string string_or(std::string_view key, const std::string& fallback) const;
  [[nodiscard]] std::int64_t int_in(std::string_view key, std::int64_t min, std::int64_t max,
                                    std::int64_t fallback) const;
  [[nodiscard]] double double_or(std::string_view key, double fallback) const;
  [[nodiscard]] bool bool_or(std::string_view key, bool fallback) const;

  /// Every key of this map must be one of `allowed`; an unknown one is an error that lists the allowed keys and
  /// suggests the closest spelling.
  void expect_keys(std::initializer_list<std::string_view> allowed) const;

  [[noreturn]] void fail(const std::string& rule, const std::string& fix) const;
  [[nodiscard]] InputLocation where() const;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const YAML::Node& raw() const { return node_; }

private:
  YAML::Node node_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

/// Levenshtein-closest candidate, for "did you mean" hints. Empty when nothing is close.
std::string closest_spelling(std::string_view word, const std::vector<std::string>& candidates);

} // namespace railyard
