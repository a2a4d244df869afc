// From inputs to a profile: the fixtures' model parameters come back out of the fits (make_fixtures.py states
// them; the tolerances follow from its noise), synthetic calibration CSVs give back the efficiencies they were made
// with, and bad inputs stop the calibration with the file, the rule and the fix.
#include "railyard/calibration/calibrate.hpp"
#include "railyard/calibration/calibration_csv.hpp"
#include "railyard/calibration/digest.hpp"
#include "railyard/calibration/nccl_tests_log.hpp"
#include "railyard/common/error.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace rc = railyard::calibration;
namespace fs = std::filesystem;
namespace units = railyard::units;
using railyard::Bytes;
using railyard::InputError;
using railyard::models::Algorithm;
using railyard::models::CollectiveKind;
using railyard::models::Protocol;

namespace {

std::string data(const std::string& name)
{
  return std::string(RAILYARD_SOURCE_DIR) + "/tests/calibration/data/" + name;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("railyard_calibrate_" + name + "_" + std::to_string(getpid())))
  {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const
  {
    const auto p = (path / name).string();
    std::ofstream(p) << text;
    return p;
  }
};

// Uniform in [-1, 1) from mt19937_64's raw output (bit-exact on every platform).
struct Noise {
  std::mt19937_64 gen;
  explicit Noise(std::uint64_t seed) : gen(seed) {}
  double next() { return static_cast<double>(gen() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }
};

std::string csv_head(const std::string& program, const std::string& gpu = "NVIDIA H200")
{
  return fmt::format("# railyard_calibration_csv: 1\n# program: {}\n# gpu_model: {}\n# gpu_count: 8\n"
                     "# driver: 570.86.15\n# cuda_runtime: 12080\n# nccl_version: 2.27.7\n# host: test\n"
                     "# date: 2025-01-01T00:00:00Z\n",
                     program, gpu);
}

const rc::CollectiveFit& only(const rc::Profile& p, CollectiveKind k)
{
  const rc::CollectiveFit* found = nullptr;
  for (const auto& c : p.collectives)
    if (c.collective == k) {
      EXPECT_EQ(found, nullptr);
      found = &c;
    }
  EXPECT_NE(found, nullptr);
  return *found;
}

std::string run_error(const std::vector<std::string>& inputs, InputError* out = nullptr)
{
  try {
    (void)rc::calibrate(inputs, {});
  } catch (const InputError& e) {
    if (out) *out = e;
    return e.what();
  }
  ADD_FAILURE() << "expected an InputError";
  return "";
}

} // namespace

TEST(Calibrate, FixtureModelsComeBackOutOfTheFits)
{
  const auto r = rc::calibrate({data("nccl_tests_2.17_all_reduce_h200.log"),
                                data("nccl_tests_2.17_reduce_scatter_h200_per_iter.log"),
                                data("nccl_tests_2.17_sendrecv_h200_2nodes.log")},
                               {});
  const auto& p = r.profile;
  EXPECT_EQ(p.gpu_model, "NVIDIA H200");
  EXPECT_EQ(p.nccl_version, "2.27.7");
  EXPECT_EQ(p.gpus_per_node, 8);
  ASSERT_EQ(p.inputs.size(), 3u);
  EXPECT_EQ(p.inputs[0].sha256, rc::sha256_hex(rc::read_text_file(data("nccl_tests_2.17_all_reduce_h200.log"))));

  // make_fixtures.py, new_format_allreduce_h200: pieces from 0 (16 us, 3 GB/s), 64 KiB (30 us, 60 GB/s) and
  // 8 MiB (50 us, 478 GB/s busbw), relative noise uniform within 1.5%: sigma = 0.015 / sqrt(3).
  const double sigma = 0.015 / std::sqrt(3.0);
  const auto& ar = only(p, CollectiveKind::AllReduce);
  EXPECT_EQ(ar.link, rc::LinkKind::NvLink);
  EXPECT_EQ(ar.nranks, 8);
  EXPECT_EQ(ar.nodes, 1);
  EXPECT_FALSE(ar.algorithm);
  ASSERT_EQ(ar.pieces.size(), 3u);
  EXPECT_EQ(ar.pieces[1].from.bytes(), 65536.0);
  EXPECT_EQ(ar.pieces[2].from.bytes(), 8388608.0);
  // Latency from the 6 sizes (8..256 B) where the transfer is under 1% of it; busbw from the 4 sizes (2..16 GiB)
  // where the latency is under 1% of the transfer. Four standard errors.
  EXPECT_NEAR(ar.pieces[0].latency.seconds() / 16e-6, 1.0, 4 * sigma / std::sqrt(6.0));
  EXPECT_NEAR(ar.pieces[2].busbw.bytes_per_sec() / 478e9, 1.0, 4 * sigma / std::sqrt(4.0));
  ASSERT_TRUE(ar.fit);
  EXPECT_LE(ar.fit->quality.rms_rel_error, 0.015 / (1 - 0.015));

  const auto& rs = only(p, CollectiveKind::ReduceScatter);
  EXPECT_EQ(rs.pieces.size(), 2u);
  EXPECT_EQ(rs.pieces.back().from.bytes(), 262144.0); // make_fixtures.py: second piece from 1 << 18

  // The network link comes from the two-node send/recv: 48.5 GB/s from 4 MiB on, 9 us at the smallest sizes.
  const auto* net = p.link(rc::LinkKind::Network);
  ASSERT_NE(net, nullptr);
  EXPECT_NEAR(net->bandwidth.bytes_per_sec() / 48.5e9, 1.0, 4 * sigma / std::sqrt(3.0)); // 1, 2, 4 GiB: latency < 1%
  EXPECT_NEAR(net->latency.seconds() / 9e-6, 1.0, 4 * sigma / std::sqrt(3.0));           // 8, 16, 32 B
  const auto& sr = only(p, CollectiveKind::SendRecv);
  EXPECT_EQ(sr.link, rc::LinkKind::Network);
  EXPECT_EQ(sr.nodes, 2);

  // What the simulator asks: the fitted model at a size equals the piece's formula.
  const double f8 = 2.0 * 7 / 8;
  const double s = 1 << 30;
  EXPECT_NEAR(
      p.collective_time(CollectiveKind::AllReduce, std::nullopt, std::nullopt, rc::LinkKind::NvLink, Bytes(s), 8)
          ->seconds(),
      ar.pieces[2].latency.seconds() + s * f8 / ar.pieces[2].busbw.bytes_per_sec(), 1e-12);
}

TEST(Calibrate, ForcedAlgorithmFromTheLogAndOldFormats)
{
  const auto ring = rc::calibrate({data("nccl_tests_2.13_all_reduce_h100_ring.log")}, {}).profile;
  ASSERT_EQ(ring.collectives.size(), 1u);
  EXPECT_EQ(ring.collectives[0].algorithm, Algorithm::Ring); // "NCCL_ALGO set by environment to Ring"
  EXPECT_FALSE(ring.collectives[0].protocol);
  EXPECT_EQ(ring.nccl_version, "2.18.3");

  const auto old = rc::calibrate({data("nccl_tests_2.8_all_reduce_a100.log")}, {}).profile;
  EXPECT_EQ(old.gpu_model, "A100-SXM4-40GB");
  EXPECT_EQ(old.nccl_version, "2.7.8");
  ASSERT_EQ(old.collectives.size(), 1u);
  EXPECT_EQ(old.collectives[0].measured_max.bytes(), 134217728.0);
}

TEST(Calibrate, IntraNodeLinkFollowsTheGpuNameOrTheOption)
{
  TempDir dir("pcie");
  std::string log = rc::read_text_file(data("nccl_tests_2.17_all_reduce_h200.log"));
  const auto at = log.find("NVIDIA H200\n");
  std::string pcie = log;
  for (size_t pos = 0; (pos = pcie.find("NVIDIA H200\n", pos)) != std::string::npos; pos += 20)
    pcie.replace(pos, 12, "NVIDIA H100 PCIe\n");
  ASSERT_NE(at, std::string::npos);
  const auto path = dir.write("all_reduce_perf.log", pcie);
  EXPECT_EQ(rc::calibrate({path}, {}).profile.collectives[0].link, rc::LinkKind::Pcie);
  rc::CalibrateOptions o;
  o.intra_node_link = rc::LinkKind::NvLink;
  EXPECT_EQ(rc::calibrate({path}, o).profile.collectives[0].link, rc::LinkKind::NvLink);
}

TEST(Calibrate, KernelModelFromSyntheticGemmAndMemoryCsvs)
{
  // H200 datasheet: bf16 989.4 TFLOP/s dense, HBM 4800 GB/s. Made with efficiency 0.75 for bf16 GEMMs, copies at
  // 4300 GB/s (efficiency 4300 / 4800), 2.5 us launches, 1% uniform noise.
  TempDir dir("kernel");
  const double peak = 989.4e12, eff = 0.75, launch = 2.5e-6, mem_bw = 4300e9, eps = 0.01;
  const double sigma = eps / std::sqrt(3.0);
  Noise noise(3);
  std::string gemm = csv_head("gemm_bench") + "dtype,m,n,k,flops,bytes,time_us,tflops,time_min_us,time_max_us,iters\n";
  int compute_bound = 0;
  for (int n : {256, 512, 1024, 2048, 4096, 8192, 16384}) {
    const double flops = 2.0 * n * n * n, bytes = 3.0 * n * n * 2.0;
    const double t = (launch + std::max(flops / (peak * eff), bytes / mem_bw)) * (1 + eps * noise.next());
    compute_bound += flops / bytes >= peak / mem_bw;
    gemm += fmt::format("bf16,{},{},{},{},{},{},{},{},{},20\n", n, n, n, flops, bytes, t * 1e6, flops / t / 1e12,
                        t * 1e6, t * 1e6);
  }
  gemm += "# complete: true\n";
  std::string mem = csv_head("mem_bench") + "kernel,bytes,time_us,GBps,time_min_us,time_max_us,iters\n";
  for (int i = 0; i < 5; ++i)
    mem += fmt::format("launch,0,{},0,{},{},1000\n", launch * 1e6, launch * 1e6, launch * 1e6);
  for (double b = 1 << 20; b <= 16.0 * (1 << 30); b *= 2) {
    const double t = (launch + b / mem_bw) * (1 + eps * noise.next());
    mem += fmt::format("memcpy,{},{},{},{},{},20\n", b, t * 1e6, b / t / 1e9, t * 1e6, t * 1e6);
  }
  mem += "# complete: true\n";
  const auto p = rc::calibrate({dir.write("gemm.csv", gemm), dir.write("mem.csv", mem)}, {}).profile;
  ASSERT_TRUE(p.kernel);
  const auto& k = *p.kernel;
  EXPECT_NEAR(k.launch_overhead.seconds(), launch, launch * 1e-6); // stored to 6 significant digits
  EXPECT_EQ(k.memory_bandwidth.bytes_per_sec(), 4800e9);           // the datasheet, not a fit
  // The memory efficiency rests on the largest copies (1..16 GiB, where launch is under 1%: 5 sizes).
  EXPECT_NEAR(k.memory_efficiency / (mem_bw / 4800e9), 1.0, 4 * sigma / std::sqrt(5.0));
  const auto* bf16 = k.compute_for(rc::DType::Bf16);
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ(bf16->peak_flops, peak);
  ASSERT_GE(compute_bound, 3);
  EXPECT_NEAR(bf16->efficiency / eff, 1.0, 4 * sigma / std::sqrt(compute_bound));
  EXPECT_EQ(bf16->fit->quality.points, 7);
  EXPECT_FALSE(k.compute_for(rc::DType::Fp8));
}

TEST(Calibrate, PeerCopyAndSweepCsvs)
{
  TempDir dir("peer");
  // NVLink copies: 6 us + size / 370 GB/s, exact.
  std::string peer = csv_head("peer_copy") +
                     "src,dst,p2p_access,native_atomics,link_kind,size_bytes,time_us,GBps,time_min_us,time_max_us,"
                     "iters\n";
  for (double s = 8; s <= (1 << 30); s *= 4)
    peer += fmt::format("0,1,1,1,nvlink,{},{},{},0,0,20\n", s, (6e-6 + s / 370e9) * 1e6, 0.0);
  peer += "# complete: true\n";
  // nccl_sweep: all_gather Ring/LL128 on 8 GPUs, 12 us + S (7/8) / 350 GB/s.
  std::string sweep = csv_head("nccl_sweep") + "# intra_node_link: nvlink\n" +
                      "collective,algorithm,protocol,nranks,nodes,size_bytes,count,type,redop,root,time_us,algbw_GBps,"
                      "busbw_GBps,wrong,time_min_us,time_max_us,time_stddev_us,iters\n";
  for (double s = 1024; s <= (1 << 30); s *= 8)
    sweep += fmt::format("all_gather,Ring,LL128,8,1,{},{},float,none,-1,{},0,0,0,0,0,0,20\n", s, s / 4,
                         (12e-6 + s * 7 / 8 / 350e9) * 1e6);
  sweep += "# note: algorithm NVLS protocol LL128: NCCL refused (invalid usage)\n# complete: true\n";
  const auto r = rc::calibrate({dir.write("peer.csv", peer), dir.write("sweep.csv", sweep)}, {});
  const auto* nv = r.profile.link(rc::LinkKind::NvLink);
  ASSERT_NE(nv, nullptr);
  EXPECT_NEAR(nv->latency.seconds(), 6e-6, 6e-6 * 1e-5);
  EXPECT_NEAR(nv->bandwidth.bytes_per_sec(), 370e9, 370e9 * 1e-5);
  ASSERT_EQ(r.profile.collectives.size(), 1u);
  const auto& ag = r.profile.collectives[0];
  EXPECT_EQ(ag.algorithm, Algorithm::Ring);
  EXPECT_EQ(ag.protocol, Protocol::LL128);
  EXPECT_NEAR(ag.pieces.back().busbw.bytes_per_sec(), 350e9, 350e9 * 1e-5);
  EXPECT_NEAR(ag.pieces.front().latency.seconds(), 12e-6, 12e-6 * 1e-5);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("NVLS"), std::string::npos);
}

TEST(Calibrate, UnknownGpuUsesTheBestMeasuredRateAsPeak)
{
  TempDir dir("unknown");
  std::string gemm = csv_head("gemm_bench", "Future GPU 9000") +
                     "dtype,m,n,k,flops,bytes,time_us,tflops,time_min_us,time_max_us,iters\n";
  for (int n : {4096, 8192, 16384}) {
    const double flops = 2.0 * n * n * n, bytes = 3.0 * n * n * 2.0;
    gemm += fmt::format("fp16,{},{},{},{},{},{},0,0,0,20\n", n, n, n, flops, bytes, (1e-6 + flops / 500e12) * 1e6);
  }
  gemm += "# complete: true\n";
  std::string mem =
      csv_head("mem_bench", "Future GPU 9000") + "kernel,bytes,time_us,GBps,time_min_us,time_max_us,iters\n";
  for (double b = 1 << 24; b <= (1u << 31); b *= 2)
    mem += fmt::format("triad,{},{},0,0,0,20\n", b, (1e-6 + b / 2000e9) * 1e6);
  mem += "# complete: true\n";
  const auto p = rc::calibrate({dir.write("g.csv", gemm), dir.write("m.csv", mem)}, {}).profile;
  const auto& k = *p.kernel;
  EXPECT_NE(k.memory_bandwidth_source.find("no datasheet"), std::string::npos);
  EXPECT_NEAR(k.memory_efficiency, 1.0, 1e-3);
  const auto* fp16 = k.compute_for(rc::DType::Fp16);
  ASSERT_NE(fp16, nullptr);
  EXPECT_NE(fp16->peak_source.find("no datasheet"), std::string::npos);
  // Peak = the best rate measured (the largest GEMM, where the 1 us matters least); the fitted slope gives 500.
  const double n = 16384, flops = 2 * n * n * n;
  EXPECT_NEAR(fp16->peak_flops, flops / (1e-6 + flops / 500e12), fp16->peak_flops * 1e-5);
  EXPECT_NEAR(fp16->efficiency * fp16->peak_flops, 500e12, 500e12 * 1e-3);
}

TEST(Calibrate, MixedGpuModelsAcrossFilesAreRefused)
{
  InputError e({}, "", "");
  const auto what =
      run_error({data("nccl_tests_2.17_all_reduce_h200.log"), data("nccl_tests_2.13_all_reduce_h100_ring.log")}, &e);
  EXPECT_NE(what.find("different GPU models"), std::string::npos) << what;
  EXPECT_NE(what.find("NVIDIA H200"), std::string::npos) << what;
  EXPECT_NE(what.find("NVIDIA H100 80GB HBM3"), std::string::npos) << what;
  EXPECT_EQ(e.where().file, data("nccl_tests_2.13_all_reduce_h100_ring.log"));
  EXPECT_FALSE(e.fix().empty());
}

TEST(Calibrate, MixedNcclVersionsAreRefused)
{
  TempDir dir("versions");
  std::string log = rc::read_text_file(data("nccl_tests_2.17_sendrecv_h200_2nodes.log"));
  const std::string from = "nccl-library=22707";
  log.replace(log.find(from), from.size(), "nccl-library=22803");
  const auto what = run_error({data("nccl_tests_2.17_all_reduce_h200.log"), dir.write("sendrecv_perf.log", log)});
  EXPECT_NE(what.find("different NCCL versions"), std::string::npos) << what;
  EXPECT_NE(what.find("2.28.3"), std::string::npos) << what;
}

TEST(Calibrate, TooFewSizesAreRefusedWithTheNumberNeeded)
{
  TempDir dir("few");
  const std::string text = "#  Rank  0 Group  0 Pid 1 on n device  0 [0x07] NVIDIA H200\n"
                           "#  Rank  1 Group  0 Pid 1 on n device  1 [0x0f] NVIDIA H200\n"
                           "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
                           "time   algbw   busbw #wrong\n"
                           "     1048576        262144     float     sum      -1    20.97   50.00   50.00      0    "
                           "20.97   50.00   50.00      0\n"
                           "     2097152        524288     float     sum      -1    41.94   50.00   50.00      0    "
                           "41.94   50.00   50.00      0\n"
                           "# Avg bus bandwidth : 50\n";
  const auto path = dir.write("all_reduce_perf.log", text);
  InputError e({}, "", "");
  const auto what = run_error({path}, &e);
  EXPECT_NE(what.find("at least 3 distinct sizes"), std::string::npos) << what;
  EXPECT_NE(what.find("got 2"), std::string::npos) << what;
  EXPECT_EQ(e.where().file, path);
}

TEST(Calibrate, BadLogsStopTheCalibration)
{
  for (const char* bad : {"bad_truncated_no_footer.log", "bad_partial_row.log", "bad_wrong_results.log",
                          "bad_mixed_gpus.log", "bad_no_rows.log"}) {
    InputError e({}, "", "");
    run_error({data("nccl_tests_2.17_all_reduce_h200.log"), data(bad)}, &e);
    EXPECT_EQ(e.where().file, data(bad)) << bad;
    EXPECT_GT(e.where().line, 0) << bad;
  }
}

TEST(Calibrate, BadCsvsStopTheCalibration)
{
  TempDir dir("badcsv");
  const std::string header = "kernel,bytes,time_us,GBps,time_min_us,time_max_us,iters\n";
  const std::string rows = "memcpy,1048576,10,100,10,10,20\nmemcpy,2097152,15,140,15,15,20\n";
  // Cut short: no "# complete: true".
  InputError e({}, "", "");
  auto what = run_error({dir.write("cut.csv", csv_head("mem_bench") + header + rows)}, &e);
  EXPECT_NE(what.find("complete"), std::string::npos) << what;
  // A row with a missing cell.
  what =
      run_error({dir.write("short.csv", csv_head("mem_bench") + header + "memcpy,1048576,10\n# complete: true\n")}, &e);
  EXPECT_EQ(e.where().line, 11); // 9 metadata lines (csv_head), the column header on line 10, the short row on 11
  // A sweep row with wrong results.
  what = run_error({dir.write("sweep.csv", csv_head("nccl_sweep") +
                                               "collective,algorithm,protocol,nranks,nodes,size_bytes,count,type,redop,"
                                               "root,time_us,algbw_GBps,busbw_GBps,wrong,time_min_us,time_max_us,"
                                               "time_stddev_us,iters\n"
                                               "all_reduce,Ring,Simple,8,1,1024,256,float,sum,-1,20,0,0,3,0,0,0,20\n"
                                               "# complete: true\n")},
                   &e);
  EXPECT_NE(what.find("wrong"), std::string::npos) << what;
  // gemm_bench alone cannot make a kernel model.
  what = run_error({dir.write("g.csv", csv_head("gemm_bench") +
                                           "dtype,m,n,k,flops,bytes,time_us,tflops,time_min_us,time_max_us,iters\n"
                                           "bf16,8192,8192,8192,1e12,1e8,1500,0,0,0,20\n# complete: true\n")});
  EXPECT_NE(what.find("both gemm_bench and mem_bench"), std::string::npos) << what;
}

TEST(Calibrate, OneGpuPeerCopyIsANoteNotAFit)
{
  TempDir dir("onegpu");
  const std::string peer = csv_head("peer_copy") + "# note: only 1 visible GPU: no peer to copy to\n" +
                           "src,dst,p2p_access,native_atomics,link_kind,size_bytes,time_us,GBps,time_min_us,"
                           "time_max_us,iters\n# complete: true\n";
  const auto path = dir.write("peer.csv", peer);
  // Alone it gives nothing to fit.
  EXPECT_NE(run_error({path}).find("nothing that can be fitted"), std::string::npos);
  const auto r = rc::calibrate({path, data("nccl_tests_2.17_all_reduce_h200.log")}, {});
  EXPECT_EQ(r.profile.link(rc::LinkKind::NvLink), nullptr);
  ASSERT_FALSE(r.notes.empty());
}

TEST(Calibrate, CudaProgramsWriteTheColumnsCalibrateReads)
{
  // The programs in calibration/cuda cannot run here (no GPU); their CSV header lines are read from their source
  // and must hold every column calibrate reads from that program's files.
  struct Contract {
    const char* file;
    std::vector<std::string> columns;
  };
  const std::vector<Contract> contracts{
      {"nccl_sweep.cu", {"collective", "algorithm", "protocol", "nranks", "nodes", "size_bytes", "time_us", "wrong"}},
      {"peer_copy.cu", {"link_kind", "size_bytes", "time_us"}},
      {"gemm_bench.cu", {"dtype", "flops", "bytes", "time_us", "wrong"}},
      {"mem_bench.cu", {"kernel", "bytes", "time_us"}},
  };
  for (const auto& c : contracts) {
    SCOPED_TRACE(c.file);
    const std::string src = rc::read_text_file(std::string(RAILYARD_SOURCE_DIR) + "/calibration/cuda/" + c.file);
    // The header is the string literal(s) right after `w.header(` or in `kHeader = `.
    auto at = src.find("kHeader = ");
    if (at == std::string::npos) at = src.find("w.header(");
    ASSERT_NE(at, std::string::npos);
    const auto end = src.find(';', at);
    std::string header;
    bool in = false;
    for (size_t i = at; i < end; ++i) {
      if (src[i] == '"') {
        in = !in;
        continue;
      }
      if (in) header += src[i];
    }
    std::vector<std::string> cols;
    std::stringstream ss(header);
    std::string col;
    while (std::getline(ss, col, ','))
      cols.push_back(col);
    for (const auto& need : c.columns)
      EXPECT_NE(std::find(cols.begin(), cols.end(), need), cols.end()) << need << " not in: " << header;
    const std::string program = std::string(c.file).substr(0, std::string(c.file).find('.'));
    EXPECT_NE(src.find('"' + program + '"'), std::string::npos) << "program name " << program;
  }
}

// What the CUDA programs write now (calibration/cuda/common.hpp: RFC 4180, CRLF line ends, fields quoted when they
// hold a comma or a quote) reads back as the same table as the plain form: the quotes are not part of the values.
TEST(CalibrationCsv, CrLfAndQuotedFieldsReadAsThePlainForm)
{
  const std::string header = "kernel,bytes,time_us,GBps,time_min_us,time_max_us,iters\n";
  const std::string plain = csv_head("mem_bench") + "# note: launch, then copies\n" + header +
                            "launch,0,2.5,0,2.5,2.5,1000\nmemcpy,1048576,10.5,99.8,10.4,10.6,20\n# complete: true\n";
  std::string rfc =
      csv_head("mem_bench") + "# note: launch, then copies\n" + header +
      "\"launch\",0,2.5,0,2.5,2.5,1000\nmemcpy,\"1048576\",10.5,99.8,10.4,10.6,\"20\"\n# complete: true\n";
  std::string crlf;
  for (char c : rfc)
    crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  const auto a = rc::parse_calibration_csv(plain, "plain.csv");
  const auto b = rc::parse_calibration_csv(crlf, "rfc.csv");
  EXPECT_EQ(b.columns, a.columns);
  ASSERT_EQ(b.rows.size(), 2u);
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    EXPECT_EQ(b.rows[i].cells, a.rows[i].cells) << "row " << i;
    EXPECT_EQ(b.rows[i].line, a.rows[i].line) << "row " << i;
  }
  EXPECT_EQ(b.text(b.rows[0], "kernel"), "launch");
  EXPECT_EQ(b.integer(b.rows[1], "bytes"), 1048576);
  EXPECT_EQ(b.notes, std::vector<std::string>{"launch, then copies"});
  EXPECT_EQ(b.meta_or("gpu_model"), "NVIDIA H200");
  // A quote left open is refused with its line: 11, after nine metadata lines and the header.
  try {
    (void)rc::parse_calibration_csv(csv_head("mem_bench") + header + "\"launch,0,2.5,0,2.5,2.5,1000\n", "open.csv");
    FAIL() << "an unclosed quote";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "open.csv");
    EXPECT_EQ(e.where().line, 11);
  }
}

// Rows with a negative or non-finite size or time are dropped with a note naming the file and line (they were
// either refused, a negative time in a log, or skipped without a word, a negative time in a CSV); a value no double
// holds, or a size above 2^53 B, refuses the file at its line.
TEST(CalibrateDroppedRows, CsvRowsWithNegativeOrNanTimesAreDroppedWithTheirLine)
{
  TempDir dir("dropped_csv");
  // The sweep of PeerCopyAndSweepCsvs (12 us + S (7/8) / 350 GB/s, sizes 1 KiB to 1 GiB by 8) plus two broken rows.
  std::string sweep = csv_head("nccl_sweep") + "# intra_node_link: nvlink\n" +
                      "collective,algorithm,protocol,nranks,nodes,size_bytes,count,type,redop,root,time_us,algbw_GBps,"
                      "busbw_GBps,wrong,time_min_us,time_max_us,time_stddev_us,iters\n";
  for (double s = 1024; s <= (1 << 30); s *= 8)
    sweep += fmt::format("all_gather,Ring,LL128,8,1,{},{},float,none,-1,{},0,0,0,0,0,0,20\n", s, s / 4,
                         (12e-6 + s * 7 / 8 / 350e9) * 1e6);
  sweep += "all_gather,Ring,LL128,8,1,4096,1024,float,none,-1,-3.5,0,0,0,0,0,0,20\n";
  sweep += "all_gather,Ring,LL128,8,1,8192,2048,float,none,-1,nan,0,0,0,0,0,0,20\n# complete: true\n";
  // 9 lines of csv_head, the intra_node_link line, the column header, 7 sizes (1 KiB .. 1 GiB): lines 19 and 20.
  const std::string path = dir.write("sweep.csv", sweep);
  const auto r = rc::calibrate({path}, {});
  std::vector<std::string> dropped;
  for (const auto& n : r.notes)
    if (n.find("row dropped") != std::string::npos) dropped.push_back(n);
  ASSERT_EQ(dropped.size(), 2u);
  EXPECT_EQ(dropped[0], path + ":19: row dropped: time_us is -3.5 us, negative");
  EXPECT_EQ(dropped[1], path + ":20: row dropped: time_us is nan, not a finite number");
  // The fit is the clean rows' alone.
  EXPECT_NEAR(r.profile.collectives.at(0).pieces.back().busbw.bytes_per_sec(), 350e9, 350e9 * 1e-5);
}

TEST(CalibrateDroppedRows, LogRowsDroppedAreListedAndUnrepresentableSizesRefused)
{
  TempDir dir("dropped_log");
  std::ifstream in(data("nccl_tests_2.17_all_reduce_h200.log"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string log = ss.str();
  const auto at = log.find("15.82");
  ASSERT_NE(at, std::string::npos);
  const std::string negative = std::string(log).replace(at, 5, "-15.8");
  const rc::NcclTestsLog parsed = rc::parse_nccl_tests_text(negative, "neg.log");
  // The log's 32 sizes (8 B to 16 GiB by 2), the 8 B row dropped; it is on line 19 (18 header lines).
  ASSERT_EQ(parsed.dropped.size(), 1u);
  EXPECT_EQ(parsed.dropped[0].line, 19);
  EXPECT_EQ(parsed.dropped[0].reason, "out-of-place time is -15.8 us, negative");
  EXPECT_EQ(parsed.rows.size(), 31u);
  EXPECT_EQ(parsed.rows.front().size_bytes, 16);
  // A size of 1e400 in place of 8: refused at its line, not skipped as a line that is not a row.
  const auto row = log.find("           8             2");
  ASSERT_NE(row, std::string::npos);
  const std::string huge = std::string(log).replace(row, 26, "       1e400             2");
  InputError e({}, "", "");
  try {
    (void)rc::parse_nccl_tests_text(huge, "huge.log");
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& err) {
    e = err;
  }
  EXPECT_EQ(e.where().line, 19);
  EXPECT_EQ(e.where().field, "size");
  EXPECT_NE(e.rule().find("cannot be represented"), std::string::npos) << e.what();
}

// Found by tests/fuzz (fuzz_calibrate): a sendrecv log whose largest sizes' times barely grow (rows cut and pasted
// into one another) fitted a link bandwidth of 1.1e15 B/s, above the 1e15 B/s a profile may hold; the profile writer
// then refused its own input with std::invalid_argument (exit 3). calibrate refuses it, naming the log.
TEST(CalibrateRanges, AFittedBandwidthBeyondItsRangeIsRefusedNamingTheLog)
{
  const std::string log =
      std::string(RAILYARD_SOURCE_DIR) + "/tests/fuzz/corpus/calibrate/link_bandwidth_beyond_1e15.log";
  try {
    (void)rc::calibrate({log}, {});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().file.find("link_bandwidth_beyond_1e15.log"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1e+15 B/s"), std::string::npos) << e.what();
  }
}
