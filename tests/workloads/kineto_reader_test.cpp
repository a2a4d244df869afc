// The Kineto reader on the real traces in tests/data/traces/kineto (provenance in tests/data/traces/README.md).
// Expected counts and sizes are computed here from the same JSON with nlohmann-json, independently of the reader.
#include "../support/trace_files.hpp"
#include "railyard/workloads/readers.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

using namespace railyard;
using namespace railyard::workloads;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using railyard::test::gunzip;
using railyard::test::TempDir;

const std::string kKineto = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/kineto";
const std::string kDlrm = kKineto + "/param_dlrm_8rank_v100/dlrm_kineto.tar.gz";
const std::string kNcclData = kKineto + "/hta/nccl_parser_config/nccl_data.json.gz";
const std::string kControl = kKineto + "/hta/trace_diff_control/control.json.gz";
const std::string kSampled0 = kKineto + "/hta/trace_filter/sampled_rank-0.json.gz";
const std::string kSampled1 = kKineto + "/hta/trace_filter/sampled_rank-1.json.gz";

// rank -> JSON of every *.json member of a tar.gz (skipping macOS "._" files).
std::map<int, json> untar(const std::string& path)
{
  std::map<int, json> out;
  for (const auto& [name, data] : railyard::test::json_members_by_name(path)) {
    json j = json::parse(data);
    const int rank = j["distributedInfo"]["rank"].get<int>(); // before the move: C++17 moves first
    out[rank] = std::move(j);
  }
  return out;
}

bool is_nccl_kernel(const json& e)
{
  std::string n = e.value("name", "");
  return e.value("cat", "") == "kernel" && (n.rfind("ncclKernel", 0) == 0 || n.rfind("ncclDevKernel", 0) == 0);
}

struct Expected {
  std::size_t kernels = 0, nccl = 0, memcpy = 0, memset = 0;
  std::map<std::string, int> nccl_by_token; // "AllReduce" -> count
};

Expected count(const json& trace)
{
  Expected x;
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "X") continue;
    std::string cat = e.value("cat", "");
    if (cat == "kernel") ++x.kernels;
    if (cat == "gpu_memcpy") ++x.memcpy;
    if (cat == "gpu_memset") ++x.memset;
    if (is_nccl_kernel(e)) {
      ++x.nccl;
      std::string n = e["name"];
      std::size_t b = n.find('_') + 1;
      ++x.nccl_by_token[n.substr(b, n.find_first_of("_(", b) - b)];
    }
  }
  return x;
}

std::map<CollectiveKind, int> collectives(const RankGraph& g)
{
  std::map<CollectiveKind, int> c;
  for (const Op& op : g.ops())
    if (op.kind == OpKind::Collective) ++c[op.collective()];
  return c;
}

bool has(const std::string& text, const std::string& part)
{
  return text.find(part) != std::string::npos;
}

} // namespace

TEST(KinetoReader, DlrmArchiveHasFiveAllToAllAndThreeAllReducePerRank)
{
  auto traces = untar(kDlrm);
  Workload w = read_kineto({kDlrm});
  ASSERT_EQ(w.world_size(), static_cast<int>(traces.size()));
  ASSERT_EQ(w.world_size(), 8); // README: 8 x V100, world_size 8
  // Every rank traced: the one note is the world group's kind (DLRM's only group: its MLP's data parallel
  // all-reduces and its embeddings' all-to-alls).
  ASSERT_EQ(w.notes.size(), 1U);
  EXPECT_TRUE(has(w.notes.front(), "'world' is DP: the whole job of 8 ranks")) << w.notes.front();
  for (const auto& [rank, trace] : traces) {
    Expected x = count(trace);
    const RankGraph& g = w.graph_of(rank);
    OpCounts c = count_ops(g);
    EXPECT_EQ(c.collective, x.nccl) << "rank " << rank;
    // Compute ops are the non-NCCL kernels plus memsets; memcpys are their own kind.
    EXPECT_EQ(c.compute, x.kernels - x.nccl + x.memset) << "rank " << rank;
    EXPECT_EQ(c.memcpy, x.memcpy) << "rank " << rank;
    auto kinds = collectives(g);
    EXPECT_EQ(kinds[CollectiveKind::AllToAll], x.nccl_by_token["SendRecv"]); // PyTorch all-to-all runs as SendRecv
    EXPECT_EQ(kinds[CollectiveKind::AllReduce], x.nccl_by_token["AllReduce"]);
    EXPECT_EQ(kinds[CollectiveKind::AllToAll], 5); // README
    EXPECT_EQ(kinds[CollectiveKind::AllReduce], 3);

    // All-reduce sizes: the nccl:all_reduce annotations' Input Dims x 4 bytes (float), in launch order.
    std::vector<double> want;
    for (const auto& e : trace["traceEvents"])
      if (e.value("name", "") == "nccl:all_reduce") {
        double n = 1;
        for (const auto& d : e["args"]["Input Dims"][0])
          n *= d.get<double>();
        ASSERT_EQ(e["args"]["Input type"][0], "float");
        want.push_back(n * 4);
      }
    std::vector<double> got;
    for (const Op& op : g.ops())
      if (op.kind == OpKind::Collective && op.collective() == CollectiveKind::AllReduce)
        got.push_back(op.bytes.bytes());
    EXPECT_EQ(got, want) << "rank " << rank;
    ASSERT_TRUE(g.measured_span());
    EXPECT_GT(g.measured_span()->seconds(), 0.0);
  }
}

TEST(KinetoReader, HtaNcclDataUsesKernelArgs)
{
  json trace = json::parse(gunzip(kNcclData));
  Workload w = read_kineto({kNcclData});
  // Rank 0 of a 2-GPU job alone: one traced rank, its groups restricted to it, and a note saying so.
  ASSERT_EQ(w.world_size(), 1);
  ASSERT_FALSE(w.notes.empty());
  EXPECT_TRUE(has(w.notes.front(), "of a world of 2")) << w.notes.front();
  const RankGraph& g = w.graph_of(0);
  auto kinds = collectives(g);
  EXPECT_EQ(kinds[CollectiveKind::AllReduce], 15); // README: 15 AllReduce + 6 Broadcast
  EXPECT_EQ(kinds[CollectiveKind::Broadcast], 6);
  // Sizes from the kernels' own args: In msg nelems x element size of dtype.
  const std::map<std::string, double> elem = {{"Float", 4}, {"Long", 8}, {"Int", 4}, {"Half", 2}, {"Byte", 1}};
  std::vector<std::pair<double, double>> by_time; // (ts, bytes): the reader orders ops by start time
  for (const auto& e : trace["traceEvents"])
    if (is_nccl_kernel(e))
      by_time.emplace_back(e["ts"].get<double>(),
                           e["args"]["In msg nelems"].get<double>() * elem.at(e["args"]["dtype"].get<std::string>()));
  std::sort(by_time.begin(), by_time.end());
  std::vector<double> want;
  for (const auto& [ts, bytes] : by_time)
    want.push_back(bytes);
  std::vector<double> got;
  for (const Op& op : g.ops())
    if (op.kind == OpKind::Collective) got.push_back(op.bytes.bytes());
  EXPECT_EQ(got, want);
  const Op* first = nullptr;
  for (const Op& op : g.ops())
    if (op.kind == OpKind::Collective && !first) first = &op;
  ASSERT_NE(first, nullptr);
  EXPECT_TRUE(has(w.communicators[w.communicator_of(0, *first)].name, "default_pg"));
}

// Group kinds (issue 16): from a group's name where one of its words names a kind (the first such word: Megatron's
// DATA_PARALLEL_GROUP_WITH_CP is data parallel), else from its ranks in the job, Megatron's order (tensor parallel
// innermost): the whole job is data parallel (DDP's default group), consecutive ranks tensor parallel, evenly spaced
// ones data parallel, or expert parallel when they carry all-to-alls. Each inference is a note.
TEST(KinetoReader, GroupKindsFromNamesAndRankPatterns)
{
  struct Group {
    std::string name, desc, ranks, collective;
    GroupKind want;
  };
  const std::vector<Group> groups = {
      {"1", "TENSOR_MODEL_PARALLEL_GROUP", "[0, 1]", "allreduce", GroupKind::TP},
      {"2", "", "[0, 1, 2, 3]", "allreduce", GroupKind::TP},
      {"3", "", "[0, 4]", "allreduce", GroupKind::DP},
      {"4", "DATA_PARALLEL_GROUP_WITH_CP", "[0, 2]", "allreduce", GroupKind::DP},
      {"5", "", "[0, 2, 4, 6]", "all_to_all", GroupKind::EP},
      {"0", "default_pg", "[0, 1, 2, 3, 4, 5, 6, 7]", "allreduce", GroupKind::DP},
  };
  json ev = json::array();
  double ts = 0;
  for (const Group& g : groups) {
    const bool a2a = g.collective == "all_to_all";
    ev.push_back({{"ph", "X"},
                  {"cat", "kernel"},
                  {"name", a2a ? "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
                               : "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"},
                  {"pid", 0},
                  {"tid", 7},
                  {"ts", ts},
                  {"dur", 10},
                  {"args",
                   {{"stream", 7},
                    {"Collective name", g.collective},
                    {"In msg nelems", 1024},
                    {"Out msg nelems", 1024},
                    {"dtype", "Float"},
                    {"Group size", std::count(g.ranks.begin(), g.ranks.end(), ',') + 1},
                    {"Process Group Name", g.name},
                    {"Process Group Description", g.desc},
                    {"Process Group Ranks", g.ranks}}}});
    ts += 20;
  }
  TempDir t("group_kinds");
  const std::string path =
      t.write("rank0.json", json{{"traceEvents", ev}, {"distributedInfo", {{"rank", 0}, {"world_size", 8}}}}.dump());
  const Workload w = read_kineto({path});
  for (const Group& g : groups) {
    const auto c = std::find_if(w.communicators.begin(), w.communicators.end(),
                                [&](const Communicator& x) { return has(x.name, "pg " + g.name); });
    ASSERT_NE(c, w.communicators.end()) << g.name;
    EXPECT_EQ(c->kind, g.want) << c->name;
    const bool noted = std::any_of(w.notes.begin(), w.notes.end(), [&](const std::string& n) {
      return has(n, "'" + c->name + "' is " + std::string(to_string(g.want)));
    });
    EXPECT_TRUE(noted) << c->name;
  }
  // HTA's nccl_data: the default group of its 2-rank DDP job.
  const Workload hta = read_kineto({kNcclData});
  ASSERT_EQ(hta.communicators.size(), 1U);
  EXPECT_EQ(hta.communicators[0].kind, GroupKind::DP);
  EXPECT_EQ(hta.communicators[0].recorded_ranks, (std::vector<int>{0, 1}));
}

TEST(KinetoReader, EveryHtaTraceLoads)
{
  for (const auto& [path, allreduce, alltoall] :
       std::vector<std::tuple<std::string, int, int>>{{kControl, 18, 42}, {kSampled0, -1, -1}, {kSampled1, -1, -1}}) {
    json trace = json::parse(gunzip(path));
    Expected x = count(trace);
    Workload w = read_kineto({path});
    ASSERT_EQ(w.world_size(), 1) << path;
    OpCounts c = count_ops(w.graph_of(0));
    EXPECT_EQ(c.collective, x.nccl) << path;
    EXPECT_EQ(c.compute, x.kernels - x.nccl + x.memset) << path;
    EXPECT_EQ(c.memcpy, x.memcpy) << path;
    if (allreduce >= 0) { // README: control.json.gz has 42 all-to-all + 18 all-reduce
      auto kinds = collectives(w.graph_of(0));
      EXPECT_EQ(kinds[CollectiveKind::AllReduce], allreduce);
      EXPECT_EQ(kinds[CollectiveKind::AllToAll], alltoall);
    }
  }
  // Both sampled ranks together: they are excerpts of different windows (rank 0's all-reduces are 19618307,
  // 26955536, 26258430, 5716654 floats, rank 1's 19618307, 26258430, 19618307, 5716654 by the nccl:all_reduce
  // annotations), so as one job they disagree, and the reader must say so rather than load them.
  try {
    read_kineto({kSampled0, kSampled1});
    FAIL() << "the sampled ranks' all-reduces differ";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "ranks disagree on a collective")) << e.what();
    EXPECT_TRUE(has(e.what(), "sampled_rank-1.json.gz")) << e.what();
  }
}

TEST(KinetoReader, StreamsFollowTimestampsAndCrossStreamOrder)
{
  Workload w = read_kineto({kDlrm});
  const RankGraph& g = w.graph_of(0);
  std::map<StreamId, double> last_start;
  for (OpId i = 0; i < g.size(); ++i) {
    double s = g.measured_start(i)->seconds();
    StreamId st = g.op(i).stream;
    if (last_start.count(st)) {
      EXPECT_GE(s, last_start[st]); // ops of one stream in timestamp order
    }
    last_start[st] = s;
    for (OpId d : g.deps(i)) // an inferred dependency ended before the op started
      EXPECT_LE(g.measured_start(d)->seconds() + g.measured_duration(d)->seconds(), s + 1e-12);
  }
  EXPECT_GE(g.stream_labels().size(), 3u); // compute, NCCL and copy streams (7, 84, 22/24 in the trace)
}

TEST(KinetoReader, MalformedJsonNamesFileRankAndByte)
{
  TempDir t("malformed");
  std::string text = gunzip(kNcclData);
  std::string path = t.write("cut.json", text.substr(0, text.size() / 2));
  try {
    read_kineto({path});
    FAIL();
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(has(msg, "malformed JSON")) << msg;
    EXPECT_TRUE(has(msg, "cut.json")) << msg;
    EXPECT_TRUE(has(e.where().field, "rank 0 byte ")) << e.where().field; // distributedInfo.rank is 0
  }
}

TEST(KinetoReader, RanksDisagreeOnACollective)
{
  auto traces = untar(kDlrm);
  TempDir t("disagree");
  std::vector<std::string> paths;
  for (auto& [rank, trace] : traces) {
    if (rank == 3) { // double the first all-reduce's element count on rank 3
      for (auto& e : trace["traceEvents"])
        if (e.value("name", "") == "nccl:all_reduce") {
          e["args"]["Input Dims"][0][0] = e["args"]["Input Dims"][0][0].get<long long>() * 2;
          break;
        }
    }
    paths.push_back(t.write("worker" + std::to_string(rank) + ".json", trace.dump()));
  }
  try {
    read_kineto(paths);
    FAIL();
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(has(msg, "ranks disagree on a collective")) << msg;
    EXPECT_TRUE(has(msg, "worker3.json")) << msg;
    EXPECT_TRUE(has(e.where().field, "rank 3 event ")) << e.where().field;
  }
}

// Found by tests/fuzz (fuzz_kineto): a number beyond a double, a value of another JSON type than the format has, an
// id or rank no integer can hold each escaped the reader as an nlohmann-json exception or undefined behaviour (exit 3
// or worse). Each is now refused naming the file (one rank's) and the event or field it sits in.
TEST(KinetoReader, ValuesOfTheWrongTypeOrRangeAreRefusedWithTheirEvent)
{
  TempDir t("bad_values");
  {
    // 1e400 does not fit a double: nlohmann-json throws out_of_range (406) rather than a parse_error.
    const std::string path =
        t.write("huge.json", R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1e400, "dur": 1}]})");
    try {
      read_kineto({path});
      FAIL() << "expected an InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, path);
      EXPECT_TRUE(has(e.what(), "beyond the range of a double")) << e.what();
    }
  }
  const json trace = json::parse(gunzip(kNcclData)); // distributedInfo.rank 0
  const json& ev = trace["traceEvents"];
  auto first = [&](const std::string& cat, const char* arg_key) -> std::size_t {
    for (std::size_t i = 0; i < ev.size(); ++i)
      if (ev[i].value("cat", "") == cat && (!arg_key || (ev[i].contains("args") && ev[i]["args"].contains(arg_key))))
        return i;
    ADD_FAILURE() << "no " << cat << " event in " << kNcclData;
    return 0;
  };
  struct Case {
    std::string name;
    std::function<void(json&)> change;
    std::string field; // where the error must point
    std::string rule;  // a part of the rule it must state
  };
  const std::size_t kernel = first("kernel", nullptr);
  const std::size_t launch = first("cuda_runtime", "correlation");
  const std::vector<Case> cases = {
      {"cat_is_a_number", [&](json& j) { j["traceEvents"][kernel]["cat"] = 5; }, "event " + std::to_string(kernel),
       "type must be string"},
      {"correlation_1e300", [&](json& j) { j["traceEvents"][launch]["args"]["correlation"] = 1e300; },
       "rank 0 event " + std::to_string(launch), "correlation is 1e+300"},
      {"rank_1e300", [](json& j) { j["distributedInfo"]["rank"] = 1e300; }, "distributedInfo.rank",
       "not a whole number from 0 to"},
      {"rank_negative", [](json& j) { j["distributedInfo"]["rank"] = -1; }, "distributedInfo.rank",
       "not a whole number from 0 to"},
      {"world_size_1e300", [](json& j) { j["distributedInfo"]["world_size"] = 1e300; }, "distributedInfo.world_size",
       "not a whole number from 1 to"},
  };
  for (const Case& c : cases) {
    json changed = trace;
    c.change(changed);
    const std::string path = t.write(c.name + ".json", changed.dump());
    try {
      read_kineto({path});
      ADD_FAILURE() << c.name << ": expected an InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, path) << c.name;
      EXPECT_EQ(e.where().field, c.field) << c.name << ": " << e.what();
      EXPECT_TRUE(has(e.rule(), c.rule)) << c.name << ": " << e.what();
    }
  }
}
