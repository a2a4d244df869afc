#include "railyard/scenario/nccl_tests.hpp"
#include "railyard/sim/replay.hpp"

#include "railyard/common/child_process.hpp"
#include "railyard/models/nccl_tuning.hpp"
#include "railyard/models/rccl_tuning.hpp"
#include "railyard/sim/collective_runner.hpp"
#include "railyard/sim/nccl_resolve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace railyard::scenario {

using namespace railyard::sim; // the simulator this layer drives

NcclTestsCounts nccl_tests_counts(models::CollectiveKind kind, std::int64_t bytes, int type_size, int nranks)
{
  // getCollByteCount of each nccl-tests program: (send, recv, param) element counts for `count` = bytes / size.
  const std::int64_t count = bytes / type_size;
  const std::int64_t n = nranks;
  std::int64_t send = count, recv = count, param = count;
  switch (kind) {
  case models::CollectiveKind::AllGather:
    send = count / n;
    recv = (count / n) * n;
    param = send;
    break;
  case models::CollectiveKind::ReduceScatter:
    send = (count / n) * n;
    recv = count / n;
    param = recv;
    break;
  case models::CollectiveKind::AllToAll:
    send = recv = (count / n) * n;
    param = count / n;
    break;
  default:
    break;
  }
  return {std::max(send, recv) * type_size, param};
}

namespace {

bool rooted(models::CollectiveKind k)
{
  return k == models::CollectiveKind::Broadcast || k == models::CollectiveKind::Reduce;
}

bool reducing(models::CollectiveKind k)
{
  return k == models::CollectiveKind::AllReduce || k == models::CollectiveKind::ReduceScatter ||
         k == models::CollectiveKind::Reduce;
}

std::string gpu_model_name(const models::NodeSpec& node)
{
  // The names cudaGetDeviceProperties reports, as nccl-tests prints them in its "Rank" lines; hipGetDeviceProperties'
  // for AMD (rccl-tests on MI300X: tests/calibration/data/rccl_tests_all_reduce_mi300x_1node.log).
  if (node.gfx == "gfx942") return "AMD Instinct MI300X";
  if (node.name == "DGX A100") return "NVIDIA A100-SXM4-80GB";
  if (node.name == "HGX H200") return "NVIDIA H200";
  if (node.name == "HGX B200") return "NVIDIA B200";
  return "NVIDIA H100 80GB HBM3";
}

// nccl-tests' time column: %7.0f from 10 ms, %7.1f from 100 us, else %7.2f.
std::string time_str(double us)
{
  if (us >= 10000.0) return fmt::format("{:7.0f}", us);
  if (us >= 100.0) return fmt::format("{:7.1f}", us);
  return fmt::format("{:7.2f}", us);
}

} // namespace

/// `iters` calls of schedule `s` back to back as coupled flows (the replay engine on one communicator of `ranks`): the
/// average time of a call. Each call starts once every rank has finished the previous one, as nccl-tests' ranks do
/// with one call in flight per stream.
Seconds coupled_time(const topo::Topology& topology, const SimulationConfig& config, const std::vector<int>& ranks,
                     const models::Schedule& s, int iters)
{
  workloads::Workload w;
  const int c = w.add_communicator("nccl-tests", workloads::GroupKind::Other, ranks);
  std::vector<char> member(static_cast<std::size_t>(topology.num_gpus()), 0);
  for (int g : ranks)
    member[static_cast<std::size_t>(g)] = 1;
  for (int g = 0; g < topology.num_gpus(); ++g) {
    workloads::RankGraphBuilder b;
    if (member[static_cast<std::size_t>(g)])
      for (int i = 0; i < iters; ++i)
        b.add(workloads::Op::make_collective(s.kind, s.bytes, c, -1, 0), "call");
    w.add_rank(b.finish());
  }
  ReplayOptions o;
  o.comm = CommModel::Coupled;
  o.trace_ranks = std::vector<int>{};
  o.lower = [&s](const models::CollectiveCall&, const InputLocation&) { return s; };
  SimulationConfig quiet = config; // the table needs times only: no link samples
  quiet.fluid.record_links = false;
  quiet.fluid.record_flows = false;
  const ReplayResult r = replay_workload(w, topology, quiet, nullptr, o);
  return Seconds(r.step_time.seconds() / iters);
}

NcclTestsRun simulate_nccl_tests(const Scenario& scenario, const NcclTestsOptions& options)
{
  const InputLocation where{scenario.file, 0, "nccl-tests"};
  auto bad = [&](const std::string& field, const std::string& rule, const std::string& fix) {
    throw InputError(InputLocation{"railyard nccl-tests", 0, field}, rule, fix);
  };
  const int type_size = models::nccl_tests_type_bytes(options.type);
  if (type_size == 0)
    bad("-d/--datatype", fmt::format("unknown type '{}'", options.type),
        "use int8, uint8, int32, uint32, int64, uint64, half, float, double or bfloat16");
  if (options.min_bytes < 0 || options.max_bytes < options.min_bytes)
    bad("-b/-e", fmt::format("sizes from {} to {} bytes are not a range", options.min_bytes, options.max_bytes),
        "give -b no larger than -e, both 0 or more");
  if (options.step_factor <= 1 && options.step_bytes <= 0)
    bad("-f/-i", "the sizes would never grow", "give -f 2 (double each time) or -i with a positive step");
  if (options.step_factor > 1 && options.min_bytes == 0)
    bad("-b", "a sweep that multiplies from 0 bytes never grows", "start at -b 8 or more");
  if (options.iters < 1) bad("-n/--iters", fmt::format("iters = {}", options.iters), "give 1 or more");
  if (options.communication != "auto" && options.communication != "flows" && options.communication != "coupled")
    bad("--communication", fmt::format("unknown communication '{}'", options.communication),
        "use auto (coupled from 512 ranks on), flows (every transfer on the network) or coupled (each channel one "
        "fluid flow)");

  const topo::Topology topology = topo::build_topology(scenario.cluster, scenario.cluster_where);
  NcclTestsRun run;
  run.options = options;
  std::vector<int> ranks = options.ranks;
  if (ranks.empty()) {
    ranks.resize(static_cast<std::size_t>(topology.num_gpus()));
    std::iota(ranks.begin(), ranks.end(), 0);
  }
  run.nranks = static_cast<int>(ranks.size());
  if (options.root < 0 || options.root >= run.nranks)
    bad("-r/--root", fmt::format("root {} is not a rank of the {} taking part", options.root, run.nranks),
        "give a rank between 0 and ranks-1");
  run.gpu_model = gpu_model_name(nccl_node(scenario.nccl, scenario.cluster));
  run.library = scenario.nccl.library;
  std::map<int, int> ranks_per_node;
  for (int gpu : ranks) {
    run.devices.push_back({fmt::format("node{}", topology.node_of(gpu)), topology.local_of(gpu)});
    run.gpus_per_process = std::max(run.gpus_per_process, ++ranks_per_node[topology.node_of(gpu)]);
  }
  if (options.process_per_gpu) run.gpus_per_process = 1;
  if (options.threads < 1 || run.gpus_per_process % options.threads != 0)
    bad("-t/--nthreads",
        fmt::format("{} threads cannot share the {} GPU(s) of a process evenly (nccl-tests gives each thread -g GPUs)",
                    options.threads, run.gpus_per_process),
        fmt::format("give a thread count that divides {}", run.gpus_per_process));
  run.gpus_per_thread = run.gpus_per_process / options.threads;
  if (options.host.per_call.seconds() < 0 || options.host.per_channel.seconds() < 0)
    bad("--host-cost", "a host cost is negative", "give the issuing thread's costs as times of zero or more");
  run.algo_env = scenario.nccl.algo;
  run.proto_env = scenario.nccl.proto;
  if (options.graph_launches < 0)
    bad("-G/--cudagraph", fmt::format("-G {}", options.graph_launches), "give 0 (no graph) or a count of launches");
  if (options.graph_launches > 0 && scenario.nccl.library != models::CollectiveLibrary::Rccl)
    bad("-G/--cudagraph",
        "graph launches change only what RCCL runs here (MSCCL++ takes captured calls); NCCL's model does not price "
        "graph launches",
        "leave out -G for NCCL, or use an RCCL scenario (nccl: {library: rccl})");
  // How the calls reach RCCL: captured into a graph with -G, the process shape (MSCCL++ needs a process per GPU),
  // the type and reduction, and nccl-tests' two columns (MSCCL's algorithms are in-place or out-of-place).
  sim::NcclSettings settings = scenario.nccl;
  settings.rccl_calls.graph_captured = settings.rccl_calls.graph_captured || options.graph_launches > 0;
  settings.rccl_calls.process_per_gpu = run.gpus_per_process == 1;
  settings.rccl_calls.type = options.type;
  settings.rccl_calls.redop = options.redop;
  sim::NcclSettings in_place_settings = settings;
  in_place_settings.rccl_calls.in_place = true;
  // One communicator for the whole sweep, as nccl-tests creates one and calls it for every size.
  const NcclCommunicator comm(ranks, topology, settings);
  const NcclCommunicator in_place_comm(ranks, topology, in_place_settings);
  run.coupled = options.communication == "coupled" || (options.communication == "auto" && run.nranks >= kCoupledFrom);

  // One column: RCCL's kernel or NCCL's (RCCL's) choice for the call, simulated.
  auto simulate = [&](const NcclCommunicator& c, const sim::NcclSettings& with, const models::CollectiveCall& call,
                      std::int64_t size_bytes) {
    NcclTestsColumn col;
    col.call = c.resolve(call, where);
    if (c.tuning()) {
      models::NcclTuningInput in = *c.tuning();
      in.collective = call.kind;
      in.bytes = call.bytes;
      if (const auto k = models::rccl_default_kernel(in, with.rccl_calls, with.channels.max)) col.rccl_kernel = k->name;
    }
    const models::Schedule s = models::lower(c.lowering_input(col.call, scenario.step_overhead));
    // Every size in a simulation of its own: nccl-tests puts a barrier between sizes, and without one the ranks that
    // finish a size first would start the next early and its time would include the previous size's tail. SimGrid
    // runs one engine per process, so each per-step simulation runs in a child process; coupled flows run on the
    // replay's own event loop.
    if (run.coupled) {
      col.time = coupled_time(topology, scenario.sim, ranks, s, options.iters);
    } else {
      const auto r = run_in_child([&] {
        Simulation sim(topology, scenario.sim);
        const auto timings =
            run_schedules(sim, std::vector<models::Schedule>(static_cast<std::size_t>(options.iters), s));
        return std::vector<double>{(timings.back().end - timings.front().start).seconds() / options.iters};
      });
      col.time = Seconds(r.values.at(0));
    }
    // The issuing thread: each iteration it enqueues the calls of its GPUs; kernels queue on the streams, so back
    // to back iterations take the longer of the GPUs and the thread (models/host_issue.hpp).
    col.device_time = col.time;
    if (options.host.modelled()) {
      col.host_time = models::host_issue_time(options.host, run.gpus_per_thread, col.call.channels.value_or(1));
      col.time = models::back_to_back_time(col.device_time, col.host_time);
    }
    const double t = col.time.seconds();
    col.algbw_GBps = t > 0 ? static_cast<double>(size_bytes) / t / 1e9 : 0.0;
    col.busbw_GBps = col.algbw_GBps * models::busbw_factor(options.kind, run.nranks);
    return col;
  };

  for (std::int64_t size = options.min_bytes; size <= options.max_bytes;
       size = options.step_factor > 1 ? size * options.step_factor : size + options.step_bytes) {
    NcclTestsRow row;
    row.counts = nccl_tests_counts(options.kind, size, type_size, run.nranks);
    models::CollectiveCall call;
    call.kind = options.kind;
    call.bytes = Bytes(static_cast<double>(row.counts.size_bytes));
    call.ranks = ranks;
    call.root = options.root;
    const NcclTestsColumn out = simulate(comm, settings, call, row.counts.size_bytes);
    static_cast<NcclTestsColumn&>(row) = out;
    // The in-place column is simulated on its own only where RCCL runs it differently.
    row.in_place = out;
    if (run.library == models::CollectiveLibrary::Rccl) {
      const models::CollectiveCall in_place = in_place_comm.resolve(call, where);
      if (in_place.algorithm != out.call.algorithm || in_place.protocol != out.call.protocol ||
          in_place.channels != out.call.channels)
        row.in_place = simulate(in_place_comm, in_place_settings, call, row.counts.size_bytes);
    }
    run.rows.push_back(std::move(row));
    if (size == 0 && options.step_factor > 1) break;
    // Stop before the next step passes -e: computing it could overflow the integer and wrap below -e.
    if (options.step_factor > 1 ? size > options.max_bytes / options.step_factor
                                : size > options.max_bytes - options.step_bytes)
      break;
  }
  return run;
}

void print_nccl_tests(std::ostream& out, const NcclTestsRun& run, const std::string& scenario_name)
{
  const auto& o = run.options;
  const std::string program = models::to_string(o.kind) + "_perf";
  const bool rccl = run.library == models::CollectiveLibrary::Rccl;
  if (rccl)
    out << "# Railyard simulated rccl-tests: " << program << " on scenario '" << scenario_name << "', RCCL version "
        << models::rccl_constants().version << " cost model\n";
  else
    out << "# Railyard simulated nccl-tests: " << program << " on scenario '" << scenario_name << "', NCCL version "
        << models::nccl_constants().version << " cost model\n";
  out << "# Collective test starting: " << program << "\n";
  out << fmt::format("# nThread {} nGpus {} minBytes {} maxBytes {} step: {}({}) warmup iters: 0 iters: {} agg iters: "
                     "1 validation: 1 graph: {}\n",
                     o.threads, run.gpus_per_thread, o.min_bytes, o.max_bytes,
                     o.step_factor > 1 ? o.step_factor : o.step_bytes, o.step_factor > 1 ? "factor" : "bytes", o.iters,
                     o.graph_launches);
  out << "#\n";
  // rccl-tests prints its version on a line of its own, without '#' (ROCm/rccl-tests src/common.cu; the logs in
  // tests/calibration/data).
  if (rccl) out << "rccl-tests: Version railyard-simulated\n";
  out << "# Using devices\n";
  // src/common.cu: "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s" (PCI domain, bus,
  // device: not simulated, printed as zeros).
  for (int r = 0; r < run.nranks; ++r) {
    const auto& d = run.devices[static_cast<std::size_t>(r)];
    out << fmt::format("#  Rank {:2d} Group {:2d} Pid {:6d} on {:>10} device {:2d} [{:04x}:{:02x}:{:02x}] {}\n", r, 0,
                       0, d.host, d.device, 0, 0, 0, run.gpu_model);
  }
  out << "#\n";
  // NCCL's acknowledgement of the environment, printed by every rank while its communicator is set up.
  for (const auto& [variable, value] : {std::pair{"NCCL_PROTO", run.proto_env}, std::pair{"NCCL_ALGO", run.algo_env}})
    if (value)
      for (const auto& d : run.devices)
        out << fmt::format("{}:0:0 [{}] NCCL INFO {} set by environment to {}\n", d.host, d.device, variable, *value);
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}           out-of-place                       in-place    "
                     "      \n",
                     "", "", "", "", "");
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6} {:>6}  {:>7}  {:>6}  {:>6} {:>6}\n",
                     "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                     "busbw", "#wrong");
  out << fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>5}  {:>7}  {:>6}  {:>6}  {:>5}\n",
                     "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  double bus_sum = 0;
  int bus_count = 0;
  const std::string redop = reducing(o.kind) ? o.redop : "none";
  const int root = rooted(o.kind) ? o.root : -1;
  for (const auto& row : run.rows) {
    out << fmt::format("{:12d}  {:12d}  {:>8}  {:>6}  {:6d}", row.counts.size_bytes, row.counts.count, o.type, redop,
                       root);
    for (const auto& [time, algbw, busbw] :
         {std::tuple{row.time, row.algbw_GBps, row.busbw_GBps},
          std::tuple{row.in_place.time, row.in_place.algbw_GBps, row.in_place.busbw_GBps}}) {
      out << fmt::format("  {:>7}  {:6.2f}  {:6.2f}  {:5d}", time_str(time.seconds() * 1e6), algbw, busbw, 0);
      bus_sum += busbw;
      ++bus_count;
    }
    out << "\n";
  }
  out << "# Out of bounds values : 0 OK\n";
  out << fmt::format("# Avg bus bandwidth    : {} \n", fmt::format("{:g}", bus_count ? bus_sum / bus_count : 0.0));
  out << "#\n";
  out << (run.coupled ? "# Railyard: communication coupled (each channel one fluid flow; --communication flows runs "
                        "every transfer)\n"
                      : "# Railyard: communication flows (every transfer on the network)\n");
  const bool host = o.host.modelled();
  if (host)
    out << fmt::format("# Railyard: each thread issues {} call(s) per iteration at {:g} us per call + {:g} us per "
                       "channel; sizes marked 'host-bound' are timed by the thread\n",
                       run.gpus_per_thread, o.host.per_call.seconds() * 1e6, o.host.per_channel.seconds() * 1e6);
  out << fmt::format("# Railyard: {}'s choice per size (algorithm/protocol, channels{}):\n", rccl ? "RCCL" : "NCCL",
                     rccl ? "; the kernel RCCL runs before its cost model, where it does" : "");
  const bool p2p = o.kind == models::CollectiveKind::AllToAll || o.kind == models::CollectiveKind::SendRecv;
  // What one column ran: "Ring/LL 56 channels", an RCCL kernel with its name, p2p rounds.
  auto choice = [&](const models::CollectiveCall& call, const std::string& kernel) {
    const bool msccl =
        call.algorithm == models::Algorithm::MscclAllPairs || call.algorithm == models::Algorithm::Mscclpp;
    return fmt::format("{}/{}  {} {}{}", p2p && !msccl ? std::string("p2p") : models::nccl_name(*call.algorithm),
                       models::nccl_name(*call.protocol), call.channels.value_or(0),
                       p2p && !msccl ? "p2p channels at once" : "channels",
                       kernel.empty() ? std::string() : fmt::format("  ({})", kernel));
  };
  for (const auto& row : run.rows) {
    out << fmt::format("#   {:>12} B  {}{}", row.counts.size_bytes, choice(row.call, row.rccl_kernel),
                       host ? fmt::format("  device {:.2f} us, thread {:.2f} us{}", row.device_time.seconds() * 1e6,
                                          row.host_time.seconds() * 1e6,
                                          row.host_time > row.device_time ? "  host-bound" : "")
                            : "");
    const auto& ip = row.in_place;
    if (ip.call.algorithm != row.call.algorithm || ip.call.protocol != row.call.protocol ||
        ip.call.channels != row.call.channels)
      out << fmt::format("; in-place {}", choice(ip.call, ip.rccl_kernel));
    out << "\n";
  }
  const bool kernels = std::any_of(run.rows.begin(), run.rows.end(), [](const NcclTestsRow& r) {
    return !r.rccl_kernel.empty() || !r.in_place.rccl_kernel.empty();
  });
  if (kernels)
    out << fmt::format("# Railyard: RCCL runs the sizes named with a kernel on MSCCL / MSCCL++ before its cost model "
                       "(src/collectives.cc mscclEnqueueCheck){}; nccl.msccl: false (RCCL_MSCCL_ENABLE=0) or "
                       "nccl.mscclpp: false (RCCL_MSCCLPP_ENABLE=0) in the scenario turns them off\n",
                       run.algo_env || run.proto_env ? ", which NCCL_ALGO and NCCL_PROTO do not reach" : "");
}

} // namespace railyard::scenario
