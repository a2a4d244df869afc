// railyard plan through the binary: the bill of materials of a small cluster against its closed form, the simulated
// step carried into time, energy and cost to train (checked against the step the cluster's own run wrote), a user's
// catalogue laid over the built-in one, --bom-only, and bad input.
#include "cli_support.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <regex>

using namespace railyard::test;

namespace {

const std::string kSource = RAILYARD_SOURCE_DIR;

class CliPlan : public TempDirTest {
protected:
  void SetUp() override
  {
    TempDirTest::SetUp();
    // The small GPT-style step on 2 DGX H100-class nodes of examples/profile_links.yaml.
    std::string b = read_file(kSource + "/examples/profile_links.yaml");
    b = std::regex_replace(b, std::regex("profile: \\.\\./"), "profile: " + kSource + "/");
    write("base.yaml", b);
  }
  CliResult run(const std::string& args) { return run_cli(args, "", dir_.string()); }
};

double num(const std::string& s)
{
  return std::stod(s);
}

const char* const kPlan = "name: p\n"
                          "tokens: 1.0e9\n"
                          "depreciation_years: 4\n"
                          "clusters:\n"
                          "  - name: rail\n"
                          "    scenario: base.yaml\n"
                          "  - name: fat\n"
                          "    scenario: base.yaml\n"
                          "    set: {cluster.kind: fat_tree}\n"
                          "    parts: {gpu: h200_sxm}\n"
                          "    step_time_s: 0.5\n";

} // namespace

TEST_F(CliPlan, BillOfMaterialsAndTheCostToTrain)
{
  write("plan.yaml", kPlan);
  const CliResult r = run("plan plan.yaml --out o");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cost to train"), std::string::npos) << r.output;
  const auto rows = csv_rows(dir_ / "o" / "plan.csv");
  ASSERT_EQ(rows.size(), 2U);
  const auto& rail = rows[0];
  const auto& fat = rows[1];
  EXPECT_EQ(rail.at("cluster"), "rail");
  EXPECT_EQ(rail.at("gpus"), "16");
  // Rail-optimized, 2 nodes: one scalable unit, one leaf per rail (8), each with 2 NIC ports and 32 uplinks; 32
  // logical spines of 8 ports (one per leaf), built as 64 / 8 = 8 to a switch: 4.
  EXPECT_EQ(rail.at("switches"), std::to_string(8 + 32 / (64 / 8)));
  // The 16 NICs: a rail leaf holds one NIC of each node, both in one rack of 4 nodes: copper. Leaf-spine: 8 x 32.
  EXPECT_EQ(rail.at("dac_cables"), "16");
  EXPECT_EQ(rail.at("fiber_cables"), std::to_string(8 * 32));
  EXPECT_EQ(rail.at("transceivers"), std::to_string(8 * 32 / 2 + 4 * 64 / 2));
  // Fat tree, 16 NICs under one leaf with 32 uplinks to 32 logical spines of one port each: one switch of them.
  EXPECT_EQ(fat.at("switches"), "2");
  EXPECT_EQ(fat.at("fiber_cables"), "32");
  EXPECT_EQ(fat.at("gpu"), "h200_sxm");

  // The step time is the cluster's own run's; the rest is arithmetic on it.
  fs::path summary;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "o" / "clusters" / "rail"))
    if (e.path().filename() == "summary.json") summary = e.path();
  ASSERT_FALSE(summary.empty());
  const double step = nlohmann::json::parse(read_file(summary)).at("step_time_s").get<double>();
  EXPECT_NEAR(num(rail.at("step_time_s")), step, 1e-12 * step);
  const double tokens_per_step = 8 * 2048; // global_batch x seq_length
  EXPECT_EQ(num(rail.at("tokens_per_step")), tokens_per_step);
  const double steps = std::ceil(1e9 / tokens_per_step);
  EXPECT_EQ(num(rail.at("steps")), steps);
  const double days = steps * step / 86400;
  EXPECT_NEAR(num(rail.at("train_days")), days, 1e-9 * days);
  const double facility_kw = num(rail.at("facility_power_kw"));
  EXPECT_NEAR(facility_kw, num(rail.at("it_power_kw")) * 1.25, 1e-9 * facility_kw); // built-in PUE 1.25
  EXPECT_NEAR(num(rail.at("energy_mwh")), facility_kw * days * 24 / 1000, 1e-9 * facility_kw);
  EXPECT_NEAR(num(rail.at("energy_cost_usd")), facility_kw * days * 24 * 0.0806, 1e-6);
  const double capex = num(rail.at("capex_usd"));
  EXPECT_NEAR(num(rail.at("capex_share_usd")), capex * days / (4 * 365.25), 1e-6 * capex);
  // A given step time is used as given.
  EXPECT_EQ(fat.at("step_time_s"), "0.5");
  EXPECT_NEAR(num(fat.at("train_days")), steps * 0.5 / 86400, 1e-12);
  EXPECT_FALSE(fs::exists(dir_ / "o" / "clusters" / "fat"));

  // capex is the sum of bom.csv's priced lines, each count x unit price; the GPUs at their catalogue figures.
  double sum = 0;
  for (const auto& line : csv_rows(dir_ / "o" / "bom.csv")) {
    if (line.at("cluster") != "rail" || line.at("price_usd").empty()) continue;
    EXPECT_NEAR(num(line.at("price_usd")), num(line.at("count")) * num(line.at("unit_price_usd")), 1e-6);
    sum += num(line.at("price_usd"));
    if (line.at("part") == "h100_sxm") {
      EXPECT_EQ(line.at("count"), "16");
    }
  }
  EXPECT_NEAR(sum, capex, 1e-6 * capex);
  // plan.json carries the sources of the figures it used.
  const auto j = nlohmann::json::parse(read_file(dir_ / "o" / "plan.json"));
  EXPECT_TRUE(j.at("sources").contains("hf_hardware_h100"));
  EXPECT_EQ(j.at("clusters").size(), 2U);

  // Run again: the cluster's step is reused (--progress says so), the tables are the same.
  const std::string before = read_file(dir_ / "o" / "plan.csv");
  const CliResult again = run("plan plan.yaml --out o --progress");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("sweep rail: 1/1 points done (1 reused)"), std::string::npos) << again.output;
  EXPECT_EQ(read_file(dir_ / "o" / "plan.csv"), before);
  // --max-memory reaches the cluster's run: refused there, the plan lists it as failed (exit 1), the other complete.
  const CliResult small = run("plan plan.yaml --out m --max-memory '1 KiB'");
  EXPECT_EQ(small.exit_code, 1) << small.output;
  const auto m = csv_rows(dir_ / "m" / "plan.csv");
  ASSERT_EQ(m.size(), 2U);
  EXPECT_EQ(m[0].at("status"), "failed");
  EXPECT_NE(m[0].at("error").find("--max-memory"), std::string::npos) << m[0].at("error");
  EXPECT_EQ(m[1].at("status"), "ok"); // its step was given
}

TEST_F(CliPlan, AUsersCatalogueReplacesFiguresAndBomOnlySimulatesNothing)
{
  write("quotes.yaml", "parts:\n"
                       "  h100_sxm: {price_usd: 20000, price_source: q}\n"
                       "  mpo12_fiber: {price_usd: 50, price_source: q}\n"
                       "sources:\n"
                       "  q: {title: our vendor quote, accessed: 2026-12-01}\n");
  write("plan.yaml", kPlan);
  write("plan2.yaml", std::string(kPlan) + "catalogue: quotes.yaml\n");
  ASSERT_EQ(run("plan plan.yaml --out a --bom-only").exit_code, 0);
  const CliResult r = run("plan plan2.yaml --out b --bom-only");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "b" / "clusters"));
  const auto a = csv_rows(dir_ / "a" / "plan.csv"), b = csv_rows(dir_ / "b" / "plan.csv");
  EXPECT_EQ(a[0].at("step_time_s"), "");
  // 16 GPUs $10,000 cheaper each, and the 256 fibers now priced at $50.
  EXPECT_NEAR(num(a[0].at("capex_usd")) - num(b[0].at("capex_usd")), 16 * 10000.0 - 256 * 50.0, 1e-6);
  EXPECT_EQ(a[0].at("unpriced_parts"), "dac_400g mpo12_fiber");
  EXPECT_EQ(b[0].at("unpriced_parts"), "dac_400g");
  const auto j = nlohmann::json::parse(read_file(dir_ / "b" / "plan.json"));
  EXPECT_TRUE(j.at("sources").contains("q"));
}

TEST_F(CliPlan, BadInputIsRefusedWithTheFieldAndNothingIsWritten)
{
  write("unknown_part.yaml", "clusters:\n  - {name: a, scenario: base.yaml, parts: {gpu: h900}}\n");
  CliResult r = run("plan unknown_part.yaml --out x --bom-only");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no part 'h900'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("h100_sxm"), std::string::npos) << r.output;                     // the GPUs it has
  write("unsourced.yaml", "parts: {h100_sxm: {price_usd: 1, price_source: our_quote}}\n"); // no such source
  write("p.yaml", "catalogue: unsourced.yaml\nclusters:\n  - {name: a, scenario: base.yaml}\n");
  r = run("plan p.yaml --out y --bom-only");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("parts.h100_sxm.price_source"), std::string::npos) << r.output;
  write("dup.yaml", "clusters:\n  - {name: a, scenario: base.yaml}\n  - {name: a, scenario: base.yaml}\n");
  r = run("plan dup.yaml --out z --bom-only");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("dup.yaml:3"), std::string::npos) << r.output;
  write("badkey.yaml", "clusters:\n  - {name: a, scenario: base.yaml, set: {cluster.kindd: fat_tree}}\n");
  r = run("plan badkey.yaml --out w --bom-only");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("kindd"), std::string::npos) << r.output;
  for (const char* d : {"x", "y", "z"})
    EXPECT_FALSE(fs::exists(dir_ / d / "plan.csv")) << d;
}

TEST_F(CliPlan, SweepsAndSearchesWithPartsPriceEveryPoint)
{
  // The built-in catalogue's figures (data/catalogue/parts.yaml): host and GPU $30,000 each, QM9700 $13,542, twin-port
  // SR4 transceiver $732; fibers and DACs unpriced.
  const auto capex = [](int nodes) {
    // Rail-optimized, `nodes` <= 4: 8 rail leaves of `nodes` + 32 ports, 32 logical spines of 8 ports built 8 to a
    // switch (4); the NIC cables copper (a leaf's nodes are one rack of 4); 8 x 32 leaf-spine fibers, 2 per cage.
    const double switches = 8 + 4, transceivers = 8 * 32 / 2 + 4 * 64 / 2;
    return nodes * 30000.0 + nodes * 8 * 30000.0 + switches * 13542 + transceivers * 732;
  };
  write("sweep.yaml", "base: base.yaml\n"
                      "parts: {gpu: h100_sxm}\n"
                      "axes:\n"
                      "  - {key: cluster.nodes, values: [2, 4], name: nodes}\n"
                      "derived:\n"
                      "  - {key: workload.parallel.dp, expr: \"nodes\"}\n");
  CliResult r = run("sweep sweep.yaml --out s -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = csv_rows(dir_ / "s" / "results.csv");
  ASSERT_EQ(rows.size(), 2U);
  EXPECT_NEAR(num(rows[0].at("capex_usd")), capex(2), 1e-6);
  EXPECT_NEAR(num(rows[1].at("capex_usd")), capex(4), 1e-6);
  EXPECT_NEAR(num(rows[1].at("facility_power_kw")), num(rows[1].at("it_power_kw")) * 1.25, 1e-9);
  EXPECT_FALSE(rows[0].at("step_time_s").empty()); // the metrics are still there, the cost after them

  write("search.yaml", "base: base.yaml\n"
                       "parts: {gpu: h100_sxm}\n"
                       "gpus: [16, 32]\n"
                       "space: {tp: [8], pp: [1, 2]}\n");
  r = run("search search.yaml --out q");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Pareto front against capex"), std::string::npos) << r.output;
  const auto cands = csv_rows(dir_ / "q" / "search.csv");
  int front = 0;
  for (const auto& c : cands) {
    if (c.at("status") != "ok") continue;
    const int gpus = std::stoi(c.at("gpus"));
    EXPECT_NEAR(num(c.at("capex_usd")), capex(gpus / 8), 1e-6);
    // On the front exactly when no other ranked layout is as cheap and as fast and better in one.
    bool dominated = false;
    for (const auto& d : cands)
      if (&d != &c && d.at("status") == "ok") {
        const double dc = num(d.at("capex_usd")), cc = num(c.at("capex_usd"));
        const double dt = num(d.at("step_time_s")), ct = num(c.at("step_time_s"));
        dominated = dominated || (dc <= cc && dt <= ct && (dc < cc || dt < ct));
      }
    EXPECT_EQ(c.at("pareto_cost"), dominated ? "no" : "yes") << c.at("point");
    front += !dominated;
  }
  EXPECT_GE(front, 1);
}
