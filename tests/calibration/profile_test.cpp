// Profile files: write -> read gives back the same numbers and the same bytes; the queries the simulator makes
// follow the formulas in profile.hpp; malformed files are refused with the line, the rule and the fix.
#include "railyard/calibration/profile.hpp"
#include "railyard/common/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include <unistd.h>

namespace rc = railyard::calibration;
namespace units = railyard::units;
using railyard::Bytes;
using railyard::InputError;
using railyard::models::Algorithm;
using railyard::models::CollectiveKind;
using railyard::models::Protocol;

namespace {

rc::Profile sample_profile()
{
  rc::Profile p;
  p.system = "test_system";
  p.description = "made in a test";
  p.created_by = "profile_test";
  p.gpu_model = "NVIDIA H200";
  p.gpu_model_source = "Rank lines of a.log";
  p.gpus_per_node = 8;
  p.gpus_per_node_source = "Rank lines of a.log";
  p.nccl_version = "2.27.7";
  p.nccl_version_source = "nccl-tests header of a.log";
  p.inputs = {{"a.log", 1234, std::string(64, 'a')}, {"b.csv", 99, std::string(64, '0')}};
  rc::LinkParams nv;
  nv.kind = rc::LinkKind::NvLink;
  nv.latency = units::us(2.5);
  nv.latency_source = "fit of b.csv";
  nv.bandwidth = units::GBps(389.3);
  nv.bandwidth_source = "fit of b.csv";
  nv.fit = rc::FitRecord{{20, 0.0123, 0.0456}, {"b.csv"}};
  rc::LinkParams net;
  net.kind = rc::LinkKind::Network;
  net.latency = units::us(4);
  net.latency_source = "assumption: NCCL tuning.cc";
  net.bandwidth = units::GBps(48);
  net.bandwidth_source = "NVIDIA/nccl-tests issue 267";
  p.links = {nv, net};

  rc::CollectiveFit ar;
  ar.collective = CollectiveKind::AllReduce;
  ar.link = rc::LinkKind::NvLink;
  ar.nranks = 8;
  ar.nodes = 1;
  ar.measured_min = Bytes(8);
  ar.measured_max = units::GiB(16);
  ar.source = "fitted from a.log";
  ar.fit = rc::FitRecord{{32, 0.02, 0.07}, {"a.log"}};
  ar.pieces = {
      {Bytes(0), units::us(16.25), railyard::BytesPerSec(std::numeric_limits<double>::infinity()), {8, 0.01, 0.02}},
      {Bytes(4096), units::us(20.5), units::GBps(3.75), {10, 0.02, 0.05}},
      {units::MiB(8), units::us(50), units::GBps(478.125), {14, 0.01, 0.03}}};
  rc::CollectiveFit ring = ar;
  ring.algorithm = Algorithm::Ring;
  ring.protocol = Protocol::Simple;
  ring.fit.reset();
  ring.source = "published: NVIDIA/nccl-tests issue 212";
  ring.pieces = {{Bytes(0), units::us(60), units::GBps(370), {}}};
  rc::CollectiveFit ring16 = ring;
  ring16.nranks = 16;
  ring16.nodes = 2;
  ring16.link = rc::LinkKind::Network;
  rc::CollectiveFit ring4 = ring;
  ring4.nranks = 4;
  ring4.pieces = {{Bytes(0), units::us(30), units::GBps(360), {}}};
  p.collectives = {ar, ring, ring16, ring4};

  rc::KernelModel k;
  k.launch_overhead = units::us(3.25);
  k.launch_overhead_source = "mem.csv";
  k.memory_bandwidth = units::GBps(4800);
  k.memory_bandwidth_source = "datasheet";
  k.memory_efficiency = 0.875;
  k.memory_efficiency_source = "fit";
  k.memory_fit = rc::FitRecord{{12, 0.05, 0.2}, {"b.csv"}};
  k.compute = {{rc::DType::Bf16, 989.4e12, "datasheet", 0.78, "fit", rc::FitRecord{{9, 0.03, 0.11}, {"b.csv"}}},
               {rc::DType::Fp8, 1978.9e12, "datasheet", 0.7, "assumption: 70%", std::nullopt}};
  k.gemm = rc::GemmTiling{256, 128, "NVIDIA matmul guide", 132, "H100 SXM5 datasheet", 0};
  p.kernel = k;
  return p;
}

void expect_same(const rc::Profile& a, const rc::Profile& b)
{
  EXPECT_EQ(a.system, b.system);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.gpu_model, b.gpu_model);
  EXPECT_EQ(a.gpus_per_node, b.gpus_per_node);
  EXPECT_EQ(a.nccl_version, b.nccl_version);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    EXPECT_EQ(a.inputs[i].path, b.inputs[i].path);
    EXPECT_EQ(a.inputs[i].bytes, b.inputs[i].bytes);
    EXPECT_EQ(a.inputs[i].sha256, b.inputs[i].sha256);
  }
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t i = 0; i < a.links.size(); ++i) {
    EXPECT_EQ(a.links[i].kind, b.links[i].kind);
    EXPECT_EQ(a.links[i].latency.seconds(), b.links[i].latency.seconds());
    EXPECT_EQ(a.links[i].bandwidth.bytes_per_sec(), b.links[i].bandwidth.bytes_per_sec());
    EXPECT_EQ(a.links[i].bandwidth_source, b.links[i].bandwidth_source);
    EXPECT_EQ(a.links[i].fit.has_value(), b.links[i].fit.has_value());
  }
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    const auto &x = a.collectives[i], &y = b.collectives[i];
    EXPECT_EQ(x.collective, y.collective);
    EXPECT_EQ(x.algorithm, y.algorithm);
    EXPECT_EQ(x.protocol, y.protocol);
    EXPECT_EQ(x.link, y.link);
    EXPECT_EQ(x.nranks, y.nranks);
    EXPECT_EQ(x.nodes, y.nodes);
    EXPECT_EQ(x.measured_max.bytes(), y.measured_max.bytes());
    ASSERT_EQ(x.pieces.size(), y.pieces.size());
    for (size_t j = 0; j < x.pieces.size(); ++j) {
      EXPECT_EQ(x.pieces[j].from.bytes(), y.pieces[j].from.bytes());
      EXPECT_EQ(x.pieces[j].latency.seconds(), y.pieces[j].latency.seconds());
      EXPECT_EQ(x.pieces[j].busbw.bytes_per_sec(), y.pieces[j].busbw.bytes_per_sec());
      EXPECT_EQ(x.pieces[j].quality.max_rel_error, y.pieces[j].quality.max_rel_error);
    }
    if (x.fit) {
      ASSERT_TRUE(y.fit);
      EXPECT_EQ(x.fit->quality.rms_rel_error, y.fit->quality.rms_rel_error);
      EXPECT_EQ(x.fit->inputs, y.fit->inputs);
    }
  }
  ASSERT_TRUE(a.kernel && b.kernel);
  EXPECT_EQ(a.kernel->launch_overhead.seconds(), b.kernel->launch_overhead.seconds());
  EXPECT_EQ(a.kernel->memory_efficiency, b.kernel->memory_efficiency);
  ASSERT_EQ(a.kernel->compute.size(), b.kernel->compute.size());
  for (size_t i = 0; i < a.kernel->compute.size(); ++i) {
    EXPECT_EQ(a.kernel->compute[i].dtype, b.kernel->compute[i].dtype);
    EXPECT_EQ(a.kernel->compute[i].peak_flops, b.kernel->compute[i].peak_flops);
    EXPECT_EQ(a.kernel->compute[i].efficiency, b.kernel->compute[i].efficiency);
    EXPECT_EQ(a.kernel->compute[i].efficiency_source, b.kernel->compute[i].efficiency_source);
  }
  ASSERT_EQ(a.kernel->gemm.has_value(), b.kernel->gemm.has_value());
  if (a.kernel->gemm) {
    EXPECT_EQ(a.kernel->gemm->tile_m, b.kernel->gemm->tile_m);
    EXPECT_EQ(a.kernel->gemm->tile_n, b.kernel->gemm->tile_n);
    EXPECT_EQ(a.kernel->gemm->sms, b.kernel->gemm->sms);
    EXPECT_EQ(a.kernel->gemm->tile_source, b.kernel->gemm->tile_source);
    EXPECT_EQ(a.kernel->gemm->sms_source, b.kernel->gemm->sms_source);
  }
}

// 1-based line of the nth (1-based) line that contains `needle`.
int line_of(const std::string& text, const std::string& needle, int nth = 1)
{
  std::istringstream in(text);
  std::string l;
  int n = 0;
  while (std::getline(in, l)) {
    ++n;
    if (l.find(needle) != std::string::npos && --nth == 0) return n;
  }
  return -1;
}

// A valid minimal profile; the bad-input tests change one thing in it.
const std::string kMinimal = R"(railyard_profile: 1
system: tiny
gpu:
  model: NVIDIA H100 80GB HBM3
  per_node: 8
  source: {model: datasheet, per_node: datasheet}
links:
  - kind: nvlink
    latency_us: 0.6
    bandwidth_GBps: 450
    source: {latency_us: "assumption: NCCL tuning.cc hwLat", bandwidth_GBps: "H100 datasheet"}
collectives:
  - collective: all_reduce
    algorithm: Ring
    protocol: Simple
    link: nvlink
    nranks: 8
    nodes: 1
    source: NVIDIA/nccl-tests issue 212
    pieces:
      - {from_bytes: 0, latency_us: 60, busbw_GBps: 370}
)";

void expect_error_at(const std::string& text, int line, const std::string& rule_part)
{
  try {
    (void)rc::parse_profile(text, "bad.yaml");
    FAIL() << "expected an InputError for:\n" << text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "bad.yaml");
    EXPECT_EQ(e.where().line, line) << e.what();
    EXPECT_NE(std::string(e.what()).find(rule_part), std::string::npos) << e.what();
    EXPECT_FALSE(e.fix().empty()) << e.what();
  }
}

std::string replaced(std::string s, const std::string& from, const std::string& to)
{
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

} // namespace

TEST(Profile, RoundTripGivesBackTheSameNumbersAndBytes)
{
  const auto p = sample_profile();
  const std::string yaml = rc::profile_to_yaml(p);
  const auto back = rc::parse_profile(yaml, "mem.yaml");
  expect_same(p, back);
  EXPECT_EQ(rc::profile_to_yaml(back), yaml);
}

TEST(Profile, WriteThenReadFile)
{
  const auto dir = std::filesystem::temp_directory_path() / ("railyard_profile_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "p.yaml").string();
  rc::write_profile(sample_profile(), path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  const auto back = rc::read_profile(path);
  expect_same(sample_profile(), back);
  EXPECT_EQ(back.file, path);
  std::filesystem::remove_all(dir);
}

TEST(Profile, WriterRefusesWhatTheReaderWouldRefuse)
{
  auto p = sample_profile();
  p.links[0].bandwidth_source.clear(); // a number without its source
  EXPECT_THROW((void)rc::profile_to_yaml(p), std::invalid_argument);
}

TEST(Profile, CollectiveTimeFollowsThePieces)
{
  const auto p = sample_profile();
  const double f8 = 2.0 * 7 / 8; // nccl-tests all_reduce factor for 8 ranks
  // 1 MiB falls in the piece from 4096 bytes: 20.5 us + S * f / 3.75 GB/s.
  const auto t =
      p.collective_time(CollectiveKind::AllReduce, std::nullopt, std::nullopt, rc::LinkKind::NvLink, units::MiB(1), 8);
  ASSERT_TRUE(t);
  EXPECT_NEAR(t->seconds(), 20.5e-6 + 1048576.0 * f8 / 3.75e9, 1e-15);
  // Below 4096 bytes busbw is infinite: the time is the latency.
  EXPECT_EQ(p.collective_time(CollectiveKind::AllReduce, std::nullopt, std::nullopt, rc::LinkKind::NvLink, Bytes(64), 8)
                ->seconds(),
            16.25e-6);
  // Another rank count keeps busbw and applies that count's factor: 2*(4-1)/4.
  EXPECT_NEAR(
      p.collective_time(CollectiveKind::AllReduce, std::nullopt, std::nullopt, rc::LinkKind::NvLink, units::GiB(1), 4)
          ->seconds(),
      50e-6 + units::kGiB * 1.5 / 478.125e9, 1e-12);
  // Ring/Simple: nranks 8 and 4 exist over NVLink; 5 is closer to 4, 7 to 8, and 6 is a tie that goes to the
  // larger measurement.
  const auto ring_n = [&](int n) {
    return p.collective(CollectiveKind::AllReduce, Algorithm::Ring, Protocol::Simple, rc::LinkKind::NvLink, n)->nranks;
  };
  EXPECT_EQ(ring_n(5), 4);
  EXPECT_EQ(ring_n(7), 8);
  EXPECT_EQ(ring_n(6), 8);
  EXPECT_FALSE(
      p.collective_time(CollectiveKind::AllGather, std::nullopt, std::nullopt, rc::LinkKind::NvLink, units::MiB(1), 8));
  EXPECT_FALSE(p.collective(CollectiveKind::AllReduce, Algorithm::Tree, Protocol::Simple, rc::LinkKind::NvLink, 8));
}

TEST(Profile, LinkLookup)
{
  const auto p = sample_profile();
  ASSERT_TRUE(p.link(rc::LinkKind::NvLink));
  EXPECT_EQ(p.link(rc::LinkKind::NvLink)->bandwidth.bytes_per_sec(), 389.3e9);
  EXPECT_EQ(p.link(rc::LinkKind::Pcie), nullptr);
}

TEST(Profile, KernelTimeIsTheRoofline)
{
  const auto p = sample_profile();
  // Compute bound: 8192^3 GEMM, 2 m n k FLOPs, bf16 operands and output: 3 x 8192^2 x 2 bytes.
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  const double bytes = 3.0 * 8192.0 * 8192.0 * 2.0;
  EXPECT_NEAR(p.kernel_time(flops, Bytes(bytes), rc::DType::Bf16).seconds(), 3.25e-6 + flops / (989.4e12 * 0.78),
              1e-15);
  // Memory bound: an elementwise kernel of 1 GiB moved and 1 FLOP per 8 bytes.
  EXPECT_NEAR(p.kernel_time(units::kGiB / 8, units::GiB(1), rc::DType::Bf16).seconds(),
              3.25e-6 + units::kGiB / (4800e9 * 0.875), 1e-15);
  EXPECT_THROW((void)p.kernel_time(1e9, Bytes(1e6), rc::DType::Fp32), InputError);
  // Pure data movement needs no compute entry.
  EXPECT_NO_THROW((void)p.kernel_time(0, Bytes(1e6), rc::DType::Fp32));
}

// Tile and wave quantization (NVIDIA, Matrix Multiplication Background User's Guide), with 256x128 tiles on 108 SMs
// as the guide's A100 example; waves counted by hand.
TEST(Profile, GemmTimeCountsWavesOfTiles)
{
  rc::GemmTiling g{256, 128, "t", 108, "s", 0};
  // The guide's example: a 1792 x 1792 output is 7 x 14 = 98 tiles of 256x128, one wave on 108 SMs.
  EXPECT_EQ(g.tiles(1792, 1792, 1), 98);
  EXPECT_EQ(g.waves(1792, 1792, 1), 1);
  // 8192 x 2304: 32 x 18 = 576 tiles either way round (64 x 9 with 128x256); 576 / 108 = 5.33: 6 waves.
  EXPECT_EQ(g.tiles(8192, 2304, 1), 576);
  EXPECT_EQ(g.waves(8192, 2304, 1), 6);
  // 6144 x 2304: 24 x 18 = 432 = 4 x 108 tiles: 4 full waves.
  EXPECT_EQ(g.waves(6144, 2304, 1), 4);
  // The better orientation: 128 x 1024 is 1 x 8 = 8 tiles as 256x128 and 1 x 4 = 4 as 128x256.
  EXPECT_EQ(g.tiles(128, 1024, 1), 4);
  // A batch of 32 products of 2048 x 2048: 32 x 8 x 16 = 4096 tiles, 37.9: 38 waves.
  EXPECT_EQ(g.waves(2048, 2048, 32), 38);
  // With 24 SMs held by NCCL, 84 are left: 432 tiles take ceil(432 / 84) = 6 waves instead of 4.
  EXPECT_EQ(g.waves(6144, 2304, 1, 24), 6);

  auto p = sample_profile(); // 256x128 tiles, 132 SMs, bf16 989.4 TFLOPS at 0.78, 4800 GB/s at 0.875, 3.25 us launch
  // One tile of depth k at the large-GEMM rate per SM: 2 x 256 x 128 x k / (989.4e12 x 0.78 / 132).
  const double k = 4096;
  const double tile = 2.0 * 256 * 128 * k / (989.4e12 * 0.78 / 132);
  // 8448 x 512 = 33 x 4 = 132 tiles: one full wave, the same as the roofline of its 2 m n k FLOPs.
  const double bytes = 2.0 * (8448.0 * k + k * 512 + 8448.0 * 512);
  EXPECT_NEAR(p.gemm_time(8448, 512, k, 1, Bytes(bytes), rc::DType::Bf16).seconds(), 3.25e-6 + tile, 1e-15);
  EXPECT_NEAR(p.gemm_time(8448, 512, k, 1, Bytes(bytes), rc::DType::Bf16).seconds(),
              p.kernel_time(2.0 * 8448 * 512 * k, Bytes(bytes), rc::DType::Bf16).seconds(), 1e-12);
  // One row more: 133 tiles, 2 waves, twice the time.
  EXPECT_NEAR(p.gemm_time(8449, 512, k, 1, Bytes(bytes), rc::DType::Bf16).seconds(), 3.25e-6 + 2 * tile, 1e-15);
  // 32 SMs held by NCCL: 132 tiles on 100 SMs, 2 waves.
  EXPECT_NEAR(p.gemm_time(8448, 512, k, 1, Bytes(bytes), rc::DType::Bf16, 32).seconds(), 3.25e-6 + 2 * tile, 1e-15);
  // Memory bound (k = 8: 2 x 256 x 128 x 8 FLOPs per tile, far less than the bytes' time): the roofline's memory term.
  const double mem_bytes = 2.0 * (8448.0 * 8 + 8 * 512 + 8448.0 * 512);
  EXPECT_NEAR(p.gemm_time(8448, 512, 8, 1, Bytes(mem_bytes), rc::DType::Bf16).seconds(),
              3.25e-6 + mem_bytes / (4800e9 * 0.875), 1e-15);
  // Without a gemm block: the roofline, whatever NCCL holds.
  p.kernel->gemm.reset();
  EXPECT_NEAR(p.gemm_time(8449, 512, k, 1, Bytes(bytes), rc::DType::Bf16, 32).seconds(),
              p.kernel_time(2.0 * 8449 * 512 * k, Bytes(bytes), rc::DType::Bf16).seconds(), 1e-15);
}

TEST(Profile, GemmBlockNeedsSourcesAndWholeNumbers)
{
  const std::string kernel = "kernel:\n  launch_overhead_us: 4\n  memory_bandwidth_GBps: 3350\n"
                             "  memory_efficiency: 0.9\n  source: {launch_overhead_us: a, memory_bandwidth_GBps: b, "
                             "memory_efficiency: c}\n";
  const std::string ok = kMinimal + kernel +
                         "  gemm:\n    tile_m: 256\n    tile_n: 128\n    sms: 132\n"
                         "    source: {tile: guide, sms: datasheet}\n";
  const auto p = rc::parse_profile(ok, "ok.yaml");
  ASSERT_TRUE(p.kernel && p.kernel->gemm);
  EXPECT_EQ(p.kernel->gemm->tile_m, 256);
  EXPECT_EQ(p.kernel->gemm->tile_n, 128);
  EXPECT_EQ(p.kernel->gemm->sms, 132);
  EXPECT_EQ(p.kernel->gemm->sms_source, "datasheet");
  expect_error_at(replaced(ok, "    sms: 132\n", "    sms: 0\n"), line_of(ok, "    sms: 132"),
                  "outside the allowed range 1..100000");
  expect_error_at(replaced(ok, "source: {tile: guide, sms: datasheet}", "source: {tile: guide}"),
                  line_of(ok, "source: {tile: guide"), "'sms' has no source");
  // A missing key is reported at its map, whose first key (yaml-cpp's mark of a block map) is tile_m.
  expect_error_at(replaced(ok, "    tile_n: 128\n", ""), line_of(ok, "    tile_m: 256"), "tile_n");
}

TEST(Profile, MinimalFileIsValid)
{
  const auto p = rc::parse_profile(kMinimal, "ok.yaml");
  EXPECT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0].algorithm, Algorithm::Ring);
  EXPECT_FALSE(p.kernel);
}

TEST(Profile, BadFilesNameLineRuleAndFix)
{
  expect_error_at(replaced(kMinimal, "railyard_profile: 1", "railyard_profile: 2"), 1, "version 2");
  // Numbers without a source.
  expect_error_at(replaced(kMinimal, "bandwidth_GBps: \"H100 datasheet\"", "other: x"),
                  line_of(kMinimal, "source: {latency_us"), "'bandwidth_GBps' has no source");
  // Unknown field, at its own line.
  const std::string colour = replaced(kMinimal, "    nodes: 1\n", "    nodes: 1\n    colour: red\n");
  expect_error_at(colour, line_of(colour, "colour: red"), "colour");
  expect_error_at(replaced(kMinimal, "bandwidth_GBps: 450", "bandwidth_GBps: -450"),
                  line_of(kMinimal, "bandwidth_GBps: 450"), "not positive");
  expect_error_at(replaced(kMinimal, "{from_bytes: 0,", "{from_bytes: 64,"), line_of(kMinimal, "{from_bytes: 0,"),
                  "start at 0 bytes");
  expect_error_at(replaced(kMinimal, "      - {from_bytes: 0, latency_us: 60, busbw_GBps: 370}\n",
                           "      - {from_bytes: 0, latency_us: 60, busbw_GBps: 370}\n"
                           "      - {from_bytes: 0, latency_us: 60, busbw_GBps: 370}\n"),
                  line_of(kMinimal, "{from_bytes: 0,") + 1, "increasing order");
  expect_error_at(replaced(kMinimal, "algorithm: Ring", "algorithm: Star"), line_of(kMinimal, "algorithm: Ring"),
                  "unknown algorithm");
  expect_error_at(replaced(kMinimal, "    source: NVIDIA/nccl-tests issue 212\n",
                           "    source: x\n    fit: {points: 3, rms_rel_error: 0.1, max_rel_error: 0.2, inputs: "
                           "[missing.log]}\n"),
                  line_of(kMinimal, "source: NVIDIA/nccl-tests issue 212") + 1, "not listed under");
  // A key given twice (yaml-cpp would silently keep one of them), reported at the second.
  const std::string dup = replaced(kMinimal, "  - kind: nvlink\n", "  - kind: nvlink\n    latency_us: 1\n");
  expect_error_at(dup, line_of(dup, "latency_us:", 2), "twice");
  expect_error_at(kMinimal + "kernel:\n  launch_overhead_us: 4\n  memory_bandwidth_GBps: 3350\n"
                             "  memory_efficiency: 2.5\n  source: {launch_overhead_us: a, memory_bandwidth_GBps: b, "
                             "memory_efficiency: c}\n",
                  line_of(kMinimal, "latency_us: 60") + 4, "outside (0, 1.5]");
}

TEST(Profile, DuplicateEntriesAreRefused)
{
  const std::string twice = kMinimal + R"(  - collective: all_reduce
    algorithm: ring
    protocol: simple
    link: nvlink
    nranks: 8
    nodes: 1
    source: again
    pieces:
      - {from_bytes: 0, latency_us: 61, busbw_GBps: 371}
)";
  expect_error_at(twice, line_of(twice, "- collective: all_reduce", 2), "second entry");
}

// Every number of a profile, once in its unit, lies in the range units.hpp gives that quantity, and every count fits
// the int it is stored in; the bounds come from units.hpp (a time at most 1e6 s = 1e12 us, a bandwidth at most 1e15
// B/s = 1e6 GB/s, a size at most 2^53 B) and from int (2^31 - 1).
TEST(Profile, NumbersOutsideTheirQuantitysRangeAreRefusedAtTheirLine)
{
  const int lat = line_of(kMinimal, "latency_us: 0.6");
  expect_error_at(replaced(kMinimal, "latency_us: 0.6", "latency_us: 1e300"), lat, "at most 1e6 s");
  expect_error_at(replaced(kMinimal, "bandwidth_GBps: 450", "bandwidth_GBps: 2e6"),
                  line_of(kMinimal, "bandwidth_GBps: 450"), "at most 1e15 B/s");
  const int piece = line_of(kMinimal, "{from_bytes: 0,");
  expect_error_at(replaced(kMinimal, "latency_us: 60,", "latency_us: 2e12,"), piece, "at most 1e6 s");
  // 2^32 + 8 GPUs per node and 2^32 + 8 ranks wrapped to 8 in an int.
  expect_error_at(replaced(kMinimal, "per_node: 8", "per_node: 4294967304"), line_of(kMinimal, "per_node: 8"),
                  "outside the allowed range 1..2147483647");
  expect_error_at(replaced(kMinimal, "nranks: 8", "nranks: 4294967304"), line_of(kMinimal, "nranks: 8"),
                  "outside the allowed range 2..2147483647");
  const std::string measured = replaced(kMinimal, "    source: NVIDIA/nccl-tests issue 212\n",
                                        "    source: NVIDIA/nccl-tests issue 212\n    measured_bytes: [8, 1e20]\n");
  expect_error_at(measured, line_of(measured, "measured_bytes"), "2^53 B");
}

// Found by tests/fuzz (fuzz_profile): a key that is a list ("? [a, b]" then ": 1") made yaml-cpp throw
// TypedBadConversion while the reader looked for keys given twice (exit 3). It is refused at its line.
TEST(Profile, KeyThatIsAListIsRefusedAtItsLine)
{
  const std::string text = replaced(kMinimal, "    nodes: 1\n", "    nodes: 1\n    ? [a, b]\n    : 1\n");
  expect_error_at(text, line_of(text, "? [a, b]"), "a key is a list");
}

TEST(Profile, FrameworkBlockRoundTripsAndNeedsItsSource)
{
  const std::string block = "framework:\n  name: Megatron-DeepSpeed\n  launch_us: 58\n  collective_us: 0.5\n"
                            "  microbatch_us: 5700\n  step_us: 850\n  sync_after_p2p: false\n"
                            "  source: fitted to measured steps\n";
  const std::string ok = kMinimal + block;
  const auto p = rc::parse_profile(ok, "ok.yaml");
  ASSERT_TRUE(p.framework);
  EXPECT_EQ(p.framework->name, "Megatron-DeepSpeed");
  EXPECT_DOUBLE_EQ(p.framework->launch.seconds(), 58e-6);
  EXPECT_DOUBLE_EQ(p.framework->collective.seconds(), 0.5e-6);
  EXPECT_DOUBLE_EQ(p.framework->microbatch.seconds(), 5700e-6);
  EXPECT_DOUBLE_EQ(p.framework->step.seconds(), 850e-6);
  EXPECT_FALSE(p.framework->sync_after_p2p);
  const std::string yaml = rc::profile_to_yaml(p);
  EXPECT_EQ(rc::profile_to_yaml(rc::parse_profile(yaml, "back.yaml")), yaml);
  expect_error_at(replaced(ok, "  source: fitted to measured steps\n", ""), line_of(ok, "  name: Megatron"), "source");
  expect_error_at(replaced(ok, "  step_us: 850\n", "  step_us: -1\n"), line_of(ok, "  step_us: 850"), "negative");
  expect_error_at(replaced(ok, "  step_us: 850\n", "  step_us: 850\n  colour: red\n"),
                  line_of(ok, "  step_us: 850") + 1, "colour");
}

// MI300X nodes: the xGMI link kind and an RCCL library, with or without its version, read and round-trip.
TEST(Profile, XgmiLinksAndTheRcclLibraryRoundTrip)
{
  const std::string text = replaced(
      replaced(replaced(kMinimal, "  - kind: nvlink\n", "  - kind: xgmi\n"), "    link: nvlink\n", "    link: xgmi\n"),
      "links:\n", "nccl: {library: RCCL, source: \"rccl-tests header\"}\nlinks:\n");
  const auto p = rc::parse_profile(text, "mi300x.yaml");
  EXPECT_EQ(p.collective_library, rc::CollectiveLibrary::Rccl);
  EXPECT_TRUE(p.nccl_version.empty());
  ASSERT_NE(p.link(rc::LinkKind::Xgmi), nullptr);
  EXPECT_EQ(p.link(rc::LinkKind::NvLink), nullptr);
  EXPECT_NE(p.collective(CollectiveKind::AllReduce, Algorithm::Ring, Protocol::Simple, rc::LinkKind::Xgmi, 8), nullptr);
  const auto again = rc::parse_profile(rc::profile_to_yaml(p), "again.yaml");
  EXPECT_EQ(again.collective_library, rc::CollectiveLibrary::Rccl);
  EXPECT_EQ(rc::profile_to_yaml(again), rc::profile_to_yaml(p));
  auto with_version = p;
  with_version.nccl_version = "2.22.3";
  const auto yaml = rc::profile_to_yaml(with_version);
  EXPECT_NE(yaml.find("library: RCCL"), std::string::npos) << yaml;
  EXPECT_EQ(rc::parse_profile(yaml, "v.yaml").nccl_version, "2.22.3");
  // An NCCL profile keeps its old block: no library key.
  EXPECT_EQ(rc::profile_to_yaml(sample_profile()).find("library:"), std::string::npos);

  const std::string lib_line = "nccl: {library: RCCL, source: \"rccl-tests header\"}";
  expect_error_at(replaced(text, lib_line, "nccl: {library: MSCCL, source: x}"), line_of(text, lib_line),
                  "unknown collective library 'MSCCL'");
  expect_error_at(replaced(text, lib_line, "nccl: {source: x}"), line_of(text, lib_line), "neither 'version'");
  expect_error_at(replaced(kMinimal, "  - kind: nvlink\n", "  - kind: infinityfabric\n"),
                  line_of(kMinimal, "  - kind: nvlink"), "nvlink, xgmi, pcie, network");
}
