// railyard run with the fluid backend: flows.csv, links.csv and the summary's network object; byte-identical output
// for the same seed; the network section's bad input.
#include "railyard/common/child_process.hpp"
#include "railyard/common/csv.hpp"

#include "railyard/scenario/run.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace scn = railyard::scenario;

using namespace railyard;
namespace fs = std::filesystem;

namespace {

std::string scenario(int seed, const std::string& network)
{
  return "name: cc\n"
         "seed: " +
         std::to_string(seed) +
         "\n"
         "cluster:\n"
         "  kind: fat_tree\n"
         "  nodes: 8\n"
         "  gpus_per_node: 1\n"
         "  fabric: {leaf_downlinks: 4, oversubscription: 2}\n"
         "network:\n" +
         network +
         "collectives:\n"
         "  - {op: alltoall, size: 16 MiB}\n"
         "  - {op: all_reduce, size: 8 MiB}\n";
}

const std::string kCc = "  backend: fluid\n"
                        "  ecmp: per_qp\n"
                        "  qps_per_connection: 2\n"
                        "  cc: dcqcn\n"
                        "  dcqcn: {preset: sigcomm2015}\n"
                        "  pfc: {enabled: true}\n"
                        "  outputs: {sample_interval: 20 us}\n";

std::string slurp(const fs::path& p)
{
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path run_to(const std::string& text, const std::string& name)
{
  const fs::path dir = fs::temp_directory_path() / ("railyard_fluid_" + name + "_" + std::to_string(getpid()));
  railyard::run_in_child([&] {
    const scn::Scenario sc = scn::parse_scenario(YamlNode::load_string(text, "cc.yaml"));
    scn::write_outputs(scn::run_scenario(sc), dir.string());
    return std::vector<double>{};
  });
  return dir;
}

// Rows of a CSV, header first, read as RFC 4180 (common/csv.hpp: CRLF, quoted fields).
std::vector<std::vector<std::string>> csv(const std::string& text)
{
  std::vector<std::vector<std::string>> rows;
  for (auto& record : railyard::parse_csv(text, "test.csv"))
    rows.push_back(std::move(record.fields));
  return rows;
}

TEST(FluidOutputs, SameSeedSameBytesOtherSeedOtherPaths)
{
  const fs::path a = run_to(scenario(1, kCc), "a"), b = run_to(scenario(1, kCc), "b"),
                 c = run_to(scenario(2, kCc), "c");
  for (const char* f : {"flows.csv", "links.csv", "summary.json", "collectives.csv"}) {
    ASSERT_TRUE(fs::exists(a / f)) << f;
    EXPECT_EQ(slurp(a / f), slurp(b / f)) << f << " differs between two runs with the same seed";
  }
  EXPECT_NE(slurp(a / "flows.csv"), slurp(c / "flows.csv")) << "another seed hashes other paths";
  for (const auto& d : {a, b, c})
    fs::remove_all(d);
}

// What the files say must add up: every flow's fct is arrival - start; the transfers' bytes sum to what was sent;
// no link ever carries more than its capacity in a sampling interval; the summary's counts match the files.
TEST(FluidOutputs, FilesAreConsistent)
{
  const fs::path d = run_to(scenario(1, kCc), "consistent");
  const auto summary = nlohmann::json::parse(slurp(d / "summary.json"));
  const auto flows = csv(slurp(d / "flows.csv"));
  ASSERT_GT(flows.size(), 1U);
  EXPECT_EQ(flows[0][0], "id");
  double bytes = 0;
  for (std::size_t i = 1; i < flows.size(); ++i) {
    const double start = std::stod(flows[i][6]), end = std::stod(flows[i][7]), arrival = std::stod(flows[i][8]),
                 fct = std::stod(flows[i][9]);
    EXPECT_NEAR(fct, arrival - start, 1e-15);
    EXPECT_LE(start, end);
    EXPECT_LT(end, arrival);
    bytes += std::stod(flows[i][5]);
  }
  EXPECT_EQ(summary["network"]["flows"].get<double>(), double(flows.size() - 1));
  EXPECT_NEAR(bytes, summary["flows"]["wire_bytes_sent"].get<double>(), 1e-6 * bytes);
  EXPECT_EQ(summary["flows"]["wire_bytes_sent"], summary["flows"]["wire_bytes_received"]);
  EXPECT_EQ(summary["network"]["overflow_bytes"].get<double>(), 0.0);
  for (const char* k : {"p50", "p90", "p99", "p999", "max"})
    EXPECT_GT(summary["network"]["fct_s"][k].get<double>(), 0) << k;

  const auto links = csv(slurp(d / "links.csv"));
  ASSERT_GT(links.size(), 1U);
  EXPECT_EQ(links[0][7], "utilisation");
  for (std::size_t i = 1; i < links.size(); ++i)
    EXPECT_LE(std::stod(links[i][7]), 1 + 1e-9) << links[i][3] << " at " << links[i][0];
  fs::remove_all(d);
}

// Every byte of a flow crosses every link of its path once, so over the run a link's bytes in links.csv are the sum
// of the bytes of the flows whose path lists it: the host links before the first switch queue (where a sender's rate
// is its max-min share until its last byte is injected), the queues, and the receiver's NIC and PCIe links after the
// last queue, which only carry what the queues deliver. Checked with queues (DCQCN and PFC) and without (max-min).
TEST(FluidOutputs, EveryLinkCarriesTheBytesOfTheFlowsThatCrossIt)
{
  const std::string max_min = "  backend: fluid\n  ecmp: per_qp\n  qps_per_connection: 2\n";
  for (const std::string& network : {kCc, max_min}) {
    const fs::path d = run_to(scenario(1, network), "per_link");
    const auto flows = csv(slurp(d / "flows.csv"));
    const auto links = csv(slurp(d / "links.csv"));
    ASSERT_EQ(flows[0][11], "links");
    ASSERT_EQ(links[0][2], "link");
    ASSERT_EQ(links[0][6], "bytes");
    std::map<std::string, double> expected, sampled;
    for (std::size_t i = 1; i < flows.size(); ++i) {
      std::istringstream path(flows[i][11]);
      std::string id;
      while (path >> id)
        expected[id] += std::stod(flows[i][5]);
    }
    for (std::size_t i = 1; i < links.size(); ++i)
      sampled[links[i][2]] += std::stod(links[i][6]);
    ASSERT_GT(expected.size(), 10U);
    for (const auto& [id, bytes] : expected)
      EXPECT_NEAR(sampled[id], bytes, 1e-9 * bytes) << "link " << id << (network == kCc ? " (queues)" : " (max-min)");
    for (const auto& [id, bytes] : sampled)
      EXPECT_TRUE(expected.count(id)) << "link " << id << " carried " << bytes << " B that no flow's path lists";
    fs::remove_all(d);
  }
}

// ---- the network section ----

scn::Scenario parse(const std::string& network)
{
  return scn::parse_scenario(YamlNode::load_string(scenario(1, network), "n.yaml"));
}

void expect_refused(const std::string& network, const std::string& field, int line)
{
  try {
    parse(network);
    FAIL() << "accepted:\n" << network;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "n.yaml");
    EXPECT_EQ(e.where().field, field) << e.what();
    EXPECT_EQ(e.where().line, line) << e.what();
    EXPECT_FALSE(e.fix().empty());
  }
}

TEST(FluidNetworkSection, ParsesEveryFluidOption)
{
  const scn::Scenario sc =
      parse("  backend: fluid\n  ecmp: spray\n  qps_per_connection: 4\n  cc: dcqcn\n"
            "  dcqcn: {preset: connectx, k_max: 2 MB}\n  pfc: {xoff: 128 KiB}\n"
            "  mtu: 1024\n  time_step: 0.5 us\n  outputs: {flows: false, sample_interval: 5 us}\n");
  const auto& f = sc.sim.fluid;
  EXPECT_EQ(sc.sim.backend, sim::Backend::Fluid);
  EXPECT_EQ(f.ecmp, sim::EcmpMode::Spray);
  EXPECT_EQ(f.qps_per_connection, 4);
  EXPECT_EQ(f.cc, sim::CongestionControl::Dcqcn);
  EXPECT_EQ(f.dcqcn.preset, "connectx");
  EXPECT_EQ(f.dcqcn.k_max.bytes(), 2e6);
  EXPECT_TRUE(f.pfc.enabled);
  EXPECT_EQ(f.pfc.xoff.bytes(), 128 * 1024);
  EXPECT_EQ(f.pfc.xon.bytes(), 128 * 1024 - 2 * 1024); // XOFF - 2 MTU of 1024 B
  EXPECT_EQ(f.mtu.bytes(), 1024);
  EXPECT_DOUBLE_EQ(f.time_step.seconds(), 0.5e-6);
  EXPECT_EQ(sc.records.flows, scn::Record::Off);
  EXPECT_EQ(sc.records.links, scn::Record::Auto); // not given
}

TEST(FluidNetworkSection, BadInputNamesTheField)
{
  // Lines: 1 name, 2 seed, 3-7 cluster, 8 network, then the section's own lines from 9.
  expect_refused("  backend: simgrid\n  cc: dcqcn\n", "network.cc", 10);
  expect_refused("  backend: fluid\n  ecmp: random\n", "network.ecmp", 10);
  expect_refused("  backend: fluid\n  dcqcn: {preset: connectx}\n", "network.dcqcn", 10);
  expect_refused("  backend: fluid\n  qps_per_connection: 0\n", "network.qps_per_connection", 10);
  expect_refused("  backend: fluid\n  cc: dcqcn\n  dcqcn:\n    k_min: 50 KB\n    k_max: 10 KB\n", "network.dcqcn.k_max",
                 13);
  expect_refused("  backend: fluid\n  cc: dcqcn\n  dcqcn:\n    p_max: 2\n", "network.dcqcn.p_max", 12);
  expect_refused("  backend: fluid\n  pfc:\n    xoff: 1 KiB\n", "network.pfc.xoff", 11);
  expect_refused("  backend: quantum\n", "network.backend", 9);
}

} // namespace
