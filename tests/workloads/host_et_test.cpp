// PyTorch host execution traces paired with Kineto traces (KinetoOptions::host_et; workloads/README.md, "PyTorch host
// ET + Kineto"), on the real traces in tests/data/traces (provenance in its README):
// - PARAM's DLRM: 8 Kineto traces and the 8 host ETs of the same run (schema 1.0.1). Expected sizes are read here from
//   the host ET JSON with nlohmann-json and libarchive, independently of the reader: each record_param_comms node's
//   tensors, numel x element size ([id, storage, offset, numel, element size, device]);
// - chakra's 1.0.2-chakra.0.0.4 host ET, whose process_group:init node lists its process group, linked to a Kineto
//   trace written here whose host ops carry the host nodes' rf_ids as "Record function id".
#include "../support/trace_files.hpp"
#include "railyard/workloads/readers.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace railyard;
using namespace railyard::workloads;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using railyard::test::TempDir;

const std::string kTraces = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces";
const std::string kDlrmKineto = kTraces + "/kineto/param_dlrm_8rank_v100/dlrm_kineto.tar.gz";
const std::string kDlrmEt = kTraces + "/kineto/param_dlrm_8rank_v100/dlrm_pytorch_et.tar.gz";
const std::string kChakraEt = kTraces + "/pytorch_host_et/chakra_1.0.2/1.0.2-chakra.0.0.4.tgz";

// The DLRM host ETs by rank: dlrm_pytorch_et/dlrm_eg_K.json is rank K.
std::map<int, json> dlrm_host_ets()
{
  std::map<int, json> out;
  for (auto& [name, text] : railyard::test::json_members_by_name(kDlrmEt)) {
    const std::string base = name.substr(name.find_last_of('/') + 1); // dlrm_eg_K.json
    out[std::stoi(base.substr(8))] = json::parse(text);
  }
  return out;
}

// The DLRM Kineto traces by distributedInfo.rank.
std::map<int, json> dlrm_kineto()
{
  std::map<int, json> out;
  for (auto& [name, text] : railyard::test::json_members_by_name(kDlrmKineto)) {
    json j = json::parse(text);
    const int rank = j["distributedInfo"]["rank"].get<int>();
    out[rank] = std::move(j);
  }
  return out;
}

// Bytes of the tensors in a host ET value: a tensor is [id, storage, offset, numel, element size, "cuda:N"];
// lists of them are walked.
double tensor_bytes(const json& v)
{
  if (!v.is_array()) return 0;
  if (v.size() == 6 && v[5].is_string() && v[3].is_number() && v[4].is_number())
    return v[3].get<double>() * v[4].get<double>();
  double b = 0;
  for (const auto& x : v)
    b += tensor_bytes(x);
  return b;
}

struct Expected {
  CollectiveKind kind;
  double bytes;
};

// A schema 1.0.1 host ET's collectives in rf_id order: record_param_comms other than wait; the collective's name is
// its fifth input (after the tensor, the sequence number, the process group and the rank); its size the input
// tensors (all-to-all(v), all-reduce: nccl-tests count the input).
std::vector<Expected> collectives_of(const json& et)
{
  std::vector<const json*> nodes;
  for (const auto& n : et["nodes"])
    if (n["name"] == "record_param_comms") nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(),
            [](const json* a, const json* b) { return (*a)["rf_id"].get<long>() < (*b)["rf_id"].get<long>(); });
  std::vector<Expected> out;
  for (const json* n : nodes) {
    if ((*n)["input_types"][0] == "Int") continue; // wait: no tensor
    const std::string name = (*n)["inputs"][4];
    EXPECT_TRUE(name == "allreduce" || name == "all_to_all" || name == "all_to_allv") << name;
    out.push_back(
        {name == "allreduce" ? CollectiveKind::AllReduce : CollectiveKind::AllToAll, tensor_bytes((*n)["inputs"][0])});
  }
  return out;
}

std::vector<Expected> collectives_of(const RankGraph& g)
{
  std::vector<Expected> out;
  for (const Op& op : g.ops())
    if (op.kind == OpKind::Collective) out.push_back({op.collective(), op.bytes.bytes()});
  return out;
}

bool operator==(const Expected& a, const Expected& b)
{
  return a.kind == b.kind && a.bytes == b.bytes;
}

std::ostream& operator<<(std::ostream& os, const Expected& e)
{
  return os << to_string(e.kind) << " " << e.bytes << " B";
}

bool has(const std::string& text, const std::string& part)
{
  return text.find(part) != std::string::npos;
}

std::string notes_of(const Workload& w)
{
  std::string s;
  for (const auto& n : w.notes)
    s += n + "\n";
  return s;
}

// The message of the InputError `f` throws ("" and a test failure when it throws none).
template <class F>
std::string error_of(F f)
{
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

// chakra's 1.0.2 host ET as JSON.
json chakra_et()
{
  auto members = railyard::test::json_members_by_name(kChakraEt);
  EXPECT_EQ(members.size(), 1u); // 1.0.2-chakra.0.0.4.json; the ._ fork is skipped
  return json::parse(members.begin()->second);
}

// A host node's attribute (schema 1.0.2 keeps rf_id and the rest in attrs).
const json* attr(const json& node, const std::string& name)
{
  for (const auto& a : node["attrs"])
    if (a["name"] == name) return &a["value"];
  return nullptr;
}

const json& node_with_rf(const json& et, long rf)
{
  for (const auto& n : et["nodes"])
    if (const json* r = attr(n, "rf_id"); r && r->get<long>() == rf) return n;
  ADD_FAILURE() << "no node with rf_id " << rf;
  static const json none;
  return none;
}

// One rank's Kineto trace of two NCCL all-gather kernels, each launched inside a host op that carries a host node's
// rf_id as "Record function id": the first inside record_param_comms (rf_id `rf1`), the second inside a
// nccl:all_gather annotation (rf_id `rf2`, whose parent is its record_param_comms). No size or group in any args.
std::string kineto_of_two_all_gathers(int rank, int world, long rf1, long rf2)
{
  json events = json::array();
  auto host = [&](const char* cat, const char* name, double ts, double dur, long rf) {
    events.push_back({{"ph", "X"},
                      {"cat", cat},
                      {"name", name},
                      {"pid", 1},
                      {"tid", 1},
                      {"ts", ts},
                      {"dur", dur},
                      {"args", {{"Record function id", rf}}}});
  };
  auto launch = [&](double ts, int corr) {
    events.push_back({{"ph", "X"},
                      {"cat", "cuda_runtime"},
                      {"name", "cudaLaunchKernel"},
                      {"pid", 1},
                      {"tid", 1},
                      {"ts", ts},
                      {"dur", 5},
                      {"args", {{"correlation", corr}}}});
  };
  auto kernel = [&](double ts, int corr) {
    events.push_back({{"ph", "X"},
                      {"cat", "kernel"},
                      {"name", "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"},
                      {"pid", 0},
                      {"tid", 7},
                      {"ts", ts},
                      {"dur", 20},
                      {"args", {{"correlation", corr}, {"stream", 7}}}});
  };
  host("cpu_op", "record_param_comms", 100, 50, rf1);
  launch(120, 1);
  kernel(200, 1);
  host("user_annotation", "nccl:all_gather", 300, 50, rf2);
  launch(320, 2);
  kernel(400, 2);
  json trace = {{"distributedInfo", {{"backend", "nccl"}, {"rank", rank}, {"world_size", world}}},
                {"traceEvents", events}};
  return trace.dump();
}

} // namespace

// PARAM's DLRM pair: every NCCL kernel of the 8 Kineto traces takes its size from the record_param_comms node of its
// rank's host ET, linked in order (the 2023 traces carry no Record function id). The sizes equal the host nodes'
// tensors, read here, and agree with what the Kineto traces' nccl:* annotations say (Input Dims x element size).
TEST(HostEt, DlrmPairTakesSizesFromRecordParamComms)
{
  const auto ets = dlrm_host_ets();
  const auto kineto = dlrm_kineto();
  ASSERT_EQ(ets.size(), 8u);
  ASSERT_EQ(kineto.size(), 8u);

  // Rank 0 by hand: the rf_ids of its collective record_param_comms nodes and their tensors' numel x element size.
  const std::vector<std::tuple<long, CollectiveKind, double>> rank0 = {
      {513, CollectiveKind::AllToAll, 6144 * 4.0},      // all_to_allv of 6,144 floats
      {748, CollectiveKind::AllToAll, 24 * 8.0},        // all_to_all of 24 long ints
      {776, CollectiveKind::AllToAll, 384 * 4.0},       // all_to_allv of 384 ints
      {781, CollectiveKind::AllToAll, 3392 * 4.0},      // all_to_allv of 3,392 ints
      {903, CollectiveKind::AllReduce, 394241 * 4.0},   // allreduce of 394,241 floats
      {1188, CollectiveKind::AllToAll, 6144 * 4.0},     // all_to_allv of 6,144 floats
      {1247, CollectiveKind::AllReduce, 112 * 4.0},     // allreduce of 112 floats
      {1400, CollectiveKind::AllReduce, 226960 * 4.0}}; // allreduce of 226,960 floats
  std::vector<Expected> by_hand;
  for (const auto& [rf, kind, bytes] : rank0) {
    const json* node = nullptr;
    for (const auto& n : ets.at(0)["nodes"])
      if (n["rf_id"] == rf) node = &n;
    ASSERT_NE(node, nullptr) << "rf_id " << rf;
    EXPECT_EQ((*node)["name"], "record_param_comms");
    EXPECT_EQ(tensor_bytes((*node)["inputs"][0]), bytes) << "rf_id " << rf;
    by_hand.push_back({kind, bytes});
  }
  EXPECT_EQ(collectives_of(ets.at(0)), by_hand);

  KinetoOptions o;
  o.host_et = {kDlrmEt};
  const Workload w = read_kineto({kDlrmKineto}, o);
  ASSERT_EQ(w.world_size(), 8);
  std::size_t nccl_kernels = 0;
  for (const auto& [rank, trace] : kineto) {
    const std::vector<Expected> want = collectives_of(ets.at(rank));
    EXPECT_EQ(collectives_of(w.graph_of(rank)), want) << "rank " << rank;
    if (rank == 0) {
      EXPECT_EQ(want, by_hand);
    }

    // The Kineto trace's own sizes, where it has them: the nccl:* annotations' first Input Dims x element size, in
    // start order (one per collective here). They agree with the host ET's.
    std::vector<std::pair<double, Expected>> dims;
    const std::map<std::string, double> elem = {{"float", 4}, {"int", 4}, {"long int", 8}};
    for (const auto& e : trace["traceEvents"]) {
      const std::string n = e.value("name", "");
      if (n == "nccl:all_to_all" || n == "nccl:all_reduce") {
        double numel = 1;
        for (const auto& d : e["args"]["Input Dims"][0])
          numel *= d.get<double>();
        dims.push_back({e["ts"].get<double>(),
                        {n == "nccl:all_reduce" ? CollectiveKind::AllReduce : CollectiveKind::AllToAll,
                         numel * elem.at(e["args"]["Input type"][0].get<std::string>())}});
      }
      const bool nccl = e.value("cat", "") == "kernel" && e.value("name", "").rfind("ncclKernel", 0) == 0;
      nccl_kernels += nccl ? 1 : 0;
    }
    std::sort(dims.begin(), dims.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Expected> from_dims;
    for (const auto& d : dims)
      from_dims.push_back(d.second);
    EXPECT_EQ(from_dims, want) << "rank " << rank;
  }
  ASSERT_EQ(nccl_kernels, 64u); // README: 5 all-to-all + 3 all-reduce kernels per rank

  // The note: every kernel lacked args, every one was linked and took its size; no group (no process_group:init
  // node in schema 1.0.1), nothing unlinked, no disagreement with Input Dims.
  const std::string notes = notes_of(w);
  EXPECT_TRUE(has(notes, "host execution traces (8 files, schema 1.0.1) paired with the Kineto traces of ranks 0, 1, "
                         "2, 3, 4, 5, 6, 7, linked 8 in order"))
      << notes;
  EXPECT_TRUE(has(notes, "of 64 NCCL kernels whose size or process group the Kineto trace's args do not give, 64 were "
                         "linked to their record_param_comms node; 64 collectives took their size and 0 their process "
                         "group from the host ET; 0 kernels could not be linked"))
      << notes;
  EXPECT_TRUE(has(notes, "8 of the 8 host execution traces have no ## process_group:init ## node (first: ")) << notes;
  EXPECT_FALSE(has(notes, "differ from the nccl:* annotation")) << notes;

  // Without the host ETs the same sizes come from Input Dims, which agree.
  const Workload plain = read_kineto({kDlrmKineto});
  for (int rank = 0; rank < 8; ++rank)
    EXPECT_EQ(collectives_of(plain.graph_of(rank)), collectives_of(w.graph_of(rank))) << "rank " << rank;
}

// A record_param_comms node missing from rank 2's host ET: its Kineto trace has one more, so the order link would
// pair the wrong nodes and rank 2 is not linked; its 8 kernels keep their Input Dims sizes and are counted.
TEST(HostEt, OrderLinkRefusesAHostEtThatDoesNotMatch)
{
  TempDir t("order");
  std::vector<std::string> paths;
  for (auto& [rank, et] : dlrm_host_ets()) {
    if (rank == 2) {
      auto& nodes = et["nodes"];
      for (auto it = nodes.begin(); it != nodes.end(); ++it)
        if ((*it)["name"] == "record_param_comms" && (*it)["inputs"].size() > 4 &&
            (*it)["inputs"][4] == "allreduce") { // its first all-reduce
          nodes.erase(it);
          break;
        }
    }
    paths.push_back(t.write("dlrm_eg_" + std::to_string(rank) + ".json", et.dump()));
  }
  KinetoOptions o;
  o.host_et = paths;
  const Workload w = read_kineto({kDlrmKineto}, o);
  const std::string notes = notes_of(w);
  EXPECT_TRUE(has(notes, "host execution trace not linked in order, rank 2: its Kineto trace has 13 "
                         "record_param_comms events and its host ET 12 record_param_comms nodes"))
      << notes;
  EXPECT_TRUE(has(notes, "of 64 NCCL kernels whose size or process group the Kineto trace's args do not give, 56 were "
                         "linked to their record_param_comms node; 56 collectives took their size and 0 their process "
                         "group from the host ET; 8 kernels could not be linked (first: "))
      << notes;
  EXPECT_TRUE(has(notes, "rank 2 event")) << notes;
  EXPECT_TRUE(has(notes, "rank 2's host execution trace could not be linked in order")) << notes;
  // Rank 2's sizes are still the ones every rank has (Input Dims), so the workload stays consistent.
  EXPECT_EQ(collectives_of(w.graph_of(2)), collectives_of(w.graph_of(0)));
}

// chakra's 1.0.2 host ET: its process_group:init node lists process group "0" (every rank of a group of 2, backend
// 82149104), which its record_param_comms nodes name by that backend id. A Kineto trace of rank 0 (of 2) whose host ops
// carry rf_ids 19 (a record_param_comms) and 46 (a nccl:all_gather annotation, child of record_param_comms rf_id 45)
// links both kernels: each all-gather takes its size (its whole output) and its group from the host ET.
TEST(HostEt, Chakra102ProcessGroupsFromInitNode)
{
  const json et = chakra_et();
  ASSERT_EQ(et["schema"], "1.0.2-chakra.0.0.4");
  // The process groups, read here from the init node's JSON payload.
  json groups;
  for (const auto& n : et["nodes"])
    if (n["name"] == "## process_group:init ##") groups = json::parse(n["inputs"]["values"][0].get<std::string>());
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0]["pg_name"], "0");
  EXPECT_TRUE(groups[0]["ranks"].empty()); // every rank ...
  const int group_size = groups[0]["group_size"].get<int>();
  EXPECT_EQ(group_size, 2); // ... of a group of 2
  // The two record_param_comms: all_gather, the process group by its backend id, the output two tensors of one float.
  std::vector<double> want;
  for (long rf : {19L, 45L}) {
    const json& n = node_with_rf(et, rf);
    EXPECT_EQ(n["name"], "record_param_comms");
    EXPECT_EQ(n["inputs"]["values"][4], "all_gather");
    EXPECT_EQ(n["inputs"]["values"][2], groups[0]["backend_id"]);
    want.push_back(tensor_bytes(n["outputs"]["values"])); // nccl-tests: an all-gather's whole output
  }
  EXPECT_EQ(want, (std::vector<double>{2 * 1 * 4.0, 2 * 1 * 4.0}));
  EXPECT_EQ(node_with_rf(et, 46)["name"], "nccl:all_gather");
  EXPECT_EQ(node_with_rf(et, 46)["ctrl_deps"], node_with_rf(et, 45)["id"]);

  TempDir t("chakra");
  KinetoOptions o;
  o.host_et = {kChakraEt};
  const Workload w = read_kineto({t.write("trace.json", kineto_of_two_all_gathers(0, 2, 19, 46))}, o);
  ASSERT_EQ(w.world_size(), 1); // rank 0 of 2 traced
  std::vector<double> got;
  for (const Op& op : w.graph_of(0).ops()) {
    ASSERT_EQ(op.kind, OpKind::Collective);
    EXPECT_EQ(op.collective(), CollectiveKind::AllGather);
    got.push_back(op.bytes.bytes());
    const Communicator& c = w.communicators.at(static_cast<std::size_t>(op.comm));
    EXPECT_TRUE(has(c.name, "pg 0")) << c.name;
    EXPECT_EQ(c.recorded_ranks.size(), static_cast<std::size_t>(group_size)) << c.name;
  }
  EXPECT_EQ(got, want);
  const std::string notes = notes_of(w);
  EXPECT_TRUE(has(notes, "paired with the only Kineto trace given, rank 0")) << notes; // its name gives no rank
  EXPECT_TRUE(has(notes, "linked 1 by Record function id = rf_id")) << notes;
  EXPECT_TRUE(has(notes, "of 2 NCCL kernels whose size or process group the Kineto trace's args do not give, 2 were "
                         "linked to their record_param_comms node; 2 collectives took their size and 2 their process "
                         "group from the host ET; 0 kernels could not be linked"))
      << notes;
}

// A host ET alone given as the Kineto trace says what it is and what to pair it with; a Kineto trace given as a host
// ET is refused the other way round. Both name the file and the rank.
TEST(HostEt, WrongRoleIsNamed)
{
  TempDir t("role");
  const auto ets = dlrm_host_ets();
  const std::string et3 = t.write("dlrm_eg_3.json", ets.at(3).dump());
  std::string msg = error_of([&] { read_kineto({et3}); });
  EXPECT_TRUE(has(msg, "dlrm_eg_3.json")) << msg;
  EXPECT_TRUE(has(msg, "rank 3")) << msg;
  EXPECT_TRUE(has(msg, "a PyTorch host execution trace (schema 1.0.1, " + std::to_string(ets.at(3)["nodes"].size()) +
                           " nodes): it has no GPU activity"))
      << msg;
  EXPECT_TRUE(has(msg, "the Kineto trace of the same rank")) << msg;
  EXPECT_TRUE(has(msg, "workload.host_et")) << msg;

  const auto kineto = dlrm_kineto();
  const std::string k5 = t.write("worker5.json", kineto.at(5).dump());
  KinetoOptions o;
  o.host_et = {k5};
  msg = error_of([&] { read_kineto({k5}, o); });
  EXPECT_TRUE(has(msg, "worker5.json")) << msg;
  EXPECT_TRUE(has(msg, "rank 5")) << msg;
  EXPECT_TRUE(has(msg, "a Kineto (PyTorch profiler) trace, not a host execution trace")) << msg;
}

// Pairing by rank: a host ET whose rank cannot be told among several Kineto traces, two host ETs of one rank, and a
// host ET whose rank has no Kineto trace are refused, naming the files and ranks.
TEST(HostEt, AmbiguousPairingIsRefused)
{
  TempDir t("pairing");
  const auto kineto = dlrm_kineto();
  const auto ets = dlrm_host_ets();
  const std::string k0 = t.write("k0.json", kineto.at(0).dump());
  const std::string k1 = t.write("k1.json", kineto.at(1).dump());

  KinetoOptions o;
  o.host_et = {kChakraEt}; // 1.0.2-chakra.0.0.4.json: no rank field, several numbers in its name
  std::string msg = error_of([&] { read_kineto({k0, k1}, o); });
  EXPECT_TRUE(has(msg, "1.0.2-chakra.0.0.4.json")) << msg;
  EXPECT_TRUE(has(msg, "rank unknown")) << msg;
  EXPECT_TRUE(has(msg, "the rank of this host execution trace cannot be told")) << msg;
  EXPECT_TRUE(has(msg, "dlrm_eg_3.json or host_rank3.json is rank 3")) << msg;

  o.host_et = {t.write("dlrm_eg_0.json", ets.at(0).dump()), t.write("host_rank0.json", ets.at(0).dump())};
  msg = error_of([&] { read_kineto({k0, k1}, o); });
  EXPECT_TRUE(has(msg, "two host execution traces are rank 0")) << msg;
  EXPECT_TRUE(has(msg, "host_rank0.json")) << msg;
  EXPECT_TRUE(has(msg, "dlrm_eg_0.json")) << msg;

  o.host_et = {t.write("dlrm_eg_5.json", ets.at(5).dump())};
  msg = error_of([&] { read_kineto({k0, k1}, o); });
  EXPECT_TRUE(has(msg, "dlrm_eg_5.json")) << msg;
  EXPECT_TRUE(has(msg, "no Kineto trace of rank 5 was given (the Kineto traces are ranks 0, 1)")) << msg;
}

// Bad host ETs: cut short, a tensor that is not one, and a process group that does not hold the rank it is paired
// with. Each names the file, the rank and (where there is one) the node.
TEST(HostEt, BadHostEtsNameFileRankAndNode)
{
  TempDir t("bad");
  const json et = chakra_et();
  const std::string kineto = t.write("trace.json", kineto_of_two_all_gathers(0, 2, 19, 46));
  KinetoOptions o;

  const std::string text = et.dump();
  o.host_et = {t.write("host_rank0.json", text.substr(0, text.size() / 2))};
  std::string msg = error_of([&] { read_kineto({kineto}, o); });
  EXPECT_TRUE(has(msg, "host_rank0.json")) << msg;
  EXPECT_TRUE(has(msg, "rank 0")) << msg;
  EXPECT_TRUE(has(msg, "malformed JSON")) << msg;

  json bad = et;
  for (auto& n : bad["nodes"])
    if (n["id"] == 30) n["inputs"]["values"][0][0][3] = "one"; // the numel of record_param_comms node 30's tensor
  o.host_et = {t.write("host_rank0.json", bad.dump())};
  msg = error_of([&] { read_kineto({kineto}, o); });
  EXPECT_TRUE(has(msg, "rank 0 node 30")) << msg;
  EXPECT_TRUE(has(msg, "not [id, storage, offset, numel, element size, device]")) << msg;

  bad = et;
  for (auto& n : bad["nodes"])
    if (n["name"] == "## process_group:init ##") {
      json groups = json::parse(n["inputs"]["values"][0].get<std::string>());
      groups[0]["ranks"] = {2, 3};
      n["inputs"]["values"][0] = groups.dump();
    }
  o.host_et = {t.write("host_rank0.json", bad.dump())};
  msg = error_of([&] { read_kineto({kineto}, o); });
  EXPECT_TRUE(has(msg, "host_rank0.json")) << msg;
  EXPECT_TRUE(has(msg, "rank 0 node 30")) << msg;
  EXPECT_TRUE(has(msg, "process group '0' of ranks 2,3, which does not hold rank 0")) << msg;
}
