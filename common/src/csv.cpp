#include "railyard/common/csv.hpp"

#include "railyard/common/error.hpp"

#include <fmt/format.h>

namespace railyard {

std::string csv_field(std::string_view text)
{
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string shortest_number(double v)
{
  return fmt::format("{}", v);
}

void CsvWriter::separator()
{
  if (!first_) out_ << ',';
  first_ = false;
}

void CsvWriter::field(std::string_view text)
{
  separator();
  if (text.find_first_of(",\"\r\n") == std::string_view::npos)
    out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  else
    out_ << csv_field(text);
}

void CsvWriter::field(double v)
{
  separator();
  // Without a heap string per number: flows.csv of a large run has millions of them.
  char buf[32]; // the longest shortest form of a double, "-2.2250738585072014e-308", is 24 characters
  const auto end = fmt::format_to_n(buf, sizeof buf, "{}", v).out;
  out_.write(buf, end - buf);
}

void CsvWriter::end_record()
{
  out_ << "\r\n";
  first_ = true;
}

void CsvWriter::record(const std::vector<std::string>& fields)
{
  for (const auto& f : fields)
    field(f);
  end_record();
}

std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& name, CsvReadOptions options)
{
  std::vector<CsvRecord> out;
  std::size_t i = 0;
  int line = options.first_line;
  const std::size_t n = text.size();
  // Consumes a record end (LF or CRLF) at i, if there is one.
  const auto at_record_end = [&](std::size_t k) {
    return k >= n || text[k] == '\n' || (text[k] == '\r' && (k + 1 >= n || text[k + 1] == '\n'));
  };
  const auto skip_record_end = [&] {
    if (i < n && text[i] == '\r') ++i;
    if (i < n && text[i] == '\n') ++i;
    ++line;
  };
  while (i < n) {
    CsvRecord rec;
    rec.line = line;
    if (at_record_end(i)) {
      skip_record_end();
      if (!options.skip_blank_lines) out.push_back({rec.line, false, {""}});
      continue;
    }
    std::size_t first = i;
    while (first < n && (text[first] == ' ' || text[first] == '\t'))
      ++first;
    if (options.comment != 0 && first < n && text[first] == options.comment) {
      std::size_t end = first + 1;
      while (!at_record_end(end))
        ++end;
      rec.comment = true;
      rec.fields.emplace_back(text.substr(first + 1, end - first - 1));
      i = end;
      skip_record_end();
      out.push_back(std::move(rec));
      continue;
    }
    for (;;) {
      std::string field;
      if (i < n && text[i] == '"') {
        const int opened_at = line;
        ++i;
        for (;;) {
          if (i >= n)
            throw InputError({name, opened_at, ""}, "a quoted CSV field is never closed",
                             "close the field with a double quote (a quote inside a field is written twice: \"\")");
          const char c = text[i];
          if (c == '"') {
            if (i + 1 < n && text[i + 1] == '"') {
              field += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          if (c == '\n') ++line;
          field += c;
          ++i;
        }
        if (i < n && text[i] != ',' && !at_record_end(i))
          throw InputError({name, line, ""},
                           fmt::format("text after the closing quote of a CSV field ('{}')", text.substr(i, 1)),
                           "quote the whole field, and write a quote inside it twice (\"\")");
      } else {
        while (i < n && text[i] != ',' && !at_record_end(i))
          field += text[i++];
      }
      rec.fields.push_back(std::move(field));
      if (i < n && text[i] == ',') {
        ++i;
        continue;
      }
      break;
    }
    out.push_back(std::move(rec));
    if (i < n) skip_record_end();
  }
  return out;
}

} // namespace railyard
