// CSV as RFC 4180 defines it, written and read in one place. A label with a comma ("tp, async") used to split its
// row in two columns and crash the notebooks; every CSV Railyard writes goes through CsvWriter and every CSV it reads
// through parse_csv.
//
// Writing (RFC 4180 section 2): fields holding a comma, a double quote, CR or LF are enclosed in double quotes, a
// double quote inside one is doubled, and every record ends with CRLF. Numbers are written in the shortest form that
// reads back as the same double ({fmt}'s "{}"), so identical results give identical bytes.
// Reading: records end with CRLF or LF; quoted fields may hold commas, doubled quotes and line breaks.
#pragma once

#include <fmt/format.h>

#include <concepts>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace railyard {

/// `text` as one CSV field: unchanged, or quoted when it holds a comma, a double quote, CR or LF.
std::string csv_field(std::string_view text);

/// Shortest text that reads back as the same double ("0.1", "1e-06", "256"); the CSV writers' number format.
std::string shortest_number(double v);

class CsvWriter {
public:
  explicit CsvWriter(std::ostream& out) : out_(out) {}

  /// One record of any number of fields: text (quoted as needed), integers, doubles (shortest_number).
  template <class... Fields>
  void record(const Fields&... fields)
  {
    (field(fields), ...);
    end_record();
  }
  void record(const std::vector<std::string>& fields);

  /// Field by field, for records built in a loop; end_record() closes the record.
  void field(std::string_view text);
  void field(const std::string& text) { field(std::string_view(text)); }
  void field(const char* text) { field(std::string_view(text)); }
  void field(double v);
  template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char>) void field(T v)
  {
    separator();
    const fmt::format_int text(v);
    out_.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  void end_record();

private:
  void separator();
  std::ostream& out_;
  bool first_ = true;
};

/// One record as read, with the line it starts on (1-based).
struct CsvRecord {
  int line = 0;
  bool comment = false; ///< a comment line (CsvReadOptions::comment): `fields` holds the text after the character
  std::vector<std::string> fields;
};

struct CsvReadOptions {
  /// A line whose first character other than blanks (spaces, tabs) is this one, at the start of a record, is a
  /// comment: returned as a record with `comment` set and the rest of the line as its one field. 0: no comments.
  char comment = 0;
  bool skip_blank_lines = true;
  int first_line = 1; ///< the line number of the text's first line, when the text is one line of a larger file
};

/// Parses CSV text: LF or CRLF record ends, quoted fields with commas, doubled quotes and line breaks. A quote left
/// open at the end, or text after a closing quote ("ab"c), is an InputError naming `name` and the line.
std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& name, CsvReadOptions options = {});

} // namespace railyard
