// `railyard nccl-tests`: a simulated nccl-tests run (all_reduce_perf and friends) on a scenario's cluster.
#include "commands.hpp"

#include "railyard/common/error.hpp"
#include "railyard/common/numbers.hpp"
#include "railyard/common/units.hpp"
#include "railyard/scenario/nccl_tests.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <memory>

namespace scn = railyard::scenario;

namespace railyard::cli {

namespace {

// nccl-tests' parsesize (src/common.cu): a number with an optional K, M or G suffix, binary multiples. The number is
// read as every Railyard number is (no hexadecimal, NaN or inf), and the size must lie in a size's range (units.hpp:
// 0 to 2^53 B), so that 1e30 or 99999999999999999999G cannot wrap the integer byte count.
std::int64_t parse_size(const std::string& text, const char* option)
{
  const auto refuse = [&](const std::string& rule) {
    return InputError(InputLocation{"railyard nccl-tests", 0, option}, rule,
                      "write a byte count with an optional K, M or G suffix, as nccl-tests does: 8, 64K, 1M, 8G");
  };
  const LeadingNumber n = leading_number(text);
  if (n.hexadecimal || n.length == 0) throw refuse(fmt::format("invalid size '{}'", text));
  double unit = 1;
  std::string rest = text.substr(n.length);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front())))
    rest.erase(rest.begin());
  if (rest.size() == 1) {
    switch (std::toupper(static_cast<unsigned char>(rest[0]))) {
    case 'K':
      unit = 1024.0;
      break;
    case 'M':
      unit = 1024.0 * 1024;
      break;
    case 'G':
      unit = 1024.0 * 1024 * 1024;
      break;
    default:
      throw refuse(fmt::format("invalid size '{}'", text));
    }
  } else if (!rest.empty()) {
    throw refuse(fmt::format("invalid size '{}'", text));
  }
  if (n.out_of_range) throw refuse(fmt::format("size '{}' is beyond the range of a double", text));
  try {
    return static_cast<std::int64_t>(checked_bytes(n.value * unit).bytes());
  } catch (const std::invalid_argument& e) {
    throw refuse(fmt::format("size '{}': {}", text, e.what()));
  }
}

// -f: a whole number, refused when it overflows (CLI11 would saturate 99999999999999999999 to 2^63-1 silently).
std::int64_t parse_step_factor(const std::string& text)
{
  try {
    return parse_integer(text, 0, std::numeric_limits<std::int64_t>::max());
  } catch (const std::invalid_argument& e) {
    throw InputError(InputLocation{"railyard nccl-tests", 0, "-f/--stepfactor"}, e.what(),
                     "give the factor the size is multiplied by each step, such as 2");
  }
}

std::vector<int> parse_rank_list(const std::string& text, int gpus)
{
  const YamlNode node = YamlNode::load_string(text, "--ranks");
  return scn::parse_ranks(node, gpus);
}

} // namespace

void add_nccl_tests_command(CLI::App& app, Action* action)
{
  struct Options {
    std::string scenario;
    std::string op = "all_reduce";
    std::string min_bytes = "32M", max_bytes = "32M", step_bytes = "1M";
    std::string step_factor = "1";
    std::optional<int> ngpus;
    std::optional<std::string> ranks;
    std::optional<std::string> algo, proto;
    std::string type = "float";
    std::string redop = "sum";
    int root = 0;
    int iters = 1;
    std::string communication = "auto";
    int threads = 1;
    int graph_launches = 0;
    bool process_per_gpu = false;
    std::optional<std::string> host_cost;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "nccl-tests", "Simulate an nccl-tests sweep (all_reduce_perf and friends) on a scenario's cluster and print "
                    "nccl-tests' table: size, count, type, redop, root, time, algbw, busbw, #wrong, out-of-place and "
                    "in-place, with busbw as nccl-tests' doc/PERFORMANCE.md defines it");
  cmd->add_option("--scenario,-s", o->scenario,
                  "scenario YAML file: its cluster, network and nccl sections are used "
                  "(its collectives, if any, are not)")
      ->required();
  cmd->add_option("--op", o->op,
                  "collective: all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv")
      ->capture_default_str();
  cmd->add_option("-b,--minbytes", o->min_bytes, "smallest size (nccl-tests syntax: 8, 64K, 1M, 8G)")
      ->capture_default_str();
  cmd->add_option("-e,--maxbytes", o->max_bytes, "largest size")->capture_default_str();
  cmd->add_option("-f,--stepfactor", o->step_factor, "multiply the size by this each step (when > 1)")
      ->capture_default_str();
  cmd->add_option("-i,--stepbytes", o->step_bytes, "else add this to the size each step")->capture_default_str();
  cmd->add_option("-g,--ngpus", o->ngpus, "take part with GPUs 0..N-1 (default: every GPU of the cluster)");
  cmd->add_option("--ranks", o->ranks, "GPUs taking part, as a scenario's ranks: 'all', '0-7' or '[0, 8, 16]'");
  cmd->add_option("--algo", o->algo,
                  "NCCL_ALGO for this run, NCCL's syntax (ring, ^nvls, ...); replaces the "
                  "scenario's nccl.algo");
  cmd->add_option("--proto", o->proto, "NCCL_PROTO for this run (LL, LL128, Simple, ^LL128, ...)");
  cmd->add_option("-d,--datatype", o->type,
                  "element type: int8, uint8, int32, uint32, int64, uint64, half, float, "
                  "double, bfloat16")
      ->capture_default_str();
  cmd->add_option("--redop", o->redop,
                  "reduction (nccl-tests -o): printed in the redop column; with RCCL it also decides whether MSCCL / "
                  "MSCCL++ take the call")
      ->capture_default_str();
  cmd->add_option("-G,--cudagraph", o->graph_launches,
                  "graph launches (nccl-tests -G): the calls are captured into a HIP graph, which RCCL needs to run "
                  "MSCCL++ (with one process per GPU: --process-per-gpu); RCCL only")
      ->capture_default_str();
  cmd->add_option("-r,--root", o->root, "root rank of broadcast and reduce")->capture_default_str();
  cmd->add_option("-n,--iters", o->iters, "calls per size, back to back; the time is their average")
      ->capture_default_str();
  cmd->add_option("--communication", o->communication,
                  "flows (every transfer of the lowered schedule on the scenario's network), coupled (each channel "
                  "one fluid flow: seconds at thousands of GPUs) or auto (coupled from 512 ranks on)")
      ->capture_default_str();
  cmd->add_option("-t,--nthreads", o->threads,
                  "threads per process (nccl-tests -t): each drives GPUs per process / threads GPUs, the header's "
                  "nGpus")
      ->capture_default_str();
  cmd->add_flag("--process-per-gpu", o->process_per_gpu,
                "one process per GPU (mpirun -np N all_reduce_perf -g 1) instead of one per node driving its GPUs");
  cmd->add_option("--host-cost", o->host_cost,
                  "what one issuing thread pays per call, and optionally per channel of a call: '5 us' or "
                  "'5.2 us, 0.31 us'; each iteration takes the longer of the GPUs and the thread issuing its nGpus "
                  "calls (default: the host is not modelled)");
  cmd->callback([o, action] {
    *action = [o] {
      scn::Scenario scenario = scn::load_scenario_cluster(o->scenario);
      scn::NcclTestsOptions opts;
      const auto kind = models::collective_from_string(o->op);
      if (!kind)
        throw InputError(InputLocation{"railyard nccl-tests", 0, "--op"}, fmt::format("unknown collective '{}'", o->op),
                         "use one of: all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, sendrecv");
      opts.kind = *kind;
      opts.min_bytes = parse_size(o->min_bytes, "-b/--minbytes");
      opts.max_bytes = parse_size(o->max_bytes, "-e/--maxbytes");
      opts.step_bytes = parse_size(o->step_bytes, "-i/--stepbytes");
      opts.step_factor = parse_step_factor(o->step_factor);
      opts.type = o->type;
      opts.redop = o->redop;
      opts.root = o->root;
      opts.iters = o->iters;
      opts.communication = o->communication;
      opts.threads = o->threads;
      opts.process_per_gpu = o->process_per_gpu;
      opts.graph_launches = o->graph_launches;
      if (o->host_cost) {
        const InputLocation where{"railyard nccl-tests", 0, "--host-cost"};
        const std::string& text = *o->host_cost;
        const auto comma = text.find(',');
        try {
          opts.host.per_call = parse_seconds(text.substr(0, comma));
          if (comma != std::string::npos) opts.host.per_channel = parse_seconds(text.substr(comma + 1));
        } catch (const std::exception& e) {
          throw InputError(where, fmt::format("'{}' is not one or two times: {}", text, e.what()),
                           "give the cost per call and optionally per channel, e.g. '5.2 us, 0.31 us'");
        }
      }
      const int gpus = scenario.cluster.gpus();
      if (o->ngpus && o->ranks)
        throw InputError(InputLocation{"railyard nccl-tests", 0, "-g/--ranks"}, "both -g and --ranks are given",
                         "give one of them");
      if (o->ngpus) {
        if (*o->ngpus < 1 || *o->ngpus > gpus)
          throw InputError(InputLocation{"railyard nccl-tests", 0, "-g/--ngpus"},
                           fmt::format("-g {} is outside 1..{}, the GPUs of the scenario's cluster", *o->ngpus, gpus),
                           "give at most as many GPUs as the cluster has");
        for (int g = 0; g < *o->ngpus; ++g)
          opts.ranks.push_back(g);
      }
      if (o->ranks) opts.ranks = parse_rank_list(*o->ranks, gpus);
      if (o->algo || o->proto) {
        const InputLocation where{"railyard nccl-tests", 0, o->algo ? "--algo" : "--proto"};
        const auto parsed = models::NcclOverrides::parse(o->algo, o->proto, where);
        if (o->algo) {
          scenario.nccl.algo = o->algo;
          scenario.nccl.overrides.algorithms = parsed.algorithms;
        }
        if (o->proto) {
          scenario.nccl.proto = o->proto;
          scenario.nccl.overrides.protocols = parsed.protocols;
        }
      }
      const scn::NcclTestsRun run = scn::simulate_nccl_tests(scenario, opts);
      scn::print_nccl_tests(std::cout, run, scenario.name);
      return 0;
    };
  });
}

} // namespace railyard::cli
