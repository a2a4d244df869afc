// The Chakra reader on the real traces in tests/data/traces/chakra_et (provenance in its README.md). Expected counts
// come from decoding the same files here with the generated protobuf classes, and from the README's description.
#include "../support/trace_files.hpp"
#include "railyard/workloads/readers.hpp"

#include "et_def.pb.h"

#include <archive.h>
#include <archive_entry.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

using namespace railyard;
using namespace railyard::workloads;
namespace fs = std::filesystem;

namespace {

using railyard::test::archive_member;

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

// ---- A real PyTorch-collected trace: mlcommons/chakra's feeder_tests_trace.tar.gz (tests/data/traces/README.md) ----
//
// Expected numbers come from the README (3,664 nodes: 3,643 COMP_NODE, 21 COMM_COLL_NODE; 5 AllReduce and 2 Broadcast
// on the GPU) and from decoding the archive's member here with libarchive and the generated protobuf classes, never
// from read_chakra.
namespace {

const std::string kFeeder = kChakra + "/chakra_feeder_tests/feeder_tests_trace.tar.gz";
const std::string kFeederMember = "tests/data/chakra.0.et";

// Writes a .tar.gz of `members` (name, bytes).
void write_tgz(const fs::path& path, const std::vector<std::pair<std::string, std::string>>& members)
{
  archive* a = archive_write_new();
  archive_write_add_filter_gzip(a);
  archive_write_set_format_pax_restricted(a);
  archive_write_open_filename(a, path.c_str());
  for (const auto& [name, bytes] : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(bytes.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_write_header(a, e);
    archive_write_data(a, bytes.data(), bytes.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

bool bool_attr(const ChakraProtoMsg::Node& n, const std::string& name)
{
  for (const auto& a : n.attr())
    if (a.name() == name) return a.bool_val();
  return false;
}

bool has_attr(const ChakraProtoMsg::Node& n, const std::string& name)
{
  for (const auto& a : n.attr())
    if (a.name() == name) return true;
  return false;
}

const Decoded& feeder_trace()
{
  static const Decoded d = decode(archive_member(kFeeder, kFeederMember));
  return d;
}

// What the ctrl_deps of a decoded file hold, counted plainly: entries naming an id not in the file, self-loops, and
// groups of two or more nodes that reach one another through ctrl_deps (found by reachability from every node).
struct ParentLinkCounts {
  int links = 0, dangling = 0, self_loops = 0, cycles = 0;
  std::uint64_t first_dangling_node = 0, first_dangling_parent = 0;
};

ParentLinkCounts count_parent_links(const Decoded& d)
{
  ParentLinkCounts c;
  std::map<std::uint64_t, std::size_t> at;
  for (std::size_t i = 0; i < d.nodes.size(); ++i)
    at[d.nodes[i].id()] = i;
  const std::size_t n = d.nodes.size();
  std::vector<std::vector<std::size_t>> up(n), down(n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::uint64_t p : d.nodes[i].ctrl_deps()) {
      ++c.links;
      if (!at.count(p)) {
        if (c.dangling++ == 0) {
          c.first_dangling_node = d.nodes[i].id();
          c.first_dangling_parent = p;
        }
      } else if (at[p] == i) {
        ++c.self_loops;
      } else {
        up[i].push_back(at[p]);
        down[at[p]].push_back(i);
      }
    }
  const auto reach = [&](std::size_t s, const std::vector<std::vector<std::size_t>>& adj) {
    std::vector<bool> seen(n, false);
    std::vector<std::size_t> todo{s};
    seen[s] = true;
    while (!todo.empty()) {
      const std::size_t v = todo.back();
      todo.pop_back();
      for (std::size_t w : adj[v])
        if (!seen[w]) {
          seen[w] = true;
          todo.push_back(w);
        }
    }
    return seen;
  };
  std::vector<bool> counted(n, false);
  for (std::size_t s = 0; s < n; ++s) {
    if (counted[s] || up[s].empty()) continue;
    const auto fwd = reach(s, up), back = reach(s, down);
    std::size_t members = 0;
    for (std::size_t v = 0; v < n; ++v)
      if (fwd[v] && back[v]) {
        counted[v] = true;
        ++members;
      }
    if (members > 1) ++c.cycles;
  }
  return c;
}

} // namespace

TEST(ChakraPyTorchTrace, DecodesToTheReadmeCounts)
{
  // The README's numbers, checked on the decoded file first, so that the tests below may count from the file.
  const Decoded& d = feeder_trace();
  ASSERT_EQ(d.nodes.size(), 3664u);
  std::map<int, int> types, gpu_kinds;
  int host_comm = 0;
  for (const auto& n : d.nodes) {
    ++types[n.type()];
    if (n.type() != ChakraProtoMsg::COMM_COLL_NODE) continue;
    if (bool_attr(n, "is_cpu_op")) {
      ++host_comm;
      EXPECT_FALSE(has_attr(n, "comm_type")) << "node " << n.id(); // the README: c10d:: nodes carry no comm_type
      EXPECT_EQ(n.name().rfind("c10d::", 0), 0u) << n.name();
    } else {
      ++gpu_kinds[int_attr(n, "comm_type")];
    }
  }
  EXPECT_EQ(types[ChakraProtoMsg::COMP_NODE], 3643);
  EXPECT_EQ(types[ChakraProtoMsg::COMM_COLL_NODE], 21);
  EXPECT_EQ(gpu_kinds[ChakraProtoMsg::ALL_REDUCE], 5);
  EXPECT_EQ(gpu_kinds[ChakraProtoMsg::BROADCAST], 2);
  EXPECT_EQ(host_comm, 21 - 5 - 2);
}

TEST(ChakraPyTorchTrace, ReadsFromTheArchiveInDataDepsOrder)
{
  const Decoded& d = feeder_trace();
  const Workload w = read_chakra(kFeeder);
  ASSERT_EQ(w.world_size(), 1); // the archive holds chakra.0.et alone: rank 0 (the rank in the member's name)
  const RankGraph& g = w.graph_of(0);
  EXPECT_NE(g.source_file().find(kFeederMember), std::string::npos) << g.source_file();
  ASSERT_EQ(g.size(), d.nodes.size());

  std::map<std::uint64_t, const ChakraProtoMsg::Node*> node_of;
  for (const auto& n : d.nodes)
    node_of[n.id()] = &n;
  std::map<CollectiveKind, int> collectives;
  int host_comm = 0, computes = 0;
  std::size_t edges = 0, data_deps = 0;
  for (const auto& n : d.nodes)
    data_deps += std::set<std::uint64_t>(n.data_deps().begin(), n.data_deps().end()).size();
  for (OpId i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    ASSERT_TRUE(node_of.count(g.source_id(i)));
    const ChakraProtoMsg::Node& n = *node_of[g.source_id(i)];
    const bool cpu = bool_attr(n, "is_cpu_op");
    // Dependencies are exactly the node's data_deps: its ctrl_deps (caller->callee parents) are not among them.
    std::set<std::uint64_t> deps;
    for (OpId dep : g.deps(i)) {
      EXPECT_LT(dep, i); // ops are in an order that respects every dependency
      deps.insert(g.source_id(dep));
    }
    EXPECT_EQ(deps, std::set<std::uint64_t>(n.data_deps().begin(), n.data_deps().end())) << "node " << n.id();
    edges += deps.size();
    ASSERT_TRUE(g.measured_duration(i)) << "node " << n.id();
    EXPECT_DOUBLE_EQ(g.measured_duration(i)->seconds(), static_cast<double>(n.duration_micros()) * 1e-6);
    if (n.type() == ChakraProtoMsg::COMM_COLL_NODE && !cpu) {
      ASSERT_EQ(op.kind, OpKind::Collective) << "node " << n.id();
      EXPECT_DOUBLE_EQ(op.bytes.bytes(), static_cast<double>(int_attr(n, "comm_size"))); // comm_size as is
      ++collectives[op.collective()];
      continue;
    }
    // COMP_NODEs, and the host side of communication (is_cpu_op), are compute ops: CPU ones on the CPU stream.
    ASSERT_EQ(op.kind, OpKind::Compute) << "node " << n.id();
    EXPECT_EQ(op.stream, static_cast<StreamId>(cpu ? 1 : 0)) << "node " << n.id();
    if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
      ++host_comm;
      EXPECT_TRUE(cpu);
    } else {
      ++computes;
    }
  }
  EXPECT_EQ(edges, data_deps);
  EXPECT_EQ(computes, 3643);
  EXPECT_EQ(host_comm, 14);
  EXPECT_EQ(collectives[CollectiveKind::AllReduce], 5);
  EXPECT_EQ(collectives[CollectiveKind::Broadcast], 2);
  OpCounts c = count_ops(g);
  EXPECT_EQ(c.compute, 3643u + 14u);
  EXPECT_EQ(c.collective, 7u);
}

TEST(ChakraPyTorchTrace, NotesTheParentLinksAndTheHostSideNodes)
{
  const ParentLinkCounts c = count_parent_links(feeder_trace());
  // The README says some ctrl_deps name nodes not in the file and some form cycles and self-loops.
  ASSERT_GT(c.dangling, 0);
  ASSERT_GT(c.self_loops, 0);
  ASSERT_GT(c.cycles, 0);
  const Workload w = read_chakra(kFeeder);
  std::string links, host;
  for (const auto& note : w.notes) {
    if (has(note, "parent links")) links = note;
    if (has(note, "CPU-side communication")) host = note;
  }
  EXPECT_TRUE(has(links, "schema 1.0.1")) << links;
  EXPECT_TRUE(has(links, "Of " + std::to_string(c.links) + " ctrl_deps")) << links;
  EXPECT_TRUE(has(links, std::to_string(c.dangling) + " name nodes not in the file")) << links;
  EXPECT_TRUE(has(links, "node " + std::to_string(c.first_dangling_node) + " names node " +
                             std::to_string(c.first_dangling_parent)))
      << links;
  EXPECT_TRUE(has(links, std::to_string(c.self_loops) + " are self-loops")) << links;
  EXPECT_TRUE(has(links, std::to_string(c.cycles) + " cycles run through several nodes")) << links;
  EXPECT_TRUE(has(host, "14 CPU-side communication nodes")) << host;
}

// Crafted from the real trace: one dangling data_dep, one data_deps self-loop. Both refused at the node, naming
// data_deps, the file and the rank; dangling ctrl_deps are not (the real trace has hundreds).
TEST(ChakraPyTorchTrace, DanglingOrCyclicDataDepsAreRefused)
{
  const Decoded& real = feeder_trace();
  {
    TempTraceDir t("pytorch_dangling");
    Decoded d = real;
    d.nodes[5].add_data_deps(999999);
    t.write("chakra.0.et", encode(d));
    try {
      read_chakra((t.dir / "chakra").string());
      FAIL() << "a dangling data_dep must not load";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, (t.dir / "chakra.0.et").string());
      EXPECT_EQ(e.where().field, "rank 0 node " + std::to_string(d.nodes[5].id()));
      EXPECT_TRUE(has(e.rule(), "through its data_deps")) << e.what();
      EXPECT_TRUE(has(e.rule(), "node 999999")) << e.what();
      EXPECT_TRUE(has(e.fix(), "remove 999999 from the data_deps")) << e.what();
    }
  }
  {
    TempTraceDir t("pytorch_self_loop");
    Decoded d = real;
    d.nodes[7].add_data_deps(d.nodes[7].id());
    t.write("chakra.0.et", encode(d));
    try {
      read_chakra((t.dir / "chakra").string());
      FAIL() << "a data_deps self-loop must not load";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, "rank 0 node " + std::to_string(d.nodes[7].id()));
      EXPECT_TRUE(has(e.rule(), "dependency cycle through data_deps")) << e.what();
      EXPECT_TRUE(has(e.rule(), "node " + std::to_string(d.nodes[7].id()) + " waits for itself")) << e.what();
    }
  }
}

// The rule for ctrl_deps, both ways, on ASTRA-sim's T3D trace (GlobalMetadata version 0.0.4, no schema attribute):
// there ctrl_deps are dependencies, so a dangling one is refused naming ctrl_deps and one that closes a cycle with
// data_deps is a cycle through both; with chakra's PyTorch schema attribute added, the same ctrl_deps are parent
// links and the trace loads.
TEST(ChakraReader, CtrlDepsAreDependenciesUnlessTheTraceIsFromPyTorch)
{
  const std::string dir = kChakra + "/astrasim_artifacts_T3D";
  const ChakraOptions groups{dir + "/comm_group.json"};
  const auto attempt = [&](const std::string& name, const Decoded& d) -> std::optional<InputError> {
    TempTraceDir t(name);
    t.copy_set(dir, "trace", 8);
    t.write("trace.0.et", encode(d));
    try {
      (void)read_chakra((t.dir / "trace").string(), groups);
    } catch (const InputError& e) {
      return e;
    }
    return std::nullopt;
  };
  Decoded dangling = decode(slurp(dir + "/trace.0.et"));
  ASSERT_EQ(dangling.nodes.size(), 5u);
  dangling.nodes[2].add_ctrl_deps(99);
  auto e = attempt("ctrl_dangling", dangling);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->where().field, "rank 0 node " + std::to_string(dangling.nodes[2].id()));
  EXPECT_TRUE(has(e->rule(), "through its ctrl_deps")) << e->what();
  EXPECT_TRUE(has(e->rule(), "node 99")) << e->what();

  Decoded cycle = decode(slurp(dir + "/trace.0.et"));
  cycle.nodes[0].add_ctrl_deps(cycle.nodes[4].id()); // node 1 waits for node 5, which waits (data_deps) for node 1
  e = attempt("ctrl_cycle", cycle);
  ASSERT_TRUE(e);
  EXPECT_TRUE(has(e->rule(), "dependency cycle through data_deps and ctrl_deps")) << e->what();
  EXPECT_TRUE(has(e->rule(), "(ctrl_deps)")) << e->what();

  for (Decoded* d : {&dangling, &cycle}) {
    auto* schema = d->meta.add_attr();
    schema->set_name("schema");
    schema->set_string_val("1.0.1");
  }
  EXPECT_FALSE(attempt("ctrl_dangling_pytorch", dangling));
  EXPECT_FALSE(attempt("ctrl_cycle_pytorch", cycle));
}

// A COMM_COLL_NODE on the host (is_cpu_op) is a CPU op of its duration, with or without comm_type; one on the GPU
// without comm_type is refused, naming is_cpu_op as the way to mark a host-side node.
TEST(ChakraReader, HostSideCommunicationNodes)
{
  ChakraProtoMsg::Node host;
  host.set_id(1);
  host.set_name("c10d::allreduce_");
  host.set_type(ChakraProtoMsg::COMM_COLL_NODE);
  host.set_duration_micros(151);
  attr(host, "is_cpu_op")->set_bool_val(true);
  {
    TempTraceDir t("host_side");
    Decoded d;
    d.meta.set_version("0.0.4");
    d.nodes.push_back(host);
    t.write("t.0.et", encode(d));
    const Workload w = read_chakra((t.dir / "t").string());
    const RankGraph& g = w.graph_of(0);
    ASSERT_EQ(g.size(), 1u);
    EXPECT_EQ(g.op(0).kind, OpKind::Compute);
    EXPECT_EQ(g.op(0).stream, StreamId{1}); // the CPU stream
    EXPECT_DOUBLE_EQ(g.measured_duration(0)->seconds(), 151e-6);
  }
  ChakraProtoMsg::Node gpu = host;
  gpu.mutable_attr()->Clear();
  attr(gpu, "is_cpu_op")->set_bool_val(false);
  const InputError e = read_one("gpu_no_comm_type", gpu);
  EXPECT_EQ(e.where().field, "rank 0 node 1");
  EXPECT_TRUE(has(e.rule(), "without a comm_type")) << e.what();
  EXPECT_TRUE(has(e.fix(), "set is_cpu_op true")) << e.what();
}

// A .tgz of a trace set reads as the folder does: ranks from the member names, comm_group.json beside them, macOS
// "._" resource forks skipped. Archives with a gap in the ranks, two trace sets or no trace are refused by name.
TEST(ChakraReader, ArchivesOfTraceSets)
{
  const std::string dir = kChakra + "/astrasim_artifacts_T3D";
  TempTraceDir t("archives");
  std::vector<std::pair<std::string, std::string>> members;
  for (int r = 7; r >= 0; --r) // archive order is not rank order
    members.emplace_back("T3D/trace." + std::to_string(r) + ".et", slurp(dir + "/trace." + std::to_string(r) + ".et"));
  members.emplace_back("T3D/comm_group.json", slurp(dir + "/comm_group.json"));
  members.emplace_back("T3D/._trace.0.et", "a macOS resource fork, not a trace");
  write_tgz(t.dir / "t3d.tgz", members);
  const Workload w = read_chakra((t.dir / "t3d.tgz").string());
  ASSERT_EQ(w.world_size(), 8);
  EXPECT_EQ(w.communicators.size(), 13u); // comm_group.json's 12 groups and the world, as from the folder
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(w.graph_of(r).source_file(), (t.dir / "t3d.tgz").string() + ":T3D/trace." + std::to_string(r) + ".et");
    EXPECT_EQ(count_ops(w.graph_of(r)).collective, 3u);
  }

  const auto refusal = [&](const std::string& name, const std::vector<std::pair<std::string, std::string>>& m) {
    write_tgz(t.dir / name, m);
    try {
      (void)read_chakra((t.dir / name).string(), ChakraOptions{dir + "/comm_group.json"});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << name << " read without an error";
    return std::string();
  };
  auto gap = members;
  gap.erase(gap.begin() + 2); // trace.5.et
  EXPECT_TRUE(has(refusal("gap.tgz", gap), "the trace of rank 5 is missing"));
  auto two = members;
  two.emplace_back("other/trace.0.et", members[7].second);
  EXPECT_TRUE(has(refusal("two.tgz", two), "the archive holds two trace sets"));
  EXPECT_TRUE(has(refusal("none.tgz", {{"T3D/comm_group.json", members[8].second}}), "holds no Chakra trace"));
}
