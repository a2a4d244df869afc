// nccl_sweep: every NCCL collective over message sizes, with the algorithm and protocol forced through NCCL_ALGO /
// NCCL_PROTO, reading like nccl-tests: one CSV per collective (nccl_sweep_<collective>.csv), time per operation,
// algbw = size / time and busbw = algbw x the factor of NVIDIA/nccl-tests doc/PERFORMANCE.md, the count of wrong
// elements from a check of every result, and the spread of the per-iteration times.
//
// NCCL reads NCCL_ALGO and NCCL_PROTO when a communicator is created, and some versions cache what they read, so
// each (algorithm, protocol) pair runs in a fresh child process of this program with its environment set; this
// parent process never touches the GPU and merges what the children wrote. A pair NCCL refuses (NVLS with LL, Tree
// for all_gather, ...) becomes a "# note:" line.
//
// Two ways to run:
//   single process over all visible GPUs:   nccl_sweep --out DIR
//   one process per GPU (any launcher):      nccl_sweep --out DIR --nranks N --rank R --id-file SHARED_PATH
// In the second form rank 0 writes the CSVs and the communicator id travels through files next to SHARED_PATH
// (a path on a file system every rank sees; it must not exist when the run starts).
#include "common.hpp"

#include "gpu_ccl.hpp"

#include <csignal>
#include <fcntl.h>
#include <memory>
#include <set>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>

extern char** environ;

using namespace railyard::calib;

namespace {

const char* kUsage =
    "usage: nccl_sweep --out DIR [--collectives "
    "all_reduce,all_gather,reduce_scatter,broadcast,reduce,alltoall,sendrecv]\n"
    "                  [--algos auto,Ring,Tree,NVLS,NVLSTree,PAT] [--protos auto,LL,LL128,Simple]\n"
    "                  [--min-bytes 8] [--max-bytes 1G] [--factor 4] [--iters 20] [--warmup 5]\n"
    "                  [--time-per-size-ms 30] [--combo-timeout 300] [--max-seconds S]\n"
    "                  [--nranks N --rank R --id-file SHARED_PATH [--device D]]\n"
    "  Writes DIR/nccl_sweep_<collective>.csv. 'auto' leaves NCCL_ALGO / NCCL_PROTO unset (NCCL's own choice).\n";

enum class Coll { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, SendRecv };
const char* kCollNames[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                            "reduce",     "alltoall",   "sendrecv"};
const char* kHeader = "collective,algorithm,protocol,nranks,nodes,size_bytes,count,type,redop,root,time_us,algbw_GBps,"
                      "busbw_GBps,wrong,time_min_us,time_max_us,time_stddev_us,iters";

Coll coll_from(const std::string& s, const Options& o)
{
  for (int i = 0; i < 7; ++i)
    if (s == kCollNames[i]) return static_cast<Coll>(i);
  o.fail("unknown collective '" + s + "'");
}

// NVIDIA/nccl-tests doc/PERFORMANCE.md: busbw = algbw x factor.
double bus_factor(Coll c, int n)
{
  switch (c) {
  case Coll::AllReduce:
    return 2.0 * (n - 1) / n;
  case Coll::AllGather:
  case Coll::ReduceScatter:
  case Coll::AllToAll:
    return double(n - 1) / n;
  default:
    return 1.0;
  }
}

// Elements per rank (c) for a requested size, and the size nccl-tests prints for it: the whole buffer for
// all_gather (output), reduce_scatter (input) and alltoall, the per-rank buffer otherwise.
bool per_rank_count(Coll k, long long size, int n, long long& c, long long& printed)
{
  const bool whole = k == Coll::AllGather || k == Coll::ReduceScatter || k == Coll::AllToAll;
  c = whole ? size / 4 / n : size / 4;
  printed = whole ? c * 4 * n : c * 4;
  return c > 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Data and its check. value(r, i) = (r + 1) * (i % 13 + 1): sums over up to 64 ranks stay exact in float.

__device__ __host__ inline float value(int r, long long i)
{
  return float(r + 1) * float(i % 13 + 1);
}

__global__ void init_send(float* send, long long total, int rank)
{
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x)
    send[i] = value(rank, i);
}

__global__ void check_recv(Coll k, const float* recv, long long c, int rank, int n, unsigned long long* wrong)
{
  const float s = float(n) * float(n + 1) / 2.0f;
  const long long total = (k == Coll::AllGather || k == Coll::AllToAll) ? c * n : c;
  unsigned long long bad = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    float expect = 0;
    switch (k) {
    case Coll::AllReduce:
    case Coll::Reduce:
      expect = s * float(i % 13 + 1);
      break;
    case Coll::Broadcast:
      expect = value(0, i);
      break;
    case Coll::AllGather:
      expect = value(int(i / c), i % c);
      break;
    case Coll::ReduceScatter:
      expect = s * float((rank * c + i) % 13 + 1);
      break;
    case Coll::AllToAll:
      expect = value(int(i / c), rank * c + i % c);
      break;
    case Coll::SendRecv:
      expect = value((rank - 1 + n) % n, i);
      break;
    }
    bad += recv[i] != expect;
  }
  if (bad) atomicAdd(wrong, bad);
}

// ---------------------------------------------------------------------------------------------------------------
// The child: one (algorithm, protocol) pair, every collective and size.

struct Rank {
  int rank = 0;
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
  unsigned long long* wrong = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
};

ncclResult_t launch(Coll k, Rank& r, long long c, int n)
{
  switch (k) {
  case Coll::AllReduce:
    return ncclAllReduce(r.send, r.recv, c, ncclFloat, ncclSum, r.comm, r.stream);
  case Coll::AllGather:
    return ncclAllGather(r.send, r.recv, c, ncclFloat, r.comm, r.stream);
  case Coll::ReduceScatter:
    return ncclReduceScatter(r.send, r.recv, c, ncclFloat, ncclSum, r.comm, r.stream);
  case Coll::Broadcast:
    return ncclBroadcast(r.send, r.recv, c, ncclFloat, 0, r.comm, r.stream);
  case Coll::Reduce:
    return ncclReduce(r.send, r.recv, c, ncclFloat, ncclSum, 0, r.comm, r.stream);
  case Coll::AllToAll: {
    // NCCL's alltoall is grouped point-to-point, as nccl-tests' alltoall_perf does it.
    for (int peer = 0; peer < n; ++peer) {
      ncclResult_t e = ncclSend(r.send + peer * c, c, ncclFloat, peer, r.comm, r.stream);
      if (e == ncclSuccess) e = ncclRecv(r.recv + peer * c, c, ncclFloat, peer, r.comm, r.stream);
      if (e != ncclSuccess) return e;
    }
    return ncclSuccess;
  }
  case Coll::SendRecv: {
    ncclResult_t e = ncclSend(r.send, c, ncclFloat, (r.rank + 1) % n, r.comm, r.stream);
    if (e == ncclSuccess) e = ncclRecv(r.recv, c, ncclFloat, (r.rank - 1 + n) % n, r.comm, r.stream);
    return e;
  }
  }
  return ncclInvalidArgument;
}

class Child {
public:
  Child(const Options& o) : o_(o) {}

  int run()
  {
    out_ = std::make_unique<CheckedFile>(o_.str("combo-out"));
    algo_ = o_.str("algo", "auto");
    proto_ = o_.str("proto", "auto");
    nodes_ = static_cast<int>(o_.integer("nodes", 1));
    metadata();
    if (!init()) return 0; // the refusal is a note; the parent carries on with the next pair
    const long long min_b = o_.integer("min-bytes", 8), max_b = o_.integer("max-bytes", 1ll << 30);
    const long long factor = o_.integer("factor", 4);
    for (const auto& name : o_.list("collectives", "all_reduce,all_gather,reduce_scatter,broadcast,reduce,alltoall,"
                                                   "sendrecv")) {
      const Coll k = coll_from(name, o_);
      long long last_printed = -1;
      for (long long size = min_b; size <= max_b; size *= factor) {
        long long c = 0, printed = 0;
        if (!per_rank_count(k, size, nranks_, c, printed) || printed == last_printed) continue;
        last_printed = printed;
        if (!measure(k, c, printed)) {
          reinit();
          break;
        }
      }
    }
    finalize();
    out_->close();
    return 0;
  }

private:
  // The child's lines go to its parent, which reads them back with getline: LF ends them; the parent writes the CSV.
  void line(const std::string& s) { out_->put(s + "\n"); }
  void note(const std::string& s) { line("# note: " + s); }

  void metadata()
  {
    const bool multi = o_.has("nranks");
    int count = 0;
    RY_CUDA(cudaGetDeviceCount(&count));
    if (multi) {
      nranks_ = static_cast<int>(o_.integer("nranks", 1));
      const int rank = static_cast<int>(o_.integer("rank", 0));
      ranks_.resize(1);
      ranks_[0].rank = rank;
      ranks_[0].device = static_cast<int>(o_.integer("device", rank % std::max(count, 1)));
    } else {
      nranks_ = count;
      ranks_.resize(count);
      for (int i = 0; i < count; ++i)
        ranks_[i].rank = ranks_[i].device = i;
    }
    cudaDeviceProp p{};
    RY_CUDA(cudaGetDeviceProperties(&p, ranks_[0].device));
    int runtime = 0, nccl = 0;
    RY_CUDA(cudaRuntimeGetVersion(&runtime));
    ncclGetVersion(&nccl);
    line("# gpu_model: " + std::string(p.name));
    line(format("# gpu_count: %d", count));
    line(format("# compute_capability: %d.%d", p.major, p.minor));
    line("# driver: " + driver_version());
    line(std::string("# gpu_runtime: ") + kGpuRuntime);
#if defined(RAILYARD_GPU_HIP)
    line(format("# hip_runtime: %d.%d", runtime / 10000000, (runtime % 10000000) / 100000));
#else
    line(format("# cuda_runtime: %d.%d", runtime / 1000, (runtime % 1000) / 10));
#endif
    line(std::string("# collective_library: ") + kCollectiveLibrary); // RCCL keeps NCCL's version numbering
    line(format("# nccl_version: %d.%d.%d", nccl >= 10000 ? nccl / 10000 : nccl / 1000,
                nccl >= 10000 ? (nccl % 10000) / 100 : (nccl % 1000) / 100, nccl % 100));
    line("# date: " + utc_now());
    line("# host: " + host_name());
    line(format("# mode: %s", multi ? "one process per GPU, communicator id through files"
                                    : "one process over all visible GPUs (ncclCommInitAll)"));
    line(std::string("# timing: CUDA events around each operation; ") +
         (multi ? "rank 0's own events" : "the largest time over the GPUs of each iteration"));
    line(std::string("# wrong: elements of the result that differ from the expected values; ") +
         (multi ? "rank 0's elements" : "all GPUs' elements") + ", out-of-place only");
    if (count >= 2) line("# intra_node_link: " + peer_link_kind(0, 1));
  }

  bool nccl_ok(ncclResult_t e, const std::string& what)
  {
    if (e == ncclSuccess || e == ncclInProgress) return true;
    note(format("algorithm %s protocol %s: %s: NCCL refused: %s (%s)", algo_.c_str(), proto_.c_str(), what.c_str(),
                ncclGetErrorString(e), ncclGetLastError(nullptr)));
    return false;
  }

  bool init()
  {
    const long long max_b = o_.integer("max-bytes", 1ll << 30);
    for (auto& r : ranks_) {
      RY_CUDA(cudaSetDevice(r.device));
      RY_CUDA(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
      RY_CUDA(cudaMalloc(&r.send, max_b + 64));
      RY_CUDA(cudaMalloc(&r.recv, max_b + 64));
      RY_CUDA(cudaMalloc(&r.wrong, sizeof(unsigned long long)));
      RY_CUDA(cudaEventCreate(&r.start));
      RY_CUDA(cudaEventCreate(&r.stop));
    }
    return make_comms();
  }

  bool make_comms()
  {
    if (ranks_.size() > 1 || !o_.has("nranks")) {
      std::vector<ncclComm_t> comms(ranks_.size());
      std::vector<int> devs;
      for (auto& r : ranks_)
        devs.push_back(r.device);
      if (!nccl_ok(ncclCommInitAll(comms.data(), static_cast<int>(devs.size()), devs.data()), "ncclCommInitAll"))
        return false;
      for (size_t i = 0; i < ranks_.size(); ++i)
        ranks_[i].comm = comms[i];
      return true;
    }
    ncclUniqueId id;
    const std::string path = format("%s.%s.%d", o_.str("id-file").c_str(), o_.str("combo").c_str(), generation_++);
    if (ranks_[0].rank == 0) {
      if (!nccl_ok(ncclGetUniqueId(&id), "ncclGetUniqueId")) return false;
      const std::string tmp = path + ".tmp";
      FILE* f = std::fopen(tmp.c_str(), "wb");
      if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()))
        return note("cannot write the communicator id to " + path), false;
    } else {
      const double limit_s = o_.number("combo-timeout", 300);
      for (double waited = 0;; waited += 0.05) {
        FILE* f = std::fopen(path.c_str(), "rb");
        if (f) {
          const bool ok = std::fread(&id, sizeof id, 1, f) == 1;
          std::fclose(f);
          if (ok) break;
        }
        if (waited > limit_s) return note("no communicator id appeared at " + path), false;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    RY_CUDA(cudaSetDevice(ranks_[0].device));
    return nccl_ok(ncclCommInitRank(&ranks_[0].comm, nranks_, id, ranks_[0].rank), "ncclCommInitRank");
  }

  void reinit()
  {
    for (auto& r : ranks_)
      if (r.comm) {
        ncclCommAbort(r.comm);
        r.comm = nullptr;
      }
    for (auto& r : ranks_) {
      RY_CUDA(cudaSetDevice(r.device));
      (void)cudaGetLastError();
    }
    make_comms();
  }

  // Launches the collective on every local rank; false on an NCCL error (noted).
  bool once(Coll k, long long c, bool timed)
  {
    if (ranks_.size() > 1 && !nccl_ok(ncclGroupStart(), "ncclGroupStart")) return false;
    for (auto& r : ranks_) {
      RY_CUDA(cudaSetDevice(r.device));
      if (timed) RY_CUDA(cudaEventRecord(r.start, r.stream));
      const bool p2p = k == Coll::AllToAll || k == Coll::SendRecv;
      if (p2p && ranks_.size() == 1) ncclGroupStart();
      const ncclResult_t e = launch(k, r, c, nranks_);
      if (p2p && ranks_.size() == 1) ncclGroupEnd();
      if (!nccl_ok(e, kCollNames[int(k)])) return false;
    }
    if (ranks_.size() > 1 && !nccl_ok(ncclGroupEnd(), std::string(kCollNames[int(k)]) + " (group)")) return false;
    if (timed)
      for (auto& r : ranks_) {
        RY_CUDA(cudaSetDevice(r.device));
        RY_CUDA(cudaEventRecord(r.stop, r.stream));
      }
    for (auto& r : ranks_) {
      RY_CUDA(cudaSetDevice(r.device));
      const cudaError_t ce = cudaStreamSynchronize(r.stream);
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(r.comm, &async);
      if (ce != cudaSuccess)
        return note(format("algorithm %s protocol %s: %s: CUDA error %s", algo_.c_str(), proto_.c_str(),
                           kCollNames[int(k)], cudaGetErrorString(ce))),
               false;
      if (!nccl_ok(async, std::string(kCollNames[int(k)]) + " (asynchronous)")) return false;
    }
    return true;
  }

  double iteration_time()
  {
    double t = 0;
    for (auto& r : ranks_) {
      float ms = 0;
      RY_CUDA(cudaEventElapsedTime(&ms, r.start, r.stop));
      t = std::max(t, ms * 1e-3);
    }
    return t;
  }

  bool measure(Coll k, long long c, long long printed)
  {
    const long long send_elems = (k == Coll::ReduceScatter || k == Coll::AllToAll) ? c * nranks_ : c;
    const long long recv_elems = (k == Coll::AllGather || k == Coll::AllToAll) ? c * nranks_ : c;
    // Check run: fresh inputs, a poisoned output, then every element against its expected value.
    for (auto& r : ranks_) {
      RY_CUDA(cudaSetDevice(r.device));
      init_send<<<256, 256, 0, r.stream>>>(r.send, send_elems, r.rank);
      RY_CUDA(cudaGetLastError());
      RY_CUDA(cudaMemsetAsync(r.recv, 0xff, recv_elems * 4, r.stream));
      RY_CUDA(cudaMemsetAsync(r.wrong, 0, sizeof(unsigned long long), r.stream));
      RY_CUDA(cudaStreamSynchronize(r.stream));
    }
    if (!once(k, c, false)) return false;
    unsigned long long wrong = 0;
    for (auto& r : ranks_) {
      if (k == Coll::Reduce && r.rank != 0) continue; // only the root receives a reduce's result
      RY_CUDA(cudaSetDevice(r.device));
      check_recv<<<256, 256, 0, r.stream>>>(k, r.recv, c, r.rank, nranks_, r.wrong);
      RY_CUDA(cudaGetLastError());
      unsigned long long w = 0;
      RY_CUDA(cudaMemcpyAsync(&w, r.wrong, sizeof w, cudaMemcpyDeviceToHost, r.stream));
      RY_CUDA(cudaStreamSynchronize(r.stream));
      wrong += w;
    }
    const int warmup = static_cast<int>(o_.integer("warmup", 5));
    for (int i = 0; i < warmup; ++i)
      if (!once(k, c, false)) return false;
    if (!once(k, c, true)) return false;
    const double first = iteration_time();
    const double budget = o_.number("time-per-size-ms", 30) * 1e-3;
    const int max_iters = static_cast<int>(o_.integer("iters", 20));
    const int iters =
        std::max(std::min(5, max_iters), std::min(max_iters, static_cast<int>(budget / std::max(first, 1e-7))));
    std::vector<double> times;
    for (int i = 0; i < iters; ++i) {
      if (!once(k, c, true)) return false;
      times.push_back(iteration_time());
    }
    const Stats st = stats_of(times);
    if (ranks_[0].rank != 0) return true; // rank 0 writes
    const double algbw = printed / st.mean / 1e9;
    const bool reduces = k == Coll::AllReduce || k == Coll::ReduceScatter || k == Coll::Reduce;
    const bool rooted = k == Coll::Broadcast || k == Coll::Reduce;
    line(csv_record({kCollNames[int(k)], algo_, proto_, std::to_string(nranks_), std::to_string(nodes_),
                     std::to_string(printed), std::to_string(c), "float", reduces ? "sum" : "none",
                     std::to_string(rooted ? 0 : -1), g6(st.mean * 1e6), g6(algbw), g6(algbw * bus_factor(k, nranks_)),
                     std::to_string(wrong), g6(st.min * 1e6), g6(st.max * 1e6), g6(st.stddev * 1e6),
                     std::to_string(st.n)}));
    return true;
  }

  void finalize()
  {
    for (auto& r : ranks_) {
      if (r.comm) ncclCommDestroy(r.comm);
      RY_CUDA(cudaSetDevice(r.device));
      cudaFree(r.send);
      cudaFree(r.recv);
      cudaFree(r.wrong);
    }
  }

  const Options& o_;
  std::unique_ptr<CheckedFile> out_;
  std::string algo_, proto_;
  int nranks_ = 1, nodes_ = 1, generation_ = 0;
  std::vector<Rank> ranks_;
};

// ---------------------------------------------------------------------------------------------------------------
// The parent: one child per (algorithm, protocol), then one CSV per collective.

std::string self_path(char** argv)
{
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, n) : std::string(argv[0]);
}

int spawn_child(const std::string& exe, const std::vector<std::string>& args, const std::string& algo,
                const std::string& proto)
{
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (v.rfind("NCCL_ALGO=", 0) != 0 && v.rfind("NCCL_PROTO=", 0) != 0) env.push_back(v);
  }
  if (algo != "auto") env.push_back("NCCL_ALGO=" + algo);
  if (proto != "auto") env.push_back("NCCL_PROTO=" + proto);
  std::vector<char*> argvv, envv;
  argvv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args)
    argvv.push_back(const_cast<char*>(a.c_str()));
  argvv.push_back(nullptr);
  for (auto& e : env)
    envv.push_back(e.data());
  envv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argvv.data(), envv.data()) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

int parent(const Options& o, int argc, char** argv)
{
  const std::string dir = o.str("out");
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    o.fail("cannot create --out " + dir + ": " + std::strerror(errno));
  const bool multi = o.has("nranks");
  const int rank = static_cast<int>(o.integer("rank", 0));
  const int nranks = static_cast<int>(o.integer("nranks", 1));
  int nodes = 1;
  if (multi) {
    if (!o.has("id-file") || nranks < 2 || rank < 0 || rank >= nranks)
      o.fail("one process per GPU needs --nranks N (>= 2), --rank R (0..N-1) and --id-file PATH");
    const std::string id = o.str("id-file");
    if (rank == 0) {
      const int fd = open(id.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (fd < 0) o.fail("--id-file " + id + " exists already (from an earlier run?): remove it or name a new path");
      close(fd);
    }
    // Every rank names its host, so rank 0 knows how many nodes the run spans.
    {
      CheckedFile f(format("%s.host.%d", id.c_str(), rank));
      f.put(host_name() + "\n");
      f.close();
    }
    if (rank == 0) {
      std::set<std::string> hosts;
      for (int r = 0; r < nranks; ++r) {
        char buf[256] = {0};
        for (int tries = 0;; ++tries) {
          FILE* h = std::fopen(format("%s.host.%d", id.c_str(), r).c_str(), "r");
          if (h && std::fgets(buf, sizeof buf, h)) {
            std::fclose(h);
            break;
          }
          if (h) std::fclose(h);
          if (tries > 6000) o.fail(format("rank %d never wrote %s.host.%d", r, id.c_str(), r));
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        hosts.insert(buf);
      }
      nodes = static_cast<int>(hosts.size());
    }
  }
  const std::string exe = self_path(argv);
  std::vector<std::string> meta, notes;
  std::map<std::string, std::vector<std::vector<std::string>>> rows;
  int combo = 0;
  bool have_meta = false;
  const double max_seconds = o.number("max-seconds", 1e9);
  const auto started = std::chrono::steady_clock::now();
  for (const auto& algo : o.list("algos", "auto,Ring,Tree,NVLS,NVLSTree,PAT"))
    for (const auto& proto : o.list("protos", "auto,LL,LL128,Simple")) {
      // Every rank decides alike only if they started together; the slack is the combo timeout's job.
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() > max_seconds) {
        notes.push_back(format("algorithm %s protocol %s: not measured, the run passed --max-seconds %g (measuring "
                               "process skipped)",
                               algo.c_str(), proto.c_str(), max_seconds));
        ++combo;
        continue;
      }
      const std::string tmp = format("%s/.combo.%d.%d", dir.c_str(), rank, combo);
      std::vector<std::string> args{
          "--child", "--combo-out",        tmp, "--algo", algo, "--proto", proto, "--combo", std::to_string(combo),
          "--nodes", std::to_string(nodes)};
      for (const char* k : {"collectives", "min-bytes", "max-bytes", "factor", "iters", "warmup", "time-per-size-ms",
                            "combo-timeout", "nranks", "rank", "id-file", "device"})
        if (o.has(k)) {
          args.push_back(std::string("--") + k);
          args.push_back(o.str(k));
        }
      ++combo;
      std::fprintf(stderr, "nccl_sweep: algorithm %s protocol %s\n", algo.c_str(), proto.c_str());
      const int status = spawn_child(exe, args, algo, proto);
      std::ifstream in(tmp);
      std::string l;
      std::vector<std::string> child_meta;
      while (std::getline(in, l)) {
        if (l.rfind("# note: ", 0) == 0)
          notes.push_back(l.substr(8));
        else if (l.rfind("# ", 0) == 0)
          child_meta.push_back(l);
        else if (!l.empty()) {
          std::vector<std::string> fields = csv_split(l);
          rows[fields.front()].push_back(std::move(fields));
        }
      }
      std::remove(tmp.c_str());
      if (!have_meta && !child_meta.empty()) {
        meta = child_meta;
        have_meta = true;
      }
      if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        notes.push_back(format("algorithm %s protocol %s: the measuring process ended with %s %d (timed out, or "
                               "crashed); its sizes after the failure are missing",
                               algo.c_str(), proto.c_str(), WIFSIGNALED(status) ? "signal" : "status",
                               WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status)));
    }
  if (multi && rank != 0) return 0;
  std::string cmd;
  for (int i = 0; i < argc; ++i)
    cmd += (i ? " " : "") + std::string(argv[i]);
  int written = 0;
  for (const auto& name : o.list("collectives", "all_reduce,all_gather,reduce_scatter,broadcast,reduce,alltoall,"
                                                "sendrecv")) {
    const auto it = rows.find(name);
    if (it == rows.end() || it->second.empty()) {
      std::fprintf(stderr, "nccl_sweep: no %s measurement succeeded; no file written for it\n", name.c_str());
      continue;
    }
    CsvWriter w(dir + "/nccl_sweep_" + name + ".csv", "nccl_sweep");
    for (const auto& m : meta) {
      const auto colon = m.find(':');
      w.meta(m.substr(2, colon - 2), m.substr(colon + 2));
    }
    w.meta("collective", name);
    w.meta("command", cmd);
    for (const auto& n : notes)
      if (n.find(name) != std::string::npos || n.find("measuring process") != std::string::npos ||
          n.find("ncclCommInit") != std::string::npos)
        w.note(n);
    w.header(kHeader);
    for (const auto& r : it->second)
      w.row(r);
    w.complete();
    ++written;
  }
  return written > 0 ? 0 : 1;
}

void on_alarm(int)
{
  _exit(124);
}

} // namespace

int main(int argc, char** argv)
{
  Options o(argc, argv, kUsage);
  o.allow({"out", "collectives", "algos", "protos", "min-bytes", "max-bytes", "factor", "iters", "warmup",
           "time-per-size-ms", "combo-timeout", "max-seconds", "nranks", "rank", "id-file", "device",
           // set by the parent for its children
           "child", "combo-out", "algo", "proto", "combo", "nodes"});
  if (o.has("child")) {
    std::signal(SIGALRM, on_alarm);
    alarm(static_cast<unsigned>(o.integer("combo-timeout", 300)));
    Child c(o);
    return c.run();
  }
  if (!o.has("out")) o.fail("--out is required");
  return parent(o, argc, argv);
}
