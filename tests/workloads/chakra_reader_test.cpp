// The Chakra reader on the real traces in tests/data/traces/chakra_et (provenance in its README.md). Expected counts
// come from decoding the same files here with the generated protobuf classes, and from the README's description.
#include "railyard/workloads/readers.hpp"

#include "et_def.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

using namespace railyard;
using namespace railyard::workloads;
namespace fs = std::filesystem;

namespace {

const std::string kChakra = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/chakra_et";

std::string slurp(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Decodes a length-delimited ET file with the generated classes: metadata, then nodes.
struct Decoded {
  ChakraProtoMsg::GlobalMetadata meta;
  std::vector<ChakraProtoMsg::Node> nodes;
};

Decoded decode(const std::string& bytes)
{
  Decoded d;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  bool first = true;
  std::uint32_t len = 0;
  while (in.ReadVarint32(&len)) {
    auto limit = in.PushLimit(static_cast<int>(len));
    if (first)
      EXPECT_TRUE(d.meta.ParseFromCodedStream(&in));
    else {
      d.nodes.emplace_back();
      EXPECT_TRUE(d.nodes.back().ParseFromCodedStream(&in));
    }
    in.PopLimit(limit);
    first = false;
  }
  return d;
}

std::string encode(const Decoded& d)
{
  std::string out;
  {
    google::protobuf::io::StringOutputStream raw(&out);
    google::protobuf::io::CodedOutputStream cos(&raw);
    cos.WriteVarint32(static_cast<std::uint32_t>(d.meta.ByteSizeLong()));
    d.meta.SerializeToCodedStream(&cos);
    for (const auto& n : d.nodes) {
      cos.WriteVarint32(static_cast<std::uint32_t>(n.ByteSizeLong()));
      n.SerializeToCodedStream(&cos);
    }
  }
  return out;
}

std::map<int, int> type_counts(const std::string& path)
{
  std::map<int, int> c;
  for (const auto& n : decode(slurp(path)).nodes)
    ++c[n.type()];
  return c;
}

std::int64_t int_attr(const ChakraProtoMsg::Node& n, const std::string& name)
{
  for (const auto& a : n.attr())
    if (a.name() == name) return a.has_int64_val() ? a.int64_val() : a.int32_val();
  return -1;
}

// A temporary folder with copies of a trace set, removed at the end of the test.
struct TempTraceDir {
  fs::path dir;
  explicit TempTraceDir(const std::string& name)
  {
    dir = fs::temp_directory_path() / ("railyard_chakra_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempTraceDir() { fs::remove_all(dir); }
  void copy_set(const std::string& src_dir, const std::string& base, int ranks)
  {
    for (int r = 0; r < ranks; ++r)
      fs::copy_file(src_dir + "/" + base + "." + std::to_string(r) + ".et",
                    dir / (base + "." + std::to_string(r) + ".et"));
  }
  void write(const std::string& name, const std::string& bytes)
  {
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
};

bool has(const std::string& text, const std::string& part)
{
  return text.find(part) != std::string::npos;
}

} // namespace

TEST(ChakraReader, MicrobenchAllReduceHasOneAllReducePerRank)
{
  const std::string dir = kChakra + "/astrasim_microbench_all_reduce_8npus_1MB";
  Workload w = read_chakra(dir + "/all_reduce");
  ASSERT_EQ(w.world_size(), 8); // all_reduce.0.et .. all_reduce.7.et
  for (int r = 0; r < 8; ++r) {
    Decoded d = decode(slurp(dir + "/all_reduce." + std::to_string(r) + ".et"));
    ASSERT_EQ(d.nodes.size(), 1u);
    const RankGraph& g = w.graph_of(r);
    OpCounts c = count_ops(g);
    EXPECT_EQ(c.total(), d.nodes.size());
    ASSERT_EQ(c.collective, 1u);
    const Op& op = g.op(0);
    EXPECT_EQ(op.collective(), CollectiveKind::AllReduce);
    // README: comm_size 1,048,576 bytes = 1 MiB; Chakra's comm_size is used as the nccl-tests size unchanged.
    EXPECT_DOUBLE_EQ(op.bytes.bytes(), static_cast<double>(int_attr(d.nodes[0], "comm_size")));
    EXPECT_DOUBLE_EQ(op.bytes.bytes(), 1024.0 * 1024.0);
    EXPECT_EQ(w.communicators[w.communicator_of(r, op)].ranks.size(), 8u); // no pg_name: the world
  }
}

TEST(ChakraReader, CustomRingHasSendsRecvsAndComputes)
{
  const std::string dir = kChakra + "/astrasim_custom_ring_allreduce_8npus_1MB";
  Workload w = read_chakra(dir + "/custom_allreduce.0.et"); // a file name works as well as the prefix
  ASSERT_EQ(w.world_size(), 8);
  for (int r = 0; r < 8; ++r) {
    auto types = type_counts(dir + "/custom_allreduce." + std::to_string(r) + ".et");
    OpCounts c = count_ops(w.graph_of(r));
    EXPECT_EQ(c.send, static_cast<std::size_t>(types[ChakraProtoMsg::COMM_SEND_NODE]));
    EXPECT_EQ(c.recv, static_cast<std::size_t>(types[ChakraProtoMsg::COMM_RECV_NODE]));
    EXPECT_EQ(c.compute, static_cast<std::size_t>(types[ChakraProtoMsg::COMP_NODE]));
    // The README's numbers: a ring all-reduce on 8 ranks is 2(n-1) = 14 steps, each a send and a receive, with a
    // reduction after each of the n-1 = 7 reduce-scatter receives.
    EXPECT_EQ(c.send, 14u);
    EXPECT_EQ(c.recv, 14u);
    EXPECT_EQ(c.compute, 7u);
    const RankGraph& g = w.graph_of(r);
    for (OpId i = 0; i < g.size(); ++i) {
      const Op& op = g.op(i);
      if (op.kind == OpKind::Send) {
        EXPECT_EQ(w.peer_global_rank(r, op), (r + 1) % 8); // a ring: send right
      }
      if (op.kind == OpKind::Recv) {
        EXPECT_EQ(w.peer_global_rank(r, op), (r + 7) % 8); // receive from the left
      }
      if (op.kind != OpKind::Compute) {
        EXPECT_DOUBLE_EQ(op.bytes.bytes(), 1024.0 * 1024.0 / 8.0); // 1 MiB split into 8 chunks = 131,072
      }
    }
  }
}

TEST(ChakraReader, T3dUsesCommGroupsFromJson)
{
  const std::string dir = kChakra + "/astrasim_artifacts_T3D";
  Workload w = read_chakra(dir + "/trace");
  ASSERT_EQ(w.world_size(), 8);
  // comm_group.json has 12 groups (3 dimensions x 4 pairs), plus the world communicator every Chakra load has.
  EXPECT_EQ(w.communicators.size(), 13u);
  for (int r = 0; r < 8; ++r) {
    Decoded d = decode(slurp(dir + "/trace." + std::to_string(r) + ".et"));
    OpCounts c = count_ops(w.graph_of(r));
    EXPECT_EQ(c.collective, 3u);
    EXPECT_EQ(c.compute, 2u); // two 100 us computes between the three all-reduces
    const RankGraph& g = w.graph_of(r);
    int dims = 0;
    for (OpId i = 0; i < g.size(); ++i) {
      const Op& op = g.op(i);
      if (op.kind == OpKind::Compute) {
        ASSERT_TRUE(g.measured_duration(i));
        EXPECT_DOUBLE_EQ(g.measured_duration(i)->seconds(), 100e-6); // duration_micros 100
        continue;
      }
      const Communicator& comm = w.communicators[w.communicator_of(r, op)];
      ASSERT_EQ(comm.ranks.size(), 2u);
      // A 2x2x2 torus: the partner differs from r in exactly one bit, a different bit for each all-reduce.
      int partner = comm.ranks[0] == r ? comm.ranks[1] : comm.ranks[0];
      int diff = partner ^ r;
      EXPECT_TRUE(diff == 1 || diff == 2 || diff == 4) << "rank " << r << " partner " << partner;
      dims |= diff;
    }
    EXPECT_EQ(dims, 7) << "rank " << r << " must all-reduce along X, Y and Z";
    EXPECT_EQ(d.nodes.size(), g.size());
  }
}

TEST(ChakraReader, TruncatedFileNamesByteOffset)
{
  const std::string dir = kChakra + "/astrasim_artifacts_T3D";
  TempTraceDir t("truncated");
  t.copy_set(dir, "trace", 8);
  std::string bytes = slurp(dir + "/trace.5.et");
  // Cut inside the last node: its length prefix then points past the end of the file.
  t.write("trace.5.et", bytes.substr(0, bytes.size() - 3));
  try {
    read_chakra((t.dir / "trace").string(), ChakraOptions{dir + "/comm_group.json"});
    FAIL() << "a truncated file must not load";
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(has(msg, "truncated protobuf")) << msg;
    EXPECT_TRUE(has(msg, "trace.5.et")) << msg;
    EXPECT_TRUE(has(msg, "rank 5")) << msg;
    EXPECT_TRUE(has(msg, "byte offset")) << msg;
    EXPECT_TRUE(has(msg, "after node 4")) << msg; // the last complete node before the cut
  }
}

TEST(ChakraReader, RanksDisagreeingOnACollective)
{
  const std::string dir = kChakra + "/astrasim_microbench_all_reduce_8npus_1MB";
  TempTraceDir t("disagree");
  t.copy_set(dir, "all_reduce", 8);
  Decoded d = decode(slurp(dir + "/all_reduce.3.et"));
  for (auto& a : *d.nodes[0].mutable_attr())
    if (a.name() == "comm_size") a.set_int64_val(2 * 1048576);
  t.write("all_reduce.3.et", encode(d));
  try {
    read_chakra((t.dir / "all_reduce").string());
    FAIL() << "disagreeing ranks must not load";
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(has(msg, "ranks disagree on a collective")) << msg;
    EXPECT_TRUE(has(msg, "all_reduce.3.et")) << msg;
    EXPECT_EQ(e.where().field, "rank 3 node " + std::to_string(d.nodes[0].id()));
  }
}

TEST(ChakraReader, UnknownNodeType)
{
  const std::string dir = kChakra + "/astrasim_artifacts_T3D";
  TempTraceDir t("nodetype");
  t.copy_set(dir, "trace", 8);
  Decoded d = decode(slurp(dir + "/trace.2.et"));
  d.nodes[1].set_type(static_cast<ChakraProtoMsg::NodeType>(42));
  t.write("trace.2.et", encode(d));
  try {
    read_chakra((t.dir / "trace").string(), ChakraOptions{dir + "/comm_group.json"});
    FAIL();
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(has(msg, "unknown node type 42")) << msg;
    EXPECT_TRUE(has(msg, "trace.2.et")) << msg;
    EXPECT_EQ(e.where().field, "rank 2 node " + std::to_string(d.nodes[1].id()));
  }
}

TEST(ChakraReader, DanglingDependencyAndCycle)
{
  const std::string dir = kChakra + "/astrasim_artifacts_T3D";
  {
    TempTraceDir t("dangling");
    t.copy_set(dir, "trace", 8);
    Decoded d = decode(slurp(dir + "/trace.0.et"));
    d.nodes[2].add_data_deps(99);
    t.write("trace.0.et", encode(d));
    try {
      read_chakra((t.dir / "trace").string(), ChakraOptions{dir + "/comm_group.json"});
      FAIL();
    } catch (const InputError& e) {
      EXPECT_TRUE(has(e.what(), "depends on node 99")) << e.what();
      EXPECT_EQ(e.where().field, "rank 0 node " + std::to_string(d.nodes[2].id()));
    }
  }
  {
    TempTraceDir t("cycle");
    t.copy_set(dir, "trace", 8);
    Decoded d = decode(slurp(dir + "/trace.0.et"));
    d.nodes[0].add_data_deps(d.nodes[4].id()); // node 1 now waits for node 5, which waits (through 2..4) for node 1
    t.write("trace.0.et", encode(d));
    try {
      read_chakra((t.dir / "trace").string(), ChakraOptions{dir + "/comm_group.json"});
      FAIL();
    } catch (const InputError& e) {
      std::string msg = e.what();
      EXPECT_TRUE(has(msg, "dependency cycle")) << msg;
      for (int id = 1; id <= 5; ++id)
        EXPECT_TRUE(has(msg, "node " + std::to_string(id))) << msg;
      EXPECT_TRUE(has(e.where().field, "rank 0 node")) << e.where().field;
    }
  }
}

TEST(ChakraReader, UnknownProcessGroup)
{
  const std::string dir = kChakra + "/astrasim_artifacts_T3D";
  TempTraceDir t("nogroups"); // no comm_group.json next to the copies, none given
  t.copy_set(dir, "trace", 8);
  try {
    read_chakra((t.dir / "trace").string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "pg_name '0' names no known communicator")) << e.what();
    EXPECT_EQ(e.where().field, "rank 0 node 1");
  }
}

// Integers of a trace that no int64 (or, for a rank, root or tag, no int) holds are refused at their node: casting
// them wrapped (2^64-1 became -1, 2^32 became root 0) or was undefined (a NaN double). Each case is the one-node
// trace of the first, with one attribute changed.
namespace {

ChakraProtoMsg::Node one_collective(ChakraProtoMsg::CollectiveCommType type)
{
  ChakraProtoMsg::Node n;
  n.set_id(1);
  n.set_name("coll");
  n.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  auto* t = n.add_attr();
  t->set_name("comm_type");
  t->set_int64_val(type);
  return n;
}

ChakraProtoMsg::AttributeProto* attr(ChakraProtoMsg::Node& n, const std::string& name)
{
  auto* a = n.add_attr();
  a->set_name(name);
  return a;
}

// Reads a one-rank trace of `node`; the InputError it raises, or an empty one (with a test failure) when it reads.
InputError read_one(const std::string& name, const ChakraProtoMsg::Node& node)
{
  TempTraceDir t(name);
  Decoded d;
  d.meta.set_version("0.0.4");
  d.nodes.push_back(node);
  t.write("t.0.et", encode(d));
  try {
    (void)read_chakra((t.dir / "t").string());
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << name << ": read without an error";
  return InputError({}, "", "");
}

} // namespace

TEST(ChakraNumbers, IntegersNoIntHoldsAreRefusedAtTheirNode)
{
  {
    TempTraceDir t("numbers_base");
    Decoded d;
    d.meta.set_version("0.0.4");
    d.nodes.push_back(one_collective(ChakraProtoMsg::ALL_REDUCE));
    attr(d.nodes.back(), "comm_size")->set_int64_val(1048576);
    t.write("t.0.et", encode(d));
    const Workload w = read_chakra((t.dir / "t").string());
    EXPECT_DOUBLE_EQ(w.graph_of(0).op(0).bytes.bytes(), 1048576.0);
  }
  auto node = one_collective(ChakraProtoMsg::ALL_REDUCE);
  attr(node, "comm_size")->set_uint64_val(18446744073709551615ULL); // 2^64 - 1
  const InputError wrapped = read_one("numbers_u64", node);
  EXPECT_EQ(wrapped.where().field, "rank 0 node 1");
  EXPECT_TRUE(has(wrapped.rule(), "attribute comm_size is 18446744073709551615")) << wrapped.what();

  node = one_collective(ChakraProtoMsg::ALL_REDUCE);
  attr(node, "comm_size")->set_double_val(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(has(read_one("numbers_nan", node).rule(), "attribute comm_size is nan"));

  // 2^62 B fits an int64 but not a size: at most 2^53 B.
  node = one_collective(ChakraProtoMsg::ALL_REDUCE);
  attr(node, "comm_size")->set_int64_val(std::int64_t{1} << 62);
  EXPECT_TRUE(has(read_one("numbers_2_62", node).rule(), "at most 2^53 B"));

  // A broadcast root of 2^32 wrapped to root 0, a valid rank.
  node = one_collective(ChakraProtoMsg::BROADCAST);
  attr(node, "comm_size")->set_int64_val(1024);
  attr(node, "root")->set_int64_val(std::int64_t{1} << 32);
  EXPECT_TRUE(has(read_one("numbers_root", node).rule(), "root 4294967296 does not fit a 32-bit integer"));

  // A compute node measured for 2^63 us: beyond the 1e6 s a simulated time may reach.
  ChakraProtoMsg::Node comp;
  comp.set_id(1);
  comp.set_type(ChakraProtoMsg::COMP_NODE);
  comp.set_duration_micros(std::uint64_t{1} << 63);
  EXPECT_TRUE(has(read_one("numbers_duration", comp).rule(), "at most 1e6 s"));
}

TEST(ChakraNumbers, ARankNumberBeyondAnIntInAFileNameIsRefused)
{
  TempTraceDir t("numbers_file_rank");
  Decoded d;
  d.meta.set_version("0.0.4");
  t.write("t.0.et", encode(d));
  t.write("t.99999999999.et", encode(d));
  try {
    (void)read_chakra((t.dir / "t").string());
    FAIL() << "read without an error";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.rule(), "the rank in the file name")) << e.what();
    EXPECT_TRUE(has(e.where().file, "t.99999999999.et")) << e.what();
  }
}

// comm_group.json with a number beyond a double (nlohmann-json throws out_of_range, not parse_error, so it escaped the
// reader) or a member that wraps to a valid rank as an int (4294967297 = 2^32 + 1 was read as rank 1): both refused
// naming comm_group.json.
TEST(ChakraReader, CommGroupNumbersBeyondTheirTypeAreRefused)
{
  const std::string dir = kChakra + "/astrasim_artifacts_T3D";
  const std::string wraps = std::to_string((1LL << 32) + 1);
  for (const std::string& members : {std::string("[0, 1e400]"), "[0, " + wraps + "]"}) {
    TempTraceDir t("groups_beyond");
    t.copy_set(dir, "trace", 8);
    t.write("comm_group.json", R"({"0": )" + members + R"(, "1": [2, 3]})");
    try {
      read_chakra((t.dir / "trace").string());
      FAIL() << members << ": expected an InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, (t.dir / "comm_group.json").string()) << e.what();
    }
  }
}

// A prefix the system cannot look up (a name longer than NAME_MAX) made std::filesystem::is_regular_file throw
// filesystem_error, and a file numbered beyond an int made std::stoi throw out_of_range: both left the reader as
// something other than an InputError (exit 3). Found while fixing the same lookup in the scenario (fuzz_scenario).
TEST(ChakraReader, PrefixTooLongOrRankBeyondAnIntIsRefused)
{
  TempTraceDir t("prefix_paths");
  EXPECT_THROW(read_chakra((t.dir / std::string(NAME_MAX + 1, 'a')).string()), InputError);
  t.copy_set(kChakra + "/astrasim_microbench_all_reduce_8npus_1MB", "all_reduce", 1);
  t.write("all_reduce.99999999999.et", "");
  try {
    read_chakra((t.dir / "all_reduce").string());
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, (t.dir / "all_reduce.99999999999.et").string()) << e.what();
  }
}
