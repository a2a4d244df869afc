// Replaying the real one-node traces in tests/data/traces against their own measured spans (derived here from the
// trace JSON, independently of the reader), and bad input through the real binary: exit code 2 naming file, rank
// and node.
#include "../support/trace_files.hpp"
#include "railyard/common/child_process.hpp"
#include "replay_support.hpp"

#include "railyard/sim/replay.hpp"
#include "railyard/workloads/readers.hpp"

#include "et_def.pb.h"

#include <archive.h>
#include <archive_entry.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

using namespace railyard;
namespace fs = std::filesystem;

namespace {

using railyard::test::gpu_span_us;
using railyard::test::gunzip;
using railyard::test::json_members_of_tar;

const std::string kTraces = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces";

// Busy time of the busiest GPU stream: no replay of that trace can be shorter.
double busiest_stream_us(const std::string& text)
{
  const auto j = nlohmann::json::parse(text);
  std::map<double, double> busy;
  for (const auto& e : j.at("traceEvents")) {
    if (!e.is_object() || e.value("ph", "") != "X" || e.value("cat", "") != "kernel") continue;
    busy[e.at("args").value("stream", -1.0)] += e.value("dur", 0.0);
  }
  double m = 0;
  for (const auto& [s, b] : busy)
    m = std::max(m, b);
  return m;
}

topo::ClusterSpec node_of(int gpus, double nvlink_GBps)
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::SingleNode;
  s.nodes = 1;
  s.gpus_per_node = gpus;
  s.nvlink_bandwidth = units::GBps(nvlink_GBps);
  return s;
}

std::vector<double> replay_kineto(const std::vector<std::string>& paths, const topo::ClusterSpec& spec,
                                  sim::HostLaunch host)
{
  return run_in_child([&] {
           const workloads::Workload w = workloads::read_kineto(paths);
           const topo::Topology t = topo::build_topology(spec);
           sim::ReplayOptions o;
           o.host_launch = host;
           o.trace_ranks = std::vector<int>{};
           const auto r = sim::replay_workload(w, t, {}, nullptr, test::with_nccl(t, o));
           return std::vector<double>{r.step_time.seconds(), static_cast<double>(r.ops_executed)};
         })
      .values;
}

} // namespace

// HTA's nccl_data: rank 0 of a 2-GPU DDP CNN job on A100 (one trace: a 1-rank workload, its 21 NCCL kernels keep
// their measured durations). With the host launch times from the trace, the replay spans what the GPU spanned: the
// gap is the launch-to-start latency of the first kernel (the replay starts it at its launch) and kernels that
// started later than their stream and launch allowed. Without them, the GPU timeline collapses host gaps: shorter
// than the span, and no shorter than the busiest stream's busy time.
TEST(ReplayTraces, HtaNcclDataSpansWhatTheTraceSpans)
{
  const std::string path = kTraces + "/kineto/hta/nccl_parser_config/nccl_data.json.gz";
  const std::string text = gunzip(path);
  const auto [lo, hi] = gpu_span_us(text);
  const double span = (hi - lo) * 1e-6, busiest = busiest_stream_us(text) * 1e-6;
  const auto with_host = replay_kineto({path}, node_of(2, 300), sim::HostLaunch::Model);
  EXPECT_NEAR(with_host[0], span, span * 0.01);
  const auto gpu_only = replay_kineto({path}, node_of(2, 300), sim::HostLaunch::Off);
  EXPECT_LT(gpu_only[0], span);
  EXPECT_GE(gpu_only[0], busiest * (1 - 1e-9));
}

// PARAM's DLRM on 8 V100s (8 Kineto traces on one clock: their collectives end at the same microsecond). The
// all-to-alls and all-reduces run on the simulated node (NVLink2: 6 links x 25 GB/s per GPU and direction, modelled
// as an NVSwitch); the host launches come from the traces. The job's span is the last GPU end of any rank minus the
// first GPU start of any rank. The replay is shorter: its NCCL kernels take the simulated transfer time, while the
// measured ones also hold NCCL's own launch and synchronisation costs, which the trace cannot separate.
TEST(ReplayTraces, DlrmEightRanksCloseToTheJobSpan)
{
  const std::string path = kTraces + "/kineto/param_dlrm_8rank_v100/dlrm_kineto.tar.gz";
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& text : json_members_of_tar(path)) {
    const auto [a, b] = gpu_span_us(text);
    lo = std::min(lo, a);
    hi = std::max(hi, b);
  }
  const double span = (hi - lo) * 1e-6;
  const auto r = replay_kineto({path}, node_of(8, 150), sim::HostLaunch::Model);
  EXPECT_LE(r[0], span);
  EXPECT_NEAR(r[0], span, span * 0.05);
}

// ASTRA-sim's MSCCL ring all-reduce as a Chakra trace (8 ranks; per rank 14 COMM_SEND_NODEs of 131,072 bytes, each
// step's receive issued after its send: a rendezvous send would deadlock it). With eager sends every one of the
// 8 x 14 messages is delivered once.
TEST(ReplayTraces, ChakraRingAllReduceReplaysWithEagerSends)
{
  const auto out =
      run_in_child([] {
        const auto w =
            workloads::read_chakra(kTraces + "/chakra_et/astrasim_custom_ring_allreduce_8npus_1MB/custom_allreduce");
        const topo::Topology t = topo::build_topology(node_of(8, 100));
        sim::ReplayOptions o;
        o.trace_ranks = std::vector<int>{};
        const auto r = sim::replay_workload(w, t, {}, nullptr, test::with_nccl(t, o));
        return std::vector<double>{static_cast<double>(r.flows.flows_sent), static_cast<double>(r.flows.flows_received),
                                   r.flows.bytes_received, r.step_time.seconds()};
      }).values;
  EXPECT_EQ(out[0], 8 * 14);
  EXPECT_EQ(out[1], 8 * 14);
  EXPECT_EQ(out[2], 8 * 14 * 131072.0);
  EXPECT_GT(out[3], 0);
}

// ---- bad input through the binary ----

namespace {

struct CliResult {
  int exit_code = -1;
  std::string output;
};

CliResult run_cli(const std::string& args)
{
  const std::string cmd = std::string(RAILYARD_CLI) + " " + args + " 2>&1";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p))
    r.output += buf.data();
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class BadWorkload : public ::testing::Test {
protected:
  void SetUp() override
  {
    dir_ = fs::temp_directory_path() / ("railyard_replay_bad_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string scenario(const std::string& workload, int gpus = 8)
  {
    const fs::path p = dir_ / "scenario.yaml";
    std::ofstream(p) << "name: bad\ncluster:\n  kind: single_node\n  nodes: 1\n  gpus_per_node: " << gpus
                     << "\nprofile: " << RAILYARD_SOURCE_DIR << "/calibration/profiles/dgx_h100_ib_ndr.yaml\n"
                     << "workload:\n"
                     << workload;
    return p.string();
  }
  CliResult run(const std::string& scenario_path)
  {
    return run_cli("run " + scenario_path + " --out " + (dir_ / "out").string());
  }
  void expect_refused(const CliResult& r, const std::vector<std::string>& names)
  {
    EXPECT_EQ(r.exit_code, 2) << r.output;
    for (const auto& n : names)
      EXPECT_NE(r.output.find(n), std::string::npos) << "missing '" << n << "' in: " << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "out"));
  }
  fs::path dir_;
};

} // namespace

TEST_F(BadWorkload, ParallelismThatDoesNotDivideTheGpuCount)
{
  const std::string s = scenario("  generator: megatron\n"
                                 "  model: {layers: 4, hidden: 512, heads: 8, seq_length: 256, vocab: 1024}\n"
                                 "  parallel: {tp: 3}\n"
                                 "  training: {global_batch: 8}\n");
  // The field and the line it is on (line 10: the parallel entry of the file written above).
  expect_refused(run(s), {s + ":10:", "workload.parallel.tp", "does not divide the GPU count 8"});
}

TEST_F(BadWorkload, HeadsNotDivisibleByTensorParallelism)
{
  const std::string s = scenario("  generator: megatron\n"
                                 "  model: {layers: 4, hidden: 768, heads: 12, seq_length: 256, vocab: 1024}\n"
                                 "  parallel: {tp: 8}\n"
                                 "  training: {global_batch: 8}\n");
  expect_refused(run(s), {s, "workload.model.heads", "not divisible by tp 8"});
}

// A Chakra node of a type the schema does not define: the file, the rank and the node id.
TEST_F(BadWorkload, UnknownChakraNodeType)
{
  const std::string src = kTraces + "/chakra_et/astrasim_microbench_all_reduce_8npus_1MB/all_reduce.0.et";
  std::ifstream in(src, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  google::protobuf::io::CodedInputStream cin(reinterpret_cast<const std::uint8_t*>(data.data()),
                                             static_cast<int>(data.size()));
  ChakraProtoMsg::GlobalMetadata meta;
  ChakraProtoMsg::Node node;
  std::uint32_t len = 0;
  ASSERT_TRUE(cin.ReadVarint32(&len));
  auto lim = cin.PushLimit(static_cast<int>(len));
  ASSERT_TRUE(meta.ParseFromCodedStream(&cin));
  cin.PopLimit(lim);
  ASSERT_TRUE(cin.ReadVarint32(&len));
  lim = cin.PushLimit(static_cast<int>(len));
  ASSERT_TRUE(node.ParseFromCodedStream(&cin));
  cin.PopLimit(lim);
  node.set_type(static_cast<ChakraProtoMsg::NodeType>(42));
  std::string out;
  {
    google::protobuf::io::StringOutputStream sos(&out);
    google::protobuf::io::CodedOutputStream cos(&sos);
    cos.WriteVarint32(static_cast<std::uint32_t>(meta.ByteSizeLong()));
    meta.SerializeToCodedStream(&cos);
    cos.WriteVarint32(static_cast<std::uint32_t>(node.ByteSizeLong()));
    node.SerializeToCodedStream(&cos);
  }
  const fs::path et = dir_ / "bad.0.et";
  std::ofstream(et, std::ios::binary) << out;
  const std::string s = scenario("  trace: chakra\n  path: " + (dir_ / "bad").string() + "\n");
  expect_refused(run(s), {et.string(), "rank 0", "node " + std::to_string(node.id()), "unknown node type 42"});
}

// An op type the text format does not know: the file and its line.
TEST_F(BadWorkload, UnknownOpTypeInTextWorkload)
{
  const fs::path txt = dir_ / "bad.txt";
  std::ofstream(txt) << "DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLFOO 1000 10\n";
  const std::string s = scenario("  trace: astrasim1\n  path: " + txt.string() + "\n  world_size: 8\n");
  expect_refused(run(s), {txt.string() + ":3", "ALLFOO"});
}

// The two HTA excerpts are windows of different ranks' timelines: together, their ranks disagree on the collectives
// of the world communicator.
TEST_F(BadWorkload, RanksThatDisagreeOnACollective)
{
  const std::string s =
      scenario("  trace: kineto\n  path: [" + kTraces + "/kineto/hta/trace_filter/sampled_rank-0.json.gz, " + kTraces +
               "/kineto/hta/trace_filter/sampled_rank-1.json.gz]\n");
  expect_refused(run(s), {"sampled_rank-", "rank ", "event "});
}

// A Chakra file cut short in a message: the file, the rank and the byte offset after the last complete node.
TEST_F(BadWorkload, TruncatedProtobuf)
{
  const std::string src = kTraces + "/chakra_et/astrasim_custom_ring_allreduce_8npus_1MB/custom_allreduce";
  for (int r = 0; r < 8; ++r) {
    std::ifstream in(src + "." + std::to_string(r) + ".et", std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (r == 3) data.resize(data.size() - 100);
    std::ofstream(dir_ / ("ring." + std::to_string(r) + ".et"), std::ios::binary) << data;
  }
  const std::string s = scenario("  trace: chakra\n  path: " + (dir_ / "ring").string() + "\n");
  expect_refused(run(s), {(dir_ / "ring.3.et").string(), "rank 3", "truncated protobuf", "after node"});
}
