// YamlNode: every value knows its file, line and dotted path, and every error names them with a fix.
#include "railyard/common/error.hpp"
#include "railyard/common/yaml.hpp"

#include <gtest/gtest.h>

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
  EXPECT_DOUBLE_EQ(bw.as_bandwidth().value(), 50e9);
  EXPECT_DOUBLE_EQ(root.at("cluster").at("nic").at("latency").as_seconds().value(), 1e-6);
  EXPECT_EQ(root.at("cluster").at("nodes").as_int(), 4);
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
  EXPECT_EQ(root.at("cluster").int_or("gpus_per_node", 8), 8);
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
  const InputError not_int = error_from([&] { (void)root.at("cluster").at("kind").as_int(); });
  EXPECT_EQ(not_int.where().line, 3);
  EXPECT_NE(not_int.rule().find("not an integer"), std::string::npos);
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

// Found by tests/fuzz (fuzz_scenario): a key that is a map ("? {a: 1}") made yaml-cpp throw TypedBadConversion from
// expect_keys (and keys()), which is no InputError (exit 3). Both refuse it at its line, naming the section.
TEST(Yaml, KeyThatIsAMapOrListIsRefusedAtItsLine)
{
  const YamlNode root = YamlNode::load_string("cluster:\n"         // line 1
                                              "  kind: fat_tree\n" // line 2
                                              "  ? {a: 1}\n"       // line 3
                                              "  : 2\n",
                                              "keys.yaml");
  const YamlNode cluster = root.at("cluster");
  for (const InputError& e :
       {error_from([&] { cluster.expect_keys({"kind"}); }), error_from([&] { (void)cluster.keys(); })}) {
    EXPECT_EQ(e.where().file, "keys.yaml");
    EXPECT_EQ(e.where().line, 3) << e.what();
    EXPECT_EQ(e.where().field, "cluster") << e.what();
    EXPECT_NE(e.rule().find("not a name"), std::string::npos) << e.what();
  }
}
