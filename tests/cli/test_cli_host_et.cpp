// PyTorch host execution traces with Kineto traces through the binary (issue 16, deliverable 3): `workload.host_et`
// pairs PARAM's 8 DLRM host ETs with their Kineto traces in a `railyard run` scenario; a host ET given as the trace,
// a Kineto trace given as a host ET and host_et on a Chakra trace are refused with exit 2, naming the file and rank
// (or the scenario field), and nothing is written. Provenance of the traces: tests/data/traces/README.md.
#include "cli_support.hpp"

#include <nlohmann/json.hpp>

#include <string>

using namespace railyard::test;

namespace {

const std::string kTraces = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces";
const std::string kDlrmKineto = kTraces + "/kineto/param_dlrm_8rank_v100/dlrm_kineto.tar.gz";
const std::string kDlrmEt = kTraces + "/kineto/param_dlrm_8rank_v100/dlrm_pytorch_et.tar.gz";
const std::string kChakra = kTraces + "/chakra_et/chakra_feeder_tests/feeder_tests_trace.tar.gz";

std::string scenario(const std::string& workload)
{
  return "name: host_et\nseed: 1\ncluster:\n  kind: single_node\n  nodes: 1\n  gpus_per_node: 8\n"
         "profile: " +
         std::string(RAILYARD_SOURCE_DIR) + "/calibration/profiles/dgx_h100_ib_ndr.yaml\n" + "workload:\n" + workload;
}

bool has(const std::string& text, const std::string& part)
{
  return text.find(part) != std::string::npos;
}

} // namespace

class CliHostEt : public TempDirTest {};

// The DLRM pair runs; summary.json's workload notes say what the host ETs gave. The README's counts: 5 all-to-all and
// 3 all-reduce NCCL kernels on each of the 8 ranks, none with a size in its Kineto args, so 8 x 8 = 64 kernels look
// for their record_param_comms node and each takes its size from it (tests/workloads/host_et_test.cpp checks the
// sizes against the host ETs' tensors); schema 1.0.1 lists no process groups, so none takes its group.
TEST_F(CliHostEt, DlrmPairRunsWithItsHostEts)
{
  write("s.yaml", scenario("  trace: kineto\n  path: " + kDlrmKineto + "\n  host_et: [" + kDlrmEt + "]\n"));
  const CliResult r = run_cli("run s.yaml --out o", "", dir_.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = nlohmann::json::parse(read_file(dir_ / "o" / "summary.json"));
  const auto& wl = summary.at("workload");
  EXPECT_EQ(wl.at("ranks").get<int>(), 8);
  const std::string notes = wl.at("notes").dump();
  EXPECT_TRUE(has(notes, "host execution traces (8 files, schema 1.0.1) paired with the Kineto traces of ranks 0, 1, "
                         "2, 3, 4, 5, 6, 7"))
      << notes;
  EXPECT_TRUE(has(notes, "of 64 NCCL kernels whose size or process group the Kineto trace's args do not give, 64 were "
                         "linked to their record_param_comms node; 64 collectives took their size and 0 their process "
                         "group from the host ET; 0 kernels could not be linked"))
      << notes;
  // The sizes the host ETs give equal those of the Kineto traces' nccl:* annotations (host_et_test.cpp), so the step
  // is the one the Kineto traces alone replay.
  write("plain.yaml", scenario("  trace: kineto\n  path: " + kDlrmKineto + "\n"));
  const CliResult plain = run_cli("run plain.yaml --out p", "", dir_.string());
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto plain_summary = nlohmann::json::parse(read_file(dir_ / "p" / "summary.json"));
  EXPECT_GT(summary.at("step_time_s").get<double>(), 0.0);
  EXPECT_EQ(summary.at("step_time_s").get<double>(), plain_summary.at("step_time_s").get<double>());
}

// A host ET alone as the trace: what it is, and what to pair it with.
TEST_F(CliHostEt, HostEtAsTheTraceIsRefused)
{
  write("s.yaml", scenario("  trace: kineto\n  path: " + kDlrmEt + "\n"));
  const CliResult r = run_cli("run s.yaml --out o", "", dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "dlrm_pytorch_et.tar.gz:dlrm_pytorch_et/dlrm_eg_0.json")) << r.output; // the first member
  EXPECT_TRUE(has(r.output, "rank 0")) << r.output;
  EXPECT_TRUE(has(r.output, "a PyTorch host execution trace (schema 1.0.1, 1675 nodes): it has no GPU activity"))
      << r.output; // the README's node count
  EXPECT_TRUE(has(r.output, "pair it with the Kineto trace of the same rank")) << r.output;
  EXPECT_TRUE(has(r.output, "workload.host_et")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "o" / "summary.json"));
}

// A Kineto trace as the host ET: refused the other way round.
TEST_F(CliHostEt, KinetoTraceAsHostEtIsRefused)
{
  write("s.yaml", scenario("  trace: kineto\n  path: " + kDlrmKineto + "\n  host_et: " + kDlrmKineto + "\n"));
  const CliResult r = run_cli("run s.yaml --out o", "", dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "dlrm_kineto.tar.gz:dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json")) << r.output;
  EXPECT_TRUE(has(r.output, "rank 0")) << r.output;
  EXPECT_TRUE(has(r.output, "a Kineto (PyTorch profiler) trace, not a host execution trace")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "o" / "summary.json"));
}

// host_et belongs to Kineto traces: on a Chakra trace it is refused at its line, naming the field.
TEST_F(CliHostEt, HostEtOnAChakraTraceIsRefused)
{
  write("s.yaml", scenario("  trace: chakra\n  path: " + kChakra + "\n  host_et: " + kDlrmEt + "\n"));
  const CliResult r = run_cli("run s.yaml --out o", "", dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "s.yaml:11")) << r.output; // the host_et line
  EXPECT_TRUE(has(r.output, "workload.host_et")) << r.output;
  EXPECT_TRUE(has(r.output, "this workload's trace is chakra")) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "o" / "summary.json"));
}
