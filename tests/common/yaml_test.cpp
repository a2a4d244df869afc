// YamlNode: every value knows its file, line and dotted path, and every error names them with a fix.
#include "railyard/common/error.hpp"
#include "railyard/common/yaml.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace railyard;

namespace {

const char* kDoc = "name: demo\n"              // line 1
                   "cluster:\n"                // line 2
                   "  kind: fat_tree\n"        // line 3
                   "  nodes: 4\n"              // line 4
                   "  nic:\n"                  // line 5
                   "    bandwidth: 400 Gb/s\n" // line 6
                   "    latency: 1 us\n"       // line 7
                   "list:\n"                   // line 8
                   "  - 1\n"                   // line 9
                   "  - two\n";                // line 10

template <class F>
InputError error_from(F&& f)
{
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError({}, "", "");
}

} // namespace

TEST(Yaml, ValuesCarryFileLineAndPath)
{
  const YamlNode root = YamlNode::load_string(kDoc, "doc.yaml");
  const YamlNode bw = root.at("cluster").at("nic").at("bandwidth");
  EXPECT_EQ(bw.path(), "cluster.nic.bandwidth");
  EXPECT_EQ(bw.where().file, "doc.yaml");
  EXPECT_EQ(bw.where().line, 6);
  EXPECT_EQ(bw.where().field, "cluster.nic.bandwidth");
  EXPECT_DOUBLE_EQ(bw.as_bandwidth().bytes_per_sec(), 50e9);
  EXPECT_DOUBLE_EQ(root.at("cluster").at("nic").at("latency").as_seconds().seconds(), 1e-6);
  EXPECT_EQ(root.at("cluster").at("nodes").as_int(1, 64), 4);
  const auto items = root.at("list").items();
  ASSERT_EQ(items.size(), 2U);
  EXPECT_EQ(items[1].path(), "list[1]");
  EXPECT_EQ(items[1].where().line, 10);
}

TEST(Yaml, MissingRequiredKeyNamesIt)
{
  const YamlNode root = YamlNode::load_string(kDoc, "doc.yaml");
  const InputError e = error_from([&] { (void)root.at("cluster").at("gpus_per_node"); });
  EXPECT_EQ(e.where().line, 3); // the map of `cluster:` starts on its first key
  EXPECT_NE(std::string(e.what()).find("gpus_per_node"), std::string::npos) << e.what();
  EXPECT_FALSE(root.at("cluster").get("gpus_per_node").has_value());
  EXPECT_EQ(root.at("cluster").int_in("gpus_per_node", 1, 64, 8), 8);
}

TEST(Yaml, UnknownKeySuggestsTheClosestSpelling)
{
  const YamlNode root = YamlNode::load_string("cluster:\n  kind: x\n  nodse: 2\n", "typo.yaml");
  const InputError e = error_from([&] { root.at("cluster").expect_keys({"kind", "nodes", "gpus"}); });
  EXPECT_EQ(e.where().file, "typo.yaml");
  EXPECT_EQ(e.where().line, 3);
  EXPECT_EQ(e.where().field, "cluster.nodse");
  EXPECT_NE(e.fix().find("did you mean 'nodes'"), std::string::npos) << e.what();
  EXPECT_EQ(std::string(e.what()).rfind("typo.yaml:3: field 'cluster.nodse': unknown field", 0), 0U) << e.what();
}

TEST(Yaml, ClosestSpelling)
{
  EXPECT_EQ(closest_spelling("radx", {"tiers", "radix", "leaf_downlinks"}), "radix");
  EXPECT_EQ(closest_spelling("bandwidht", {"bandwidth", "latency"}), "bandwidth");
  EXPECT_EQ(closest_spelling("zzzzzzzz", {"kind", "nodes"}), ""); // nothing close
}

TEST(Yaml, WrongTypesAreErrorsAtTheirLine)
{
  const YamlNode root = YamlNode::load_string(kDoc, "doc.yaml");
  const InputError not_int = error_from([&] { (void)root.at("cluster").at("kind").as_int(0, 100); });
  EXPECT_EQ(not_int.where().line, 3);
  EXPECT_NE(not_int.rule().find("not a whole number"), std::string::npos);
  const InputError no_unit = error_from([&] { (void)root.at("cluster").at("nodes").as_bandwidth(); });
  EXPECT_EQ(no_unit.where().line, 4);
  EXPECT_NE(no_unit.fix().find("Gb/s"), std::string::npos);
  const InputError not_bool = error_from([&] { (void)root.at("name").as_bool(); });
  EXPECT_NE(not_bool.rule().find("not a boolean"), std::string::npos);
  const InputError not_list = error_from([&] { (void)root.at("cluster").items(); });
  EXPECT_NE(not_list.rule().find("expected a list"), std::string::npos);
}

TEST(Yaml, SyntaxErrorNamesTheLine)
{
  const InputError e = error_from([] { (void)YamlNode::load_string("a: 1\nb: [1, 2\nc: 3\n", "broken.yaml"); });
  EXPECT_EQ(e.where().file, "broken.yaml");
  EXPECT_GT(e.where().line, 1); // the unclosed bracket opens on line 2; yaml-cpp reports where it gives up
  EXPECT_NE(std::string(e.what()).find("malformed YAML"), std::string::npos);
}

TEST(Yaml, MissingFileIsAnInputError)
{
  const InputError e = error_from([] { (void)YamlNode::load_file("/nonexistent/railyard.yaml"); });
  EXPECT_EQ(e.where().file, "/nonexistent/railyard.yaml");
  EXPECT_NE(e.rule().find("cannot open"), std::string::npos);
}

TEST(InputErrors, MessageLeavesOutUnknownParts)
{
  EXPECT_EQ(format_input_error({"a.yaml", 3, "cluster.nodes"}, "must be positive", "write 1 or more"),
            "a.yaml:3: field 'cluster.nodes': must be positive. Fix: write 1 or more");
  EXPECT_EQ(format_input_error({"a.yaml", 0, ""}, "cannot open the file", ""), "a.yaml: cannot open the file");
  EXPECT_EQ(format_input_error({}, "bad", "fix it"), "bad. Fix: fix it");
}

// What yaml-cpp accepts without a word and the reader refuses, each at its line. The lines are counted in the texts.
namespace {

InputError load_error(const std::string& text)
{
  return error_from([&] { (void)YamlNode::load_string(text, "in.yaml"); });
}

} // namespace

TEST(YamlReader, DuplicateKeyIsRefusedAtTheSecondWithTheFirstLine)
{
  const InputError top = load_error("name: a\nseed: 1\nname: b\n");
  EXPECT_EQ(top.where().line, 3);
  EXPECT_EQ(top.where().field, "name");
  EXPECT_NE(top.rule().find("given twice (first on line 1)"), std::string::npos) << top.what();
  // Inside a list entry: the dotted path names the entry.
  const InputError nested = load_error("collectives:\n  - {op: all_reduce, size: 1 MiB, size: 2 MiB}\n");
  EXPECT_EQ(nested.where().line, 2);
  EXPECT_EQ(nested.where().field, "collectives[0].size");
}

TEST(YamlReader, SecondDocumentIsRefusedAtItsMarker)
{
  const InputError e = load_error("name: a\n---\nname: b\n");
  EXPECT_EQ(e.where().line, 2); // the '---' line
  EXPECT_NE(e.rule().find("second YAML document"), std::string::npos) << e.what();
  // An empty second document after a trailing '---' is a second document too.
  EXPECT_EQ(load_error("name: a\n---\n").where().line, 2);
  // A leading '---' opens the only document: accepted.
  EXPECT_EQ(YamlNode::load_string("---\nname: a\n", "in.yaml").at("name").as_string(), "a");
}

TEST(YamlReader, KeysThatAreListsOrMapsAreRefused)
{
  const InputError list = load_error("name: a\n? [x, y]\n: 1\n");
  EXPECT_EQ(list.where().line, 2);
  EXPECT_NE(list.rule().find("a key is a list"), std::string::npos) << list.what();
  const InputError map = load_error("name: a\n{k: 1}: 2\n");
  EXPECT_EQ(map.where().line, 2);
  EXPECT_NE(map.rule().find("a key is a map"), std::string::npos) << map.what();
}

TEST(YamlReader, InvalidUtf8AndControlCharactersAreRefusedWithLineAndColumn)
{
  const InputError bad = load_error("seed: 1\nname: caf\xff\n");
  EXPECT_EQ(bad.where().line, 2);
  EXPECT_NE(bad.rule().find("invalid UTF-8: byte 0xFF at column 10"), std::string::npos) << bad.what();
  // Overlong "/" (C0 AF), a UTF-16 surrogate (ED A0 80) and a sequence cut short (E2 82): none is UTF-8 (RFC 3629).
  EXPECT_EQ(load_error("name: \xc0\xaf\n").where().line, 1);
  EXPECT_EQ(load_error("a: 1\nname: \xed\xa0\x80\n").where().line, 2);
  EXPECT_EQ(load_error("a: 1\nb: 2\nname: \xe2\x82").where().line, 3);
  const InputError nul = load_error(std::string("name: a\x01") + "b\n");
  EXPECT_NE(nul.rule().find("control character U+0001"), std::string::npos) << nul.what();
  // Real UTF-8 passes: e acute (C3 A9) and a four-byte emoji (F0 9F 9A 82).
  EXPECT_EQ(YamlNode::load_string("name: caf\xc3\xa9 \xf0\x9f\x9a\x82\n", "in.yaml").at("name").as_string(),
            "caf\xc3\xa9 \xf0\x9f\x9a\x82");
}

// Found by tests/fuzz (fuzz_profile, fuzz_scenario): yaml-cpp 0.7's YAML::LoadAll loops forever on a ',' outside
// brackets (its parser returns an empty document without consuming it), so a file holding ',' hung the reader.
TEST(YamlReader, CommaOutsideBracketsIsRefusedNotLoopedOn)
{
  for (const std::string& text : {std::string(","), std::string("# a comment\n,\n"), std::string("[a, b]\n,\n")}) {
    const InputError e = load_error(text);
    EXPECT_EQ(e.where().line, text == "," ? 1 : 2) << e.what();
    EXPECT_NE(std::string(e.what()).find("malformed YAML"), std::string::npos) << e.what();
  }
}

TEST(YamlReader, EmptyFilesAndAliasBombsAreRefused)
{
  EXPECT_NE(load_error("").rule().find("no YAML document"), std::string::npos);
  EXPECT_EQ(load_error("").where().line, 1);
  // Where the text ends: after the comment's line break, on line 2.
  const InputError comment = load_error("# only a comment\n");
  EXPECT_NE(comment.rule().find("no YAML document"), std::string::npos);
  EXPECT_EQ(comment.where().line, 2);
  // Ten aliases of ten aliases of ... : 10^7 values from a few hundred bytes (the "billion laughs").
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 7; ++i)
    bomb +=
        fmt::format("a{0}: &a{0} [*a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}]\n", i, i - 1);
  EXPECT_NE(load_error(bomb).rule().find("aliases"), std::string::npos);
  // A few aliases are fine.
  EXPECT_EQ(YamlNode::load_string("a: &x [1, 2]\nb: *x\n", "in.yaml").at("b").items().size(), 2U);
}

TEST(YamlReader, FoldersDevicesAndHugeFilesAreRefusedBeforeReading)
{
  const std::string dir = ::testing::TempDir();
  EXPECT_NE(error_from([&] { (void)YamlNode::load_file(dir); }).rule().find("folder"), std::string::npos);
  // /dev/zero never ends: refused once 64 MiB have been read, not after filling memory.
  EXPECT_NE(error_from([] { (void)YamlNode::load_file("/dev/zero"); }).rule().find("64 MiB"), std::string::npos);
  // A sparse file one byte over 64 MiB = 67108864 B: refused from its size, without reading it.
  const std::string big = dir + "/railyard_yaml_big_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(big) << "a: 1\n";
  std::filesystem::resize_file(big, 67108864 + 1);
  const InputError e = error_from([&] { (void)YamlNode::load_file(big); });
  std::filesystem::remove(big);
  EXPECT_NE(e.rule().find("67108865 bytes"), std::string::npos) << e.what();
}

TEST(YamlNumbers, RangedIntegersNameTheFieldAndTheRange)
{
  const YamlNode root = YamlNode::load_string("channels: 65\nseed: 18446744073709551616\nbig: 99999999999999999999\n"
                                              "ratio: nan\nhex: 0x10\n",
                                              "n.yaml");
  const InputError ch = error_from([&] { (void)root.at("channels").as_int(1, 64, "NCCL's MAXCHANNELS"); });
  EXPECT_EQ(ch.where().field, "channels");
  EXPECT_EQ(ch.where().line, 1);
  EXPECT_NE(ch.rule().find("outside the allowed range 1..64 (NCCL's MAXCHANNELS)"), std::string::npos) << ch.what();
  EXPECT_NE(ch.fix().find("greater than zero and at most 64"), std::string::npos) << ch.what();
  // An int64 overflow is out of range, not "not an integer".
  const InputError big = error_from([&] { (void)root.at("big").as_int(0, 100); });
  EXPECT_NE(big.rule().find("outside the allowed range 0..100"), std::string::npos) << big.what();
  const InputError seed = error_from([&] { (void)root.at("seed").as_uint64(); });
  EXPECT_EQ(seed.where().line, 2);
  EXPECT_NE(seed.rule().find("0..18446744073709551615"), std::string::npos) << seed.what();
  EXPECT_NE(error_from([&] { (void)root.at("ratio").as_double(); }).rule().find("not a finite number"),
            std::string::npos);
  EXPECT_NE(error_from([&] { (void)root.at("hex").as_double(); }).rule().find("hexadecimal"), std::string::npos);
  EXPECT_EQ(root.int_in("missing", 1, 8, 4), 4);
}

TEST(YamlNumbers, UnitValuesOutsideTheirRangeNameFieldLineAndRange)
{
  const YamlNode root =
      YamlNode::load_string("size: 1e30 B\nlatency: 1e308 s\nbw: 0 Gb/s\nnan_size: nan MiB\n", "u.yaml");
  const InputError size = error_from([&] { (void)root.at("size").as_bytes(); });
  EXPECT_EQ(size.where().line, 1);
  EXPECT_EQ(size.where().field, "size");
  EXPECT_NE(size.rule().find("2^53 B"), std::string::npos) << size.what();
  const InputError lat = error_from([&] { (void)root.at("latency").as_seconds(); });
  EXPECT_EQ(lat.where().line, 2);
  EXPECT_NE(lat.rule().find("at most 1e6 s"), std::string::npos) << lat.what();
  EXPECT_NE(error_from([&] { (void)root.at("bw").as_bandwidth(); }).rule().find("greater than zero"),
            std::string::npos);
  EXPECT_EQ(error_from([&] { (void)root.at("nan_size").as_bytes(); }).where().line, 4);
}
