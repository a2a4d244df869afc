// The replay timeline as Chrome trace JSON (scenario/perfetto_trace.hpp): complete, labelled and deterministic.
#include "../sim/replay_support.hpp"
#include "railyard/common/child_process.hpp"

#include "railyard/scenario/perfetto_trace.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/workloads/generator.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

namespace scn = railyard::scenario;

using namespace railyard;
using namespace railyard::workloads;

namespace {

using railyard::test::flops_only_profile;
using railyard::test::one_node;

} // namespace

// The timeline is valid Chrome trace JSON, holds one complete event per executed op of the traced ranks with the
// stream labels as thread names, and two runs of the same inputs write the same bytes.
TEST(PerfettoTrace, ChromeTraceIsCompleteAndDeterministic)
{
  MegatronConfig c;
  c.model.layers = 2;
  c.model.hidden = 256;
  c.model.heads = 4;
  c.model.seq_length = 128;
  c.model.vocab = 512;
  c.parallel.tp = 2;
  c.parallel.pp = 2;
  c.training.global_batch = 4;
  const std::string dir = ::testing::TempDir() + "replay_trace_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& path) {
    return run_in_child([&] {
             const Workload w = generate_megatron(c, 4);
             const topo::Topology t = topo::build_topology(one_node(4));
             const calibration::Profile prof = flops_only_profile(50e12);
             const auto r = sim::replay_workload(w, t, {}, &prof, test::with_nccl(t));
             std::ofstream out(path);
             scn::write_chrome_trace(r, w, out);
             std::size_t ops = 0;
             for (int rank = 0; rank < 4; ++rank)
               ops += w.graph_of(rank).size();
             return std::vector<double>{static_cast<double>(r.events.size()), static_cast<double>(ops)};
           })
        .values;
  };
  const auto a = write(dir + "/a.json");
  write(dir + "/b.json");
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  const std::string ta = slurp(dir + "/a.json"), tb = slurp(dir + "/b.json");
  EXPECT_EQ(ta, tb);
  EXPECT_EQ(a[0], a[1]); // 4 ranks <= 16: all traced, every op once
  const auto j = nlohmann::json::parse(ta);
  std::size_t complete = 0;
  std::set<std::string> threads;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "X") {
      ++complete;
      EXPECT_GE(e.at("dur").get<double>(), 0);
    }
    if (e.at("ph") == "M" && e.at("name") == "thread_name") threads.insert(e.at("args").at("name").get<std::string>());
  }
  EXPECT_EQ(complete, static_cast<std::size_t>(a[1]));
  EXPECT_TRUE(threads.count("compute"));
  EXPECT_TRUE(threads.count("pp send"));
  EXPECT_TRUE(threads.count("tp async"));
  std::filesystem::remove_all(dir);
}
