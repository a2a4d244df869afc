// RFC 4180 (https://www.rfc-editor.org/rfc/rfc4180, section 2): the writer's quoting and line ends, and the reader on
// the RFC's own examples.
#include "railyard/common/csv.hpp"
#include "railyard/common/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

using railyard::CsvWriter;
using railyard::parse_csv;

TEST(Csv, FieldsAreQuotedOnlyWhenTheyHoldACommaAQuoteOrALineBreak)
{
  // Rule 6: fields containing line breaks (CRLF), double quotes and commas should be enclosed in double quotes.
  // Rule 7: a double quote inside a quoted field is escaped by preceding it with another double quote.
  EXPECT_EQ(railyard::csv_field("ring"), "ring");
  EXPECT_EQ(railyard::csv_field("tree, LL"), "\"tree, LL\"");
  EXPECT_EQ(railyard::csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(railyard::csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(railyard::csv_field("cr\r"), "\"cr\r\"");
  EXPECT_EQ(railyard::csv_field(""), "");
  EXPECT_EQ(railyard::csv_field(" spaces are data "), " spaces are data ");
}

TEST(Csv, RecordsEndWithCrLf)
{
  std::ostringstream out;
  CsvWriter csv(out);
  csv.record("index", "label", "size_bytes");
  csv.record(0, "tree, LL", 65536.0);
  csv.field(std::size_t{1});
  csv.field(std::string("x"));
  csv.field(-0.25);
  csv.end_record();
  // Rule 1: each record is on a separate line, delimited by a line break (CRLF).
  EXPECT_EQ(out.str(), "index,label,size_bytes\r\n0,\"tree, LL\",65536\r\n1,x,-0.25\r\n");
}

TEST(Csv, NumbersAreTheShortestTextThatReadsBackExactly)
{
  for (const double v : {0.1, 1.0 / 3.0, 1e-6, 6.02214076e23, 42.753150720e-3, 5e-324,
                         std::numeric_limits<double>::max(), 256.0, -0.0}) {
    const std::string text = railyard::shortest_number(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
    // Shortest: dropping the last significant digit no longer reads back the same (for the non-integral ones).
    if (text.find('e') == std::string::npos && text.find('.') != std::string::npos && text.size() > 3) {
      EXPECT_NE(std::strtod(text.substr(0, text.size() - 1).c_str(), nullptr), v) << text;
    }
  }
  EXPECT_EQ(railyard::shortest_number(0.1), "0.1");
  EXPECT_EQ(railyard::shortest_number(256.0), "256");
}

TEST(Csv, TheReaderTakesTheRfcsExamplesWithCrLfOrLf)
{
  for (const std::string eol : {"\r\n", "\n"}) {
    // Section 2 examples: a header, quoted fields, an embedded line break, a doubled quote, an empty last field.
    const std::string text = "field_name,field_name,field_name" + eol + "aaa,\"b" + eol + "bb\",ccc" + eol +
                             "\"aaa\",\"b\"\"bb\",\"ccc\"" + eol + "zzz,yyy," + eol + "\"tree, LL\",1,2";
    const auto records = parse_csv(text, "t.csv");
    ASSERT_EQ(records.size(), 5u);
    EXPECT_EQ(records[1].fields, (std::vector<std::string>{"aaa", "b" + eol + "bb", "ccc"}));
    EXPECT_EQ(records[2].fields, (std::vector<std::string>{"aaa", "b\"bb", "ccc"}));
    EXPECT_EQ(records[3].fields, (std::vector<std::string>{"zzz", "yyy", ""}));
    EXPECT_EQ(records[4].fields, (std::vector<std::string>{"tree, LL", "1", "2"}));
    // Lines: the record after the two-line field starts on line 4.
    EXPECT_EQ(records[1].line, 2);
    EXPECT_EQ(records[2].line, 4);
  }
}

TEST(Csv, WhatTheWriterWritesTheReaderReadsBack)
{
  const std::vector<std::string> fields{"plain", "a,b", "q\"uote", "line\r\nbreak", "", " x "};
  std::ostringstream out;
  CsvWriter csv(out);
  csv.record(fields);
  csv.record(fields);
  const auto records = parse_csv(out.str(), "round.csv");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].fields, fields);
  EXPECT_EQ(records[1].fields, fields);
}

TEST(Csv, CommentsAndBlankLines)
{
  const auto records = parse_csv("# program: x\r\n\r\na,b\r\n  # note: one, two\r\n1,2\r\n", "c.csv", {.comment = '#'});
  ASSERT_EQ(records.size(), 4u);
  EXPECT_TRUE(records[0].comment);
  EXPECT_EQ(records[0].fields, (std::vector<std::string>{" program: x"}));
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(records[1].line, 3);
  EXPECT_TRUE(records[2].comment);
  EXPECT_EQ(records[2].fields.front(), " note: one, two");
  EXPECT_FALSE(records[3].comment);
}

TEST(Csv, BrokenQuotingIsAnInputErrorWithTheLine)
{
  try {
    (void)parse_csv("a,b\n1,\"open\n2,3\n", "bad.csv");
    FAIL() << "a quote that is never closed";
  } catch (const railyard::InputError& e) {
    EXPECT_EQ(e.where().file, "bad.csv");
    EXPECT_EQ(e.where().line, 2);
  }
  try {
    (void)parse_csv("a,b\n\"ab\"c,1\n", "bad.csv");
    FAIL() << "text after a closing quote";
  } catch (const railyard::InputError& e) {
    EXPECT_EQ(e.where().line, 2);
  }
}
