#include "railyard/common/yaml.hpp"

#include "railyard/common/input_file.hpp"
#include "railyard/common/numbers.hpp"

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace railyard {

YamlNode::YamlNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path))
{
}

namespace {

// 1-based line and column of byte `at`.
std::pair<int, int> line_column(const std::string& text, std::size_t at)
{
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < at; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  return {line, static_cast<int>(at - line_start) + 1};
}

// yaml-cpp reads bytes that are not UTF-8 into the values as they are (a name "caf\xff" reaches summary.json, which
// nlohmann then cannot write), and passes control characters through: refuse both at their line. UTF-8 as RFC 3629
// defines it: no overlong forms, no surrogates, nothing above U+10FFFF.
void check_text(const std::string& text, const std::string& name)
{
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
        const auto [line, col] = line_column(text, i);
        throw InputError({name, line, ""}, fmt::format("control character U+{:04X} at column {}", c, col),
                         "remove it; YAML text holds printable characters, tabs and line breaks only");
      }
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0, smallest = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, smallest = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, smallest = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, smallest = 0x10000;
    }
    bool ok = len > 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    ok = ok && cp >= smallest && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      const auto [line, col] = line_column(text, i);
      throw InputError(
          {name, line, ""},
          fmt::format("invalid UTF-8: byte 0x{:02X} at column {} does not start a valid UTF-8 character", c, col),
          "save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8 FILE), or write that character in ASCII");
    }
    i += len;
  }
}

// The 1-based line of the '---' that opens the document whose first value yaml-cpp puts at `mark_line` (0-based).
int document_start_line(const std::string& text, int mark_line)
{
  int line = 0, found = -1;
  for (std::size_t pos = 0; pos < text.size() && (mark_line < 0 || line <= mark_line); ++line) {
    if (text.compare(pos, 3, "---") == 0 &&
        (pos + 3 == text.size() || std::isspace(static_cast<unsigned char>(text[pos + 3]))))
      found = line;
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;
    pos = nl + 1;
  }
  return found >= 0 ? found + 1 : mark_line + 1;
}

const char* node_kind(const YAML::Node& n)
{
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return "empty";
}

// One walk over the document for what yaml-cpp accepts silently: a key given twice (it keeps one), a key that is a
// list, a map or nothing (no field can be named so), and aliases multiplying the values far beyond what the text
// holds (each value takes at least a byte of text without aliases; "billion laughs" would make every later walk
// over the document take forever).
void check_keys(const YAML::Node& n, const std::string& path, const std::string& name, std::size_t& budget)
{
  if (budget == 0)
    throw InputError({name, n.Mark().line + 1, path},
                     "the document expands through aliases (*name) to far more values than its text holds",
                     "write the values out, or alias them in fewer places");
  --budget;
  if (n.IsMap()) {
    std::map<std::string, int> seen; // key -> 1-based line
    for (const auto& kv : n) {
      const int line = kv.first.Mark().line + 1;
      if (!kv.first.IsScalar())
        throw InputError({name, line, path},
                         fmt::format("a key is {}; every key here is a plain name", node_kind(kv.first)),
                         "write the key as a plain name followed by ':', such as 'nodes: 4'");
      const std::string& key = kv.first.Scalar();
      const std::string child = path.empty() ? key : path + "." + key;
      const auto [first, fresh] = seen.emplace(key, line);
      if (!fresh)
        throw InputError({name, line, child},
                         fmt::format("the key '{}' is given twice (first on line {}); YAML would keep only one of "
                                     "the two values",
                                     key, first->second),
                         "keep one of the two lines");
      check_keys(kv.second, child, name, budget);
    }
  } else if (n.IsSequence()) {
    std::size_t i = 0;
    for (const auto& item : n)
      check_keys(item, fmt::format("{}[{}]", path, i++), name, budget);
  }
}

// Where each document of a text starts and where its first value is, from yaml-cpp's event parser.
struct DocumentMarks : YAML::EventHandler {
  YAML::Mark start;
  std::optional<YAML::Mark> first_value;
  void value(const YAML::Mark& m)
  {
    if (!first_value) first_value = m;
  }
  void OnDocumentStart(const YAML::Mark& m) override { start = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { value(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { value(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { value(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override
  {
    value(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override
  {
    value(m);
  }
  void OnMapEnd() override {}
};

// The documents of a text, up to three (a second is refused anyway; the third tells a second document from a stuck
// parser). YAML::LoadAll is not used: on a ',' outside
// brackets yaml-cpp 0.7's parser returns an empty document without consuming the ',', so LoadAll loops forever
// (found by tests/fuzz: a file holding only ',' hung `railyard run`). A document that starts where the previous one
// started is that case, refused at its line.
std::vector<DocumentMarks> document_marks(const std::string& text, const std::string& name)
{
  std::istringstream in(text);
  YAML::Parser parser(in);
  std::vector<DocumentMarks> docs;
  while (docs.size() < 3) {
    DocumentMarks doc;
    if (!parser.HandleNextDocument(doc)) break;
    if (!docs.empty() && doc.start.pos <= docs.back().start.pos) {
      const auto at = static_cast<std::size_t>(std::max(doc.start.pos, 0));
      const std::string what = at < text.size() ? fmt::format("'{}'", text[at]) : std::string("the text");
      throw InputError({name, doc.start.line + 1, ""},
                       fmt::format("malformed YAML: {} at column {} cannot begin a value", what, doc.start.column + 1),
                       "remove it, or quote the value it belongs to; a ',' separates items only inside [ ] or { }");
    }
    docs.push_back(doc);
  }
  return docs;
}

YamlNode load_checked(const std::string& text, const std::string& name)
{
  check_text(text, name);
  YAML::Node root;
  try {
    const std::vector<DocumentMarks> docs = document_marks(text, name);
    // At the line where the text ends, which is where the missing document would have to begin.
    if (docs.empty())
      throw InputError({name, line_column(text, text.size()).first, ""},
                       "the file holds no YAML document: it is empty or holds only comments",
                       "write its content as 'key: value' lines");
    if (docs.size() > 1)
      throw InputError({name, document_start_line(text, docs[1].first_value.value_or(docs[1].start).line), ""},
                       "a second YAML document starts here ('---'); a file holds one document, and the YAML reader "
                       "would read the first and silently ignore the rest",
                       "remove the '---' line and what follows it, or put the second document in a file of its own");
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    throw InputError({name, e.mark.line + 1, ""}, "lists or maps nested deeper than the YAML reader allows",
                     "flatten the nesting; no Railyard input nests more than a few levels");
  } catch (const YAML::ParserException& e) {
    throw InputError({name, e.mark.line + 1, ""}, fmt::format("malformed YAML ({})", e.msg),
                     "fix the YAML syntax at that line (indentation, a missing ':' or an unclosed quote or bracket)");
  }
  std::size_t budget = 4 * text.size() + 4096;
  check_keys(root, "", name, budget);
  return YamlNode(root, std::make_shared<const std::string>(name), "");
}

// load_checked refuses keys that are lists, maps or empty; a YamlNode built another way may still hold one, and
// converting it to text would throw YAML::TypedBadConversion, which is no InputError.
std::string key_text(const YAML::Node& key, const std::shared_ptr<const std::string>& file, const std::string& path)
{
  if (!key.IsScalar())
    throw InputError({file ? *file : "", key.Mark().line >= 0 ? key.Mark().line + 1 : 0, path},
                     "a key is a list, a map or empty, not a name", "write each key as a plain name: 'key: value'");
  return key.as<std::string>();
}
} // namespace

YamlNode YamlNode::load_file(const std::string& path)
{
  return load_checked(read_input_file(path), path);
}

YamlNode YamlNode::load_string(const std::string& text, const std::string& name)
{
  return load_checked(text, name);
}

InputLocation YamlNode::where() const
{
  const int line = node_.IsDefined() && node_.Mark().line >= 0 ? node_.Mark().line + 1 : 0;
  return {file_ ? *file_ : std::string(), line, path_};
}

void YamlNode::fail(const std::string& rule, const std::string& fix) const
{
  throw InputError(where(), rule, fix);
}

bool YamlNode::has(std::string_view key) const
{
  return node_.IsMap() && node_[std::string(key)].IsDefined() && !node_[std::string(key)].IsNull();
}

YamlNode YamlNode::at(std::string_view key) const
{
  if (!node_.IsMap())
    fail("expected a map with the key '" + std::string(key) + "'", "write it as 'key: value' lines under this field");
  const std::string k(key);
  if (!has(key)) fail(fmt::format("missing required field '{}'", k), fmt::format("add '{}:' here", k));
  return YamlNode(node_[k], file_, path_.empty() ? k : path_ + "." + k);
}

std::optional<YamlNode> YamlNode::get(std::string_view key) const
{
  if (!has(key)) return std::nullopt;
  return at(key);
}

std::vector<YamlNode> YamlNode::items() const
{
  if (!node_.IsSequence()) fail("expected a list", "write the entries as '- item' lines");
  std::vector<YamlNode> out;
  out.reserve(node_.size());
  for (size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], file_, fmt::format("{}[{}]", path_, i));
  return out;
}

std::vector<std::string> YamlNode::keys() const
{
  std::vector<std::string> out;
  if (node_.IsMap())
    for (const auto& kv : node_)
      out.push_back(key_text(kv.first, file_, path_));
  return out;
}

std::string YamlNode::as_string() const
{
  if (!node_.IsScalar()) fail("expected a single value", "write a scalar such as 'name: value'");
  return node_.Scalar();
}

std::int64_t YamlNode::as_int(std::int64_t min, std::int64_t max, std::string_view why) const
{
  const std::string s = as_string();
  try {
    return parse_integer(s, min, max);
  } catch (const std::invalid_argument& e) {
    fail(why.empty() ? std::string(e.what()) : fmt::format("{} ({})", e.what(), why),
         fmt::format("write a whole number {}", integer_range_words(min, max)));
  }
}

std::uint64_t YamlNode::as_uint64() const
{
  const std::string s = as_string();
  try {
    return parse_uint64(s);
  } catch (const std::invalid_argument& e) {
    fail(e.what(), "write a whole number from 0 to 18446744073709551615 (2^64-1)");
  }
}

double YamlNode::as_double() const
{
  const std::string s = as_string();
  try {
    return parse_finite(s);
  } catch (const std::invalid_argument& e) {
    fail(e.what(), "write a finite decimal number such as 2.0 or 1e-6");
  }
}

bool YamlNode::as_bool() const
{
  const std::string s = as_string();
  if (s == "true" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "no" || s == "off") return false;
  fail(fmt::format("'{}' is not a boolean", s), "write true or false");
}

Bytes YamlNode::as_bytes() const
{
  try {
    return parse_bytes(as_string());
  } catch (const std::invalid_argument& e) {
    fail(e.what(), "write a size such as '4 MiB', '1 GB' or a count of bytes");
  }
}

Seconds YamlNode::as_seconds() const
{
  try {
    return parse_seconds(as_string());
  } catch (const std::invalid_argument& e) {
    fail(e.what(), "write a time with its unit, such as '1.5 us' or '2 ms'");
  }
}

BytesPerSec YamlNode::as_bandwidth() const
{
  try {
    return parse_bandwidth(as_string());
  } catch (const std::invalid_argument& e) {
    fail(e.what(), "write a bandwidth with its unit, such as '400 Gb/s' or '50 GB/s'");
  }
}

std::string YamlNode::string_or(std::string_view key, const std::string& fallback) const
{
  auto n = get(key);
  return n ? n->as_string() : fallback;
}
std::int64_t YamlNode::int_in(std::string_view key, std::int64_t min, std::int64_t max, std::int64_t fallback) const
{
  auto n = get(key);
  return n ? n->as_int(min, max) : fallback;
}
double YamlNode::double_or(std::string_view key, double fallback) const
{
  auto n = get(key);
  return n ? n->as_double() : fallback;
}
bool YamlNode::bool_or(std::string_view key, bool fallback) const
{
  auto n = get(key);
  return n ? n->as_bool() : fallback;
}

void YamlNode::expect_keys(std::initializer_list<std::string_view> allowed) const
{
  if (!node_.IsMap()) fail("expected a map of 'key: value' lines", "indent the fields of this section under it");
  std::vector<std::string> names(allowed.begin(), allowed.end());
  for (const auto& kv : node_) {
    const auto key = key_text(kv.first, file_, path_);
    if (std::find(names.begin(), names.end(), key) != names.end()) continue;
    const int line = kv.first.Mark().line >= 0 ? kv.first.Mark().line + 1 : 0;
    const std::string near = closest_spelling(key, names);
    std::string list;
    for (const auto& n : names)
      list += (list.empty() ? "" : ", ") + n;
    throw InputError({file_ ? *file_ : "", line, path_.empty() ? key : path_ + "." + key},
                     fmt::format("unknown field '{}'", key),
                     near.empty() ? fmt::format("remove it; the known fields here are: {}", list)
                                  : fmt::format("did you mean '{}'? The known fields here are: {}", near, list));
  }
}

std::string closest_spelling(std::string_view word, const std::vector<std::string>& candidates)
{
  std::string best;
  size_t best_d = std::max<size_t>(3, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::vector<size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j)
      prev[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (word[i - 1] == c[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    if (prev[c.size()] < best_d) {
      best_d = prev[c.size()];
      best = c;
    }
  }
  return best;
}

} // namespace railyard
