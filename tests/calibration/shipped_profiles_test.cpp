// The profiles shipped in calibration/profiles: they read back valid, their fitted entries are what
// `railyard calibrate` gives from their listed inputs today, and they reproduce the published measurements they
// cite within the error they record.
#include "railyard/calibration/calibrate.hpp"
#include "railyard/calibration/datasheets.hpp"
#include "railyard/calibration/digest.hpp"
#include "railyard/calibration/profile.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace rc = railyard::calibration;
namespace fs = std::filesystem;
using railyard::Bytes;
using railyard::models::Algorithm;
using railyard::models::CollectiveKind;
using railyard::models::Protocol;

namespace {

const std::string kRoot = RAILYARD_SOURCE_DIR;

std::vector<std::string> shipped()
{
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kRoot + "/calibration/profiles"))
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

rc::Profile load(const std::string& name)
{
  return rc::read_profile(kRoot + "/calibration/profiles/" + name);
}

// The fitted entry's own recorded worst error, plus the rounding of the recorded parameters (6 significant digits)
// and of the recorded error (4 significant digits).
double allowed(const rc::CollectiveFit& c)
{
  return c.fit->quality.max_rel_error * (1 + 1e-3) + 1e-5;
}

} // namespace

TEST(ShippedProfiles, AllReadAndCoverLinksAndKernels)
{
  const auto files = shipped();
  ASSERT_EQ(files.size(), 6u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    const auto p = rc::read_profile(f);
    // Inside a node NVIDIA's GPUs meet over NVLink, AMD's MI300X over xGMI: one of the two, and PCIe and the network.
    EXPECT_NE((p.link(rc::LinkKind::NvLink) != nullptr) + (p.link(rc::LinkKind::Xgmi) != nullptr), 0);
    for (auto k : {rc::LinkKind::Pcie, rc::LinkKind::Network})
      EXPECT_NE(p.link(k), nullptr) << rc::to_string(k);
    ASSERT_TRUE(p.kernel);
    EXPECT_NE(p.kernel->compute_for(rc::DType::Bf16), nullptr);
    EXPECT_FALSE(p.collectives.empty());
    EXPECT_EQ(p.gpus_per_node, 8);
    EXPECT_EQ(p.system + ".yaml", fs::path(f).filename().string());
  }
}

TEST(ShippedProfiles, KernelPeaksMatchTheDatasheetTable)
{
  // Two transcriptions of the same datasheets (calibration/src/datasheets.cpp and the YAML files) must agree.
  for (const auto& f : shipped()) {
    SCOPED_TRACE(f);
    const auto p = rc::read_profile(f);
    const auto* sheet = rc::find_datasheet(p.gpu_model);
    ASSERT_NE(sheet, nullptr) << p.gpu_model;
    EXPECT_EQ(p.kernel->memory_bandwidth.bytes_per_sec(), sheet->memory_bandwidth_GBps * 1e9);
    for (const auto& c : p.kernel->compute)
      EXPECT_NEAR(c.peak_flops, sheet->peak_tflops(c.dtype) * 1e12, 1e6) << rc::to_string(c.dtype);
  }
}

TEST(ShippedProfiles, FittedEntriesAreWhatCalibrateGivesToday)
{
  for (const auto& f : shipped()) {
    const auto p = rc::read_profile(f);
    for (const auto& in : p.inputs) {
      SCOPED_TRACE(f + ": " + in.path);
      const std::string text = rc::read_text_file(kRoot + "/" + in.path);
      EXPECT_EQ(in.bytes, text.size());
      EXPECT_EQ(in.sha256, rc::sha256_hex(text)); // the source was not edited without refitting
    }
    for (const auto& c : p.collectives) {
      if (!c.fit) continue;
      SCOPED_TRACE(f + ": " + c.source);
      std::vector<std::string> inputs;
      for (const auto& i : c.fit->inputs)
        inputs.push_back(kRoot + "/" + i);
      const auto again = rc::calibrate(inputs, {}).profile;
      const auto* same = again.collective(c.collective, c.algorithm, c.protocol, c.link, c.nranks);
      ASSERT_NE(same, nullptr);
      ASSERT_EQ(same->pieces.size(), c.pieces.size());
      for (size_t i = 0; i < c.pieces.size(); ++i) {
        EXPECT_EQ(same->pieces[i].from.bytes(), c.pieces[i].from.bytes());
        EXPECT_EQ(same->pieces[i].latency.seconds(), c.pieces[i].latency.seconds());
        EXPECT_EQ(same->pieces[i].busbw.bytes_per_sec(), c.pieces[i].busbw.bytes_per_sec());
      }
      EXPECT_EQ(same->fit->quality.max_rel_error, c.fit->quality.max_rel_error);
    }
  }
}

TEST(ShippedProfiles, A100ReproducesThePublishedAllReduceTimes)
{
  // 8x A100 SXM, one node, all_reduce (stas00/ml-engineering, listed in /work/shared/validation/published.md).
  const std::array<std::pair<double, double>, 5> published{{{32768.0, 43.8e-6},
                                                            {1048576.0, 101.9e-6},
                                                            {67108864.0, 684.6e-6},
                                                            {1073741824.0, 8.20e-3},
                                                            {17179869184.0, 128e-3}}};
  const auto p = load("dgx_a100_ib_hdr.yaml");
  const auto* c = p.collective(CollectiveKind::AllReduce, std::nullopt, std::nullopt, rc::LinkKind::NvLink, 8);
  ASSERT_NE(c, nullptr);
  double worst = 0;
  for (const auto& [size, t] : published) {
    const double predicted = c->time(Bytes(size), 8).seconds();
    worst = std::max(worst, std::fabs(predicted - t) / t);
  }
  EXPECT_LE(worst, allowed(*c));
  // The largest size carries the bandwidth: 16 GiB in 128 ms is busbw 2*7/8 * 2^34 / 0.128 = 234.9 GB/s, within
  // the fit's error of the profile's last piece.
  EXPECT_NEAR(c->pieces.back().busbw.bytes_per_sec() / (1.75 * 17179869184.0 / 0.128), 1.0, allowed(*c));
}

TEST(ShippedProfiles, H200ReproducesThePublishedAllReduceSweep)
{
  // busbw column of stas00/ml-engineering network/benchmarks/results/all-reduce-8xH200.md (8x H200, NCCL 2.27.7),
  // 32 KiB to 16 GiB by factors of 2; time = size * 2*(8-1)/8 / busbw.
  const std::array<double, 20> busbw_GBps{1.44,   2.93,   5.73,   11.74,  23.94,  39.93,  64.53,
                                          107.16, 155.53, 219.89, 275.84, 346.51, 401.93, 436.15,
                                          450.29, 463.58, 469.17, 473.10, 477.45, 482.26};
  for (const char* name : {"hgx_h200_ib_ndr.yaml", "hgx_h200_roce_400g.yaml"}) {
    SCOPED_TRACE(name);
    const auto p = load(name);
    const auto* c = p.collective(CollectiveKind::AllReduce, std::nullopt, std::nullopt, rc::LinkKind::NvLink, 8);
    ASSERT_NE(c, nullptr);
    double size = 32768;
    for (double bw : busbw_GBps) {
      const double t = size * 1.75 / (bw * 1e9);
      EXPECT_LE(std::fabs(c->time(Bytes(size), 8).seconds() - t) / t, allowed(*c)) << size;
      size *= 2;
    }
    // Published single values at 16 GiB (NCCL 2.27.7): NVLS 480.0, Ring 367.2, all_gather 361.4, reduce_scatter 362.9.
    const auto busbw = [&](CollectiveKind k, Algorithm a) {
      return p.collective(k, a, Protocol::Simple, rc::LinkKind::NvLink, 8)->pieces.back().busbw.bytes_per_sec();
    };
    EXPECT_EQ(busbw(CollectiveKind::AllReduce, Algorithm::Nvls), 480.0e9);
    EXPECT_EQ(busbw(CollectiveKind::AllReduce, Algorithm::Ring), 367.2e9);
    EXPECT_EQ(busbw(CollectiveKind::AllGather, Algorithm::Ring), 361.4e9);
    EXPECT_EQ(busbw(CollectiveKind::ReduceScatter, Algorithm::Ring), 362.9e9);
  }
}

TEST(ShippedProfiles, H100NvlsScalesWithTheGpusEngaged)
{
  // NVIDIA/nccl issue 1455: NVLS all_reduce busbw 420 / 440 / 460 / 480 GB/s on 5 / 6 / 7 / 8 H100s (2-4 GiB).
  const auto p = load("dgx_h100_ib_ndr.yaml");
  const std::array<std::pair<int, double>, 4> published{{{5, 420e9}, {6, 440e9}, {7, 460e9}, {8, 480e9}}};
  for (const auto& [n, bw] : published) {
    const auto* c = p.collective(CollectiveKind::AllReduce, Algorithm::Nvls, Protocol::Simple, rc::LinkKind::NvLink, n);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->nranks, n);
    EXPECT_EQ(c->pieces.back().busbw.bytes_per_sec(), bw);
  }
  // Ring on NVLink, and one ConnectX-7 through NCCL: ~370 and 46-49 GB/s (NVIDIA/nccl-tests issues 212, 267, 290).
  EXPECT_EQ(p.collective(CollectiveKind::AllReduce, Algorithm::Ring, Protocol::Simple, rc::LinkKind::NvLink, 8)
                ->pieces.back()
                .busbw.bytes_per_sec(),
            370e9);
  const double net = p.link(rc::LinkKind::Network)->bandwidth.bytes_per_sec();
  EXPECT_GE(net, 46e9);
  EXPECT_LE(net, 49e9);
}

// The Megatron-DeepSpeed profile is dgx_a100_ib_hdr plus the framework block railyard calibrate --steps fitted (and
// the measured steps it was fitted to among its inputs): nothing else of the machine may drift between the two.
TEST(ShippedProfiles, FrameworkProfileIsTheA100ProfilePlusItsFrameworkBlock)
{
  rc::Profile fw = load("dgx_a100_megatron_deepspeed.yaml");
  const rc::Profile base = load("dgx_a100_ib_hdr.yaml");
  ASSERT_TRUE(fw.framework);
  EXPECT_FALSE(base.framework);
  ASSERT_TRUE(fw.framework->fit);
  ASSERT_EQ(fw.framework->fit->inputs.size(), 1U);
  const std::string steps = fw.framework->fit->inputs[0];
  EXPECT_TRUE(fs::exists(kRoot + "/" + steps)) << steps;
  EXPECT_GT(fw.framework->launch.seconds(), 0);
  fw.framework.reset();
  std::erase_if(fw.inputs, [&](const auto& i) { return i.path == steps; });
  fw.file = base.file;
  fw.system = base.system;
  fw.description = base.description;
  fw.created_by = base.created_by;
  EXPECT_EQ(rc::profile_to_yaml(fw), rc::profile_to_yaml(base));
}

TEST(ShippedProfiles, Mi300xPeaksFollowFromTheChip)
{
  // AMD Instinct MI300X data sheet: 304 compute units at 2,100 MHz peak engine clock; a CDNA 3 CU's matrix cores do
  // 2,048 dense FLOP per clock in fp16/bf16 (the ROCm blog "Understanding Peak, Max-Achievable & Delivered FLOPs",
  // Table 1), twice that in fp8, half in tf32, an eighth in fp32. 8 HBM3 stacks of 1,024 bits at 5.2 Gb/s per pin.
  const double clock_Hz = 2100e6;
  const double cus = 304;
  const double fp16_per_cu_clock = 2048;
  const auto p = load("mi300x_ib_ndr.yaml");
  EXPECT_EQ(p.gpu_model, "AMD Instinct MI300X");
  EXPECT_EQ(p.collective_library, rc::CollectiveLibrary::Rccl);
  ASSERT_TRUE(p.kernel);
  const std::array<std::pair<rc::DType, double>, 5> per_clock{{{rc::DType::Bf16, fp16_per_cu_clock},
                                                               {rc::DType::Fp16, fp16_per_cu_clock},
                                                               {rc::DType::Fp8, 2 * fp16_per_cu_clock},
                                                               {rc::DType::Tf32, fp16_per_cu_clock / 2},
                                                               {rc::DType::Fp32, fp16_per_cu_clock / 8}}};
  for (const auto& [dtype, flop] : per_clock) {
    const auto* c = p.kernel->compute_for(dtype);
    ASSERT_NE(c, nullptr) << rc::to_string(dtype);
    // The data sheet prints one decimal of TFLOPS: 1,307.4 for 1,307.3664.
    EXPECT_NEAR(c->peak_flops, cus * clock_Hz * flop, 0.05e12) << rc::to_string(dtype);
  }
  // 5.3 TB/s is 8 x 1,024 bit x 5.2 Gb/s = 5.32 TB/s as the data sheet rounds it.
  EXPECT_NEAR(p.kernel->memory_bandwidth.bytes_per_sec(), 8 * 1024 * 5.2e9 / 8, 0.025e12);
  // xGMI: 128 GB/s per link both ways is 64 GB/s each way; the measured pair rate stays under it, and 7 links (one
  // to each peer of the 8-GPU mesh) give the datasheet table's 448 GB/s per GPU.
  const auto* sheet = rc::find_datasheet(p.gpu_model);
  ASSERT_NE(sheet, nullptr);
  EXPECT_EQ(sheet->scale_up_GBps_per_direction, (8 - 1) * 128.0 / 2);
  EXPECT_EQ(rc::find_datasheet("AMD Instinct MI300X VF"), sheet); // Azure's SR-IOV function of the same part
  const auto* xgmi = p.link(rc::LinkKind::Xgmi);
  ASSERT_NE(xgmi, nullptr);
  EXPECT_GT(xgmi->bandwidth.bytes_per_sec(), 0.7 * 64e9); // TransferBench: 45.1-47.2 GB/s per link
  EXPECT_LT(xgmi->bandwidth.bytes_per_sec(), 64e9);
  EXPECT_EQ(p.link(rc::LinkKind::NvLink), nullptr);
  // 192 GiB of HBM3 (8 stacks of 24 GiB) less the 16 MiB rocm-smi does not count: 206141652992 B.
  EXPECT_EQ(sheet->memory_MiB, 8 * 24 * 1024 - 16);
  EXPECT_EQ(sheet->memory_MiB * 1024 * 1024, 206141652992.0);
}

TEST(ShippedProfiles, Mi300xReproducesThePublishedAllReduceSweep)
{
  // busbw column of the first all_reduce_perf run in the ROCm blog "Understanding RCCL Bandwidth and xGMI Performance
  // on AMD Instinct MI300X" (8x MI300X, RCCL 2.22.3), 16 KiB to 16 GiB by factors of 2 (below, busbw is printed as
  // 0.0x GB/s and its rounding says nothing); time = size * 2*(8-1)/8 / busbw.
  const std::array<double, 21> busbw_GBps{2.12,   4.31,   8.33,   16.22,  27.20,  37.59,  66.93,
                                          105.43, 141.91, 175.43, 197.26, 240.57, 273.66, 294.55,
                                          305.62, 310.46, 314.72, 316.04, 317.40, 317.96, 318.98};
  const auto p = load("mi300x_ib_ndr.yaml");
  const auto* c = p.collective(CollectiveKind::AllReduce, std::nullopt, std::nullopt, rc::LinkKind::Xgmi, 8);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->nodes, 1);
  double size = 16384;
  for (double bw : busbw_GBps) {
    const double t = size * 1.75 / (bw * 1e9);
    // The fit's own worst error, plus the printed busbw's rounding (half of its last digit).
    EXPECT_LE(std::fabs(c->time(Bytes(size), 8).seconds() - t) / t, allowed(*c) + 0.005 / bw) << size;
    size *= 2;
  }
  // The largest sizes carry the xGMI rate: 16 GiB at 318.98 GB/s busbw, within the fit's error of the last piece.
  EXPECT_NEAR(c->pieces.back().busbw.bytes_per_sec() / 318.98e9, 1.0, allowed(*c));
}
