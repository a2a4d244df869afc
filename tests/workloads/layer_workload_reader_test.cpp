// The ASTRA-sim 1.0 and SimAI/AICB readers on the real files in tests/data/traces/{astrasim1_text,simai}. Expected
// counts are computed here from the files' columns, with the training-loop rules of ASTRA-sim's Workload.cc written
// out per policy (which phases issue which collective); group layouts from Megatron's rank order.
#include "railyard/workloads/readers.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace railyard;
using namespace railyard::workloads;
namespace fs = std::filesystem;

namespace {

const std::string kAstra = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/astrasim1_text";
const std::string kSimai = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/simai";

struct Row {
  std::string fwd, ig, wg, policy;
};

// Header tokens and the layer rows of a file, split on whitespace.
std::pair<std::vector<std::string>, std::vector<Row>> rows(const std::string& path)
{
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::istringstream hs(line);
  std::vector<std::string> head;
  for (std::string t; hs >> t;)
    head.push_back(t);
  std::getline(in, line);
  std::vector<Row> out;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    std::vector<std::string> t;
    for (std::string x; s >> x;)
      t.push_back(x);
    if (t.empty()) continue;
    out.push_back({t[3], t[6], t[9], t.size() > 12 ? t[12] : ""});
  }
  return {head, out};
}

struct Want {
  std::size_t compute = 0, collective = 0;
};

// ASTRA-sim's loops (Workload.cc iterate_*): DATA computes fwd for every layer, then wg (+ its all-reduce) for every
// layer and ig for all but layer 0; MODEL and the hybrids compute fwd/ig/wg for every layer, issue the fwd comm, the
// ig comm except on layer 0, and (hybrids) the wg comm; the Transformer loops also issue layer 0's ig comm.
Want expected(const std::string& path)
{
  auto [head, layers] = rows(path);
  const std::string policy = head[0];
  const std::size_t n = layers.size();
  Want w;
  auto is = [](const std::string& t) { return t != "NONE"; };
  if (policy == "MICRO") {
    for (const auto& l : layers)
      w.collective += is(l.wg);
    return w;
  }
  if (policy == "DATA") {
    w.compute = 3 * n - 1;
    for (const auto& l : layers)
      w.collective += is(l.wg);
    return w;
  }
  if (policy == "HYBRID_DLRM") {
    w.compute = 3 * n - 1;
    for (const auto& l : layers)
      w.collective += is(l.wg) + (l.fwd == "ALLTOALL");
    w.collective += is(layers[0].ig); // the embeddings' backward all-to-all
    return w;
  }
  const bool transformer = policy.rfind("HYBRID_TRANSFORMER", 0) == 0;
  w.compute = 3 * n;
  for (std::size_t i = 0; i < n; ++i) {
    const Row& l = layers[i];
    std::string p = l.policy.empty() ? policy : l.policy;
    if (p != "DATA") w.collective += is(l.fwd) + (is(l.ig) && (transformer || i > 0));
    if (p != "MODEL") w.collective += is(l.wg);
  }
  return w;
}

int comm_size(const Workload& w, int rank, const std::string& op_name)
{
  const RankGraph& g = w.graph_of(rank);
  for (OpId i = 0; i < g.size(); ++i)
    if (g.name(i) == op_name) return static_cast<int>(w.communicators[w.communicator_of(rank, g.op(i))].ranks.size());
  return -1;
}

std::vector<int> members(const Workload& w, int rank, const std::string& op_name)
{
  const RankGraph& g = w.graph_of(rank);
  for (OpId i = 0; i < g.size(); ++i)
    if (g.name(i) == op_name) return w.communicators[w.communicator_of(rank, g.op(i))].ranks;
  return {};
}

bool has(const std::string& text, const std::string& part)
{
  return text.find(part) != std::string::npos;
}

struct TempFile {
  fs::path path;
  TempFile(const std::string& name, const std::string& text)
      : path(fs::temp_directory_path() / (name + "_" + std::to_string(::getpid())))
  {
    std::ofstream(path) << text;
  }
  ~TempFile() { fs::remove(path); }
};

std::string slurp(const std::string& path)
{
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

} // namespace

TEST(AstraSim1Reader, EveryFileLoadsWithTheExpectedOps)
{
  LayerWorkloadOptions o;
  o.world_size = 16;
  o.model_parallel = 4;
  int files = 0;
  for (const auto& e : fs::directory_iterator(kAstra)) {
    if (e.path().extension() != ".txt") continue;
    ++files;
    const std::string path = e.path().string();
    Workload w = read_astrasim1_workload(path, o);
    ASSERT_EQ(w.world_size(), 16) << path;
    ASSERT_EQ(w.graphs.size(), 1u) << path; // one program shared by every rank
    OpCounts c = count_ops(w.graph_of(0));
    Want want = expected(path);
    if (e.path().filename() == "Transformer_HybridParallel_Fwd_In_Bckwd.txt") {
      // Header: checkpoints at layers 2 and 11, recompute initiated at layers 19 and 10, so layers 11..18 and 2..9
      // run their forward (compute and fwd comm) again: 16 computes; count those layers' fwd comms from the file.
      auto [head, layers] = rows(path);
      std::size_t again = 0;
      for (int i : {11, 12, 13, 14, 15, 16, 17, 18, 2, 3, 4, 5, 6, 7, 8, 9})
        again += layers[i].fwd != "NONE";
      want.compute += 16;
      want.collective += again;
    }
    // Weight updates (the last column) are dependency-only ops after their all-reduce; the rest are the loop's.
    std::size_t updates = 0;
    for (const Op& op : w.graph_of(0).ops())
      updates += op.kind == OpKind::Compute && op.stream == kUnordered;
    EXPECT_EQ(c.compute - updates, want.compute) << path;
    EXPECT_EQ(c.collective, want.collective) << path;
    EXPECT_EQ(c.send + c.recv, 0u) << path;
  }
  EXPECT_EQ(files, 10); // README: 10 workload files
}

TEST(AstraSim1Reader, HybridGroupLayouts)
{
  LayerWorkloadOptions o;
  o.world_size = 16;
  // Transformer: model_parallel_NPU_group: 4 from the header; TP groups are consecutive ranks, DP groups stride 4.
  Workload t = read_astrasim1_workload(kAstra + "/Transformer_HybridParallel.txt", o);
  EXPECT_EQ(members(t, 5, "Embedding fwd comm"), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(members(t, 5, "Q1 wg comm"), (std::vector<int>{1, 5, 9, 13}));
  EXPECT_EQ(t.communicators[t.communicator_of(5, t.graph_of(5).op(1))].kind, GroupKind::TP);
  // HYBRID_MODEL_DATA splits the other way: data groups are consecutive blocks of 16 / 4 = 4 ranks.
  o.model_parallel = 4;
  Workload md = read_astrasim1_workload(kAstra + "/MLP_HybridParallel_Model_Data.txt", o);
  EXPECT_EQ(members(md, 5, "layer_64_2_mlp0 wg comm"), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(members(md, 5, "layer_64_2_mlp0 fwd comm"), (std::vector<int>{1, 5, 9, 13}));
  // DATA: the weight-gradient all-reduce spans all 16 ranks.
  Workload d = read_astrasim1_workload(kAstra + "/Resnet50_DataParallel.txt", o);
  EXPECT_EQ(comm_size(d, 3, "conv1 wg comm"), 16);
}

TEST(AstraSim1Reader, ComputeTimesInTicksAndBlockingOrder)
{
  LayerWorkloadOptions o;
  o.world_size = 8;
  o.tick = units::ns(1);
  Workload w = read_astrasim1_workload(kAstra + "/MLP_ModelParallel.txt", o);
  const RankGraph& g = w.graph_of(0);
  // Line 3: layer_64_1_mlp0 -1 32291 ALLGATHER 37632 ...: 32,291 cycles at 1 GHz.
  ASSERT_EQ(g.name(0), "layer_64_1_mlp0 fwd");
  EXPECT_DOUBLE_EQ(g.measured_duration(0)->seconds(), 32291e-9);
  EXPECT_EQ(g.source_id(0), 3u);
  // The fwd all-gather is blocking: the next layer's forward compute depends on it.
  ASSERT_EQ(g.name(1), "layer_64_1_mlp0 fwd comm");
  EXPECT_EQ(g.op(1).collective(), CollectiveKind::AllGather);
  EXPECT_DOUBLE_EQ(g.op(1).bytes.bytes(), 37632);
  ASSERT_EQ(g.name(2), "layer_64_1_mlp1 fwd");
  ASSERT_EQ(g.deps(2).size(), 1u);
  EXPECT_EQ(g.deps(2)[0], 1u);
}

TEST(SimAiReader, ExampleMoeWorkloadAt9216Gpus)
{
  const std::string path = kSimai + "/SimAI_example/workload_analytical.txt";
  Workload w = read_simai_workload(path);
  // Header: model_parallel_NPU_group: 2 ep: 16 pp: 12 ... all_gpus: 9216 -> DP = 9216 / (2 x 12) = 384.
  ASSERT_EQ(w.world_size(), 9216);
  ASSERT_EQ(w.graphs.size(), 1u);
  OpCounts c = count_ops(w.graph_of(0));
  Want want = expected(path);
  std::size_t updates = 0;
  for (const Op& op : w.graph_of(0).ops())
    updates += op.kind == OpKind::Compute && op.stream == kUnordered;
  EXPECT_EQ(c.compute - updates, want.compute);
  EXPECT_EQ(c.collective, want.collective);
  EXPECT_FALSE(w.notes.empty()); // pipeline parallelism is noted as not expanded

  // Group layouts for rank 0 (Megatron order: rank = tp + 2 * (dp + 384 * pp)), EP blocks inside DP groups.
  const RankGraph& g = w.graph_of(0);
  std::set<std::size_t> sizes_tp, sizes_ep, sizes_dp, sizes_dpep;
  for (OpId i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::Collective) continue;
    const Communicator& cm = w.communicators[w.communicator_of(0, op)];
    switch (cm.kind) {
    case GroupKind::TP:
      sizes_tp.insert(cm.ranks.size());
      EXPECT_EQ(cm.ranks, (std::vector<int>{0, 1}));
      break;
    case GroupKind::EP: {
      sizes_ep.insert(cm.ranks.size());
      std::vector<int> want_ep; // dp 0..15 at tp 0, pp 0: ranks 0, 2, ..., 30
      for (int d = 0; d < 16; ++d)
        want_ep.push_back(2 * d);
      EXPECT_EQ(cm.ranks, want_ep);
      break;
    }
    case GroupKind::DP:
      if (cm.ranks.size() == 384) {
        sizes_dp.insert(384);
        EXPECT_EQ(cm.ranks[1], 2); // stride TP = 2
      } else {
        sizes_dpep.insert(cm.ranks.size()); // dp = 0, 16, 32, ...: ranks 0, 32, 64, ...
        EXPECT_EQ(cm.ranks[1], 32);
      }
      break;
    default:
      ADD_FAILURE() << "unexpected group " << cm.name;
    }
  }
  EXPECT_EQ(sizes_tp, (std::set<std::size_t>{2}));
  EXPECT_EQ(sizes_ep, (std::set<std::size_t>{16}));
  EXPECT_EQ(sizes_dp, (std::set<std::size_t>{384}));
  EXPECT_EQ(sizes_dpep, (std::set<std::size_t>{384 / 16}));
}

TEST(SimAiReader, EveryAicbFileLoads)
{
  LayerWorkloadOptions o;
  o.world_size = 16; // the AICB model files name no GPU count (older header)
  for (const char* dir : {"/aicb_simAI_model_workload", "/aicb_simAI_micro_test", "/SimAI_example"}) {
    for (const auto& e : fs::directory_iterator(kSimai + dir)) {
      if (e.path().extension() != ".txt") continue;
      const std::string path = e.path().string();
      LayerWorkloadOptions oo = o;
      if (e.path().filename() == "workload_analytical.txt")
        oo.world_size = 0;                                                // its header's all_gpus: 9216 (tested above)
      if (e.path().filename() == "microAllReduce.txt") oo.world_size = 0; // all_gpus: 8
      Workload w = read_simai_workload(path, oo);
      OpCounts c = count_ops(w.graph_of(0));
      std::size_t updates = 0;
      for (const Op& op : w.graph_of(0).ops())
        updates += op.kind == OpKind::Compute && op.stream == kUnordered;
      Want want = expected(path);
      EXPECT_EQ(c.compute - updates, want.compute) << path;
      EXPECT_EQ(c.collective, want.collective) << path;
    }
  }
  Workload micro = read_simai_workload(kSimai + "/SimAI_example/microAllReduce.txt");
  EXPECT_EQ(micro.world_size(), 8);
  // Two TP=8 all-reduces of 16 MiB and 64 MiB.
  std::vector<double> sizes;
  for (const Op& op : micro.graph_of(0).ops())
    if (op.kind == OpKind::Collective) sizes.push_back(op.bytes.bytes());
  EXPECT_EQ(sizes, (std::vector<double>{16.0 * (1 << 20), 64.0 * (1 << 20)}));
}

TEST(LayerWorkloadErrors, UnknownCommTypeNamesLine)
{
  std::string text = slurp(kAstra + "/MLP_ModelParallel.txt");
  auto at = text.find("ALLREDUCE");
  text.replace(at, 9, "ALLSMASH");
  TempFile f("railyard_bad_type.txt", text);
  LayerWorkloadOptions o;
  o.world_size = 8;
  try {
    read_astrasim1_workload(f.path.string(), o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "unknown communication type 'ALLSMASH'")) << e.what();
    EXPECT_EQ(e.where().file, f.path.string());
    EXPECT_EQ(e.where().line, 3); // the first layer line
  }
}

TEST(LayerWorkloadErrors, ParallelismThatDoesNotDivide)
{
  LayerWorkloadOptions o;
  o.world_size = 1000; // not a multiple of TP 2 x PP 12 = 24
  try {
    read_simai_workload(kSimai + "/SimAI_example/workload_analytical.txt", o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "does not divide the GPU count")) << e.what();
    EXPECT_EQ(e.where().line, 1);
  }
  o.world_size = 48; // 48 / 24 = DP 2, not a multiple of EP 16
  EXPECT_THROW(read_simai_workload(kSimai + "/SimAI_example/workload_analytical.txt", o), InputError);
}

TEST(LayerWorkloadErrors, MissingGpuCountAndBadFieldCount)
{
  try {
    read_astrasim1_workload(kAstra + "/Resnet50_DataParallel.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "how many GPUs")) << e.what();
  }
  std::string text = slurp(kAstra + "/Resnet50_DataParallel.txt");
  auto eol = text.find('\n', text.find('\n', text.find('\n') + 1) + 1); // end of line 3
  text.insert(eol, " extra");
  TempFile f("railyard_bad_fields.txt", text);
  LayerWorkloadOptions o;
  o.world_size = 8;
  try {
    read_astrasim1_workload(f.path.string(), o);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "has 13 fields, not 12")) << e.what();
    EXPECT_EQ(e.where().line, 3);
  }
}

TEST(AicbPhysicalReader, EveryCsvLoadsWithItsRowsAsCollectives)
{
  const std::string dir = kSimai + "/aicb_physical_model_workload";
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".csv") continue;
    ++files;
    const std::string path = e.path().string();
    // Independent count: every row after the two header lines except AICB's epoch_end markers, `count` times;
    // sizes are the msg_size column; the group size is the comm_group_size column.
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    std::getline(in, line);
    std::vector<double> sizes;
    std::map<std::string, std::size_t> group_size;
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream s(line);
      for (std::string x; std::getline(s, x, ',');)
        f.push_back(x);
      if (f.size() < 12 || f[0] == "CommType.epoch_end") continue;
      for (int k = 0; k < std::stoi(f[11]); ++k)
        sizes.push_back(std::stod(f[3]));
      group_size[f[1]] = std::stoul(f[2]);
    }
    Workload w = read_aicb_physical_workload(path);
    ASSERT_EQ(w.world_size(), 128) << path; // "[rank0 ~ rank127]"
    const RankGraph& g = w.graph_of(77);
    std::vector<double> got;
    for (OpId i = 0; i < g.size(); ++i) {
      const Op& op = g.op(i);
      ASSERT_EQ(op.kind, OpKind::Collective);
      got.push_back(op.bytes.bytes());
      const Communicator& c = w.communicators[w.communicator_of(77, op)];
      if (c.kind == GroupKind::TP) {
        EXPECT_EQ(c.ranks.size(), group_size["CommGroup.tp_group"]) << path;
      }
      if (c.kind == GroupKind::DP) {
        EXPECT_EQ(c.ranks.size(), group_size["CommGroup.dp_group"]) << path;
      }
    }
    EXPECT_EQ(got, sizes) << path;
  }
  EXPECT_EQ(files, 2);
}

// AICB's CSV as RFC 4180 allows it (tests/cli/test_cli_outputs.cpp has Railyard's own CSVs): CRLF line ends and
// quoted fields, one with a comma, read as the same collectives as the plain file.
TEST(AicbPhysicalReader, CrLfAndQuotedFieldsReadAsThePlainFile)
{
  const fs::path dir = fs::temp_directory_path() / ("railyard_aicb_rfc_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string head = "[rank0 ~ rank15]\n"
                           "comm_type,comm_group,comm_group_size,msg_size,stage,dst,src,additional,_elapsed_time,"
                           "algbw,busbw,count\n";
  const std::string plain = head +
                            "CommType.all_reduce,CommGroup.dp_group,2,8,init.model_setup,None,None,,None,None,None,1\n"
                            "CommType.all_gather,CommGroup.tp_group,8,4096,forward,None,None,,None,None,None,2\n";
  const std::string quoted =
      head +
      "\"CommType.all_reduce\",CommGroup.dp_group,2,\"8\",\"init.model_setup\",None,None,\"a, b\",None,None,None,1\n"
      "CommType.all_gather,\"CommGroup.tp_group\",8,4096,forward,None,None,\"say \"\"hi\"\"\",None,None,None,2\n";
  std::string crlf;
  for (char c : quoted)
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  std::ofstream(dir / "plain.csv", std::ios::binary) << plain;
  std::ofstream(dir / "rfc.csv", std::ios::binary) << crlf;
  LayerWorkloadOptions o;
  const Workload a = read_aicb_physical_workload((dir / "plain.csv").string(), o);
  const Workload b = read_aicb_physical_workload((dir / "rfc.csv").string(), o);
  ASSERT_EQ(a.world_size(), 16);
  ASSERT_EQ(b.world_size(), 16);
  const RankGraph &ga = a.graph_of(3), &gb = b.graph_of(3);
  ASSERT_EQ(gb.size(), ga.size());
  ASSERT_EQ(ga.size(), 3u); // one all-reduce, two all-gathers (count 2)
  for (OpId i = 0; i < ga.size(); ++i) {
    EXPECT_EQ(gb.op(i).bytes.bytes(), ga.op(i).bytes.bytes());
    EXPECT_EQ(b.communicators[b.communicator_of(3, gb.op(i))].ranks,
              a.communicators[a.communicator_of(3, ga.op(i))].ranks);
  }
  fs::remove_all(dir);
}

// Found by tests/fuzz (fuzz_aicb_physical): a rank beyond an int in the "[rank0 ~ rankN]" line made std::stoi throw
// out_of_range (exit 3). That, a reversed range (a negative world) and a range of more than 2^20 ranks are refused at
// line 1, field "ranks".
TEST(AicbPhysicalReader, RankRangesNoJobHasAreRefusedAtLineOne)
{
  const std::string real = slurp(kSimai + "/aicb_physical_model_workload/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv");
  const std::string rest = real.substr(real.find('\n'));
  for (const char* range : {"[rank0 ~ rank99999999999]", "[rank127 ~ rank0]", "[rank0 ~ rank1048576]"}) {
    TempFile f("railyard_aicb_ranks.csv", std::string(range) + rest);
    try {
      read_aicb_physical_workload(f.path.string());
      ADD_FAILURE() << range << ": expected an InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, f.path.string()) << range;
      EXPECT_EQ(e.where().line, 1) << range << ": " << e.what();
      EXPECT_EQ(e.where().field, "ranks") << range << ": " << e.what();
    }
  }
}
