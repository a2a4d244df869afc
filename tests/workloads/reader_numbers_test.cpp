// Numbers in traces refused where they are read, with the file and the event, node or line: a JSON file that is not
// a Kineto trace, measured times that are not finite or beyond the 1e6 s a simulated time may reach, sizes beyond
// 2^53 B, counts and ranks beyond the int they are stored in. Each input below is a small valid one with one value
// changed; the valid one is read first, so a refusal comes from the changed value alone.
#include "railyard/workloads/op_graph.hpp"
#include "railyard/workloads/readers.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

using namespace railyard;
using namespace railyard::workloads;
namespace fs = std::filesystem;

namespace {

struct TempFile {
  fs::path path;
  TempFile(const std::string& name, const std::string& text)
      : path(fs::temp_directory_path() / ("railyard_numbers_" + std::to_string(::getpid()) + "_" + name))
  {
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { fs::remove(path); }
};

std::string replaced(std::string text, const std::string& from, const std::string& to)
{
  const auto at = text.find(from);
  if (at == std::string::npos) return "(test bug: '" + from + "' not in the text)";
  return text.replace(at, from.size(), to);
}

template <class F>
InputError error_of(F&& f)
{
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError({}, "", "");
}

bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

// ---- Kineto: one rank, a CPU op (event 0) and one 50 us kernel (event 1) ----

const std::string kKineto = R"({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 90, "dur": 20},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100, "dur": 50, "args": {"stream": 7}}]})";

InputError kineto_error(const std::string& name, const std::string& json)
{
  TempFile f(name, json);
  return error_of([&] { (void)read_kineto({f.path.string()}); });
}

} // namespace

TEST(KinetoNumbers, TheBaseTraceIsReadWithItsMeasuredKernel)
{
  TempFile f("base.json", kKineto);
  const Workload w = read_kineto({f.path.string()});
  ASSERT_EQ(w.world_size(), 1);
  ASSERT_EQ(w.graph_of(0).size(), 1U); // the kernel; CPU ops are not GPU work
  EXPECT_DOUBLE_EQ(w.graph_of(0).measured_duration(0)->seconds(), 50e-6);
}

TEST(KinetoNumbers, FilesThatAreNotKinetoTracesAreRefused)
{
  const InputError list = kineto_error("list.json", "[]");
  EXPECT_TRUE(has(list.rule(), "JSON list, not a Kineto trace")) << list.what();
  const InputError no_gpu = kineto_error("cpu.json", replaced(kKineto, "\"cat\": \"kernel\"", "\"cat\": \"cpu_op\""));
  EXPECT_EQ(no_gpu.where().field, "rank 0");
  EXPECT_TRUE(has(no_gpu.rule(), "none of its 2 events is a GPU event")) << no_gpu.what();
  const InputError number = kineto_error("number.json", "42");
  EXPECT_TRUE(has(number.rule(), "not a JSON object")) << number.what();
}

TEST(KinetoNumbers, MeasuredTimesThatAreNotFiniteOrOutOfRangeNameTheEvent)
{
  // 1e999 is beyond a double: nlohmann refuses it with its text; the message names its byte in the file.
  const std::string big = replaced(kKineto, "\"dur\": 50", "\"dur\": 1e999");
  const InputError overflow = kineto_error("overflow.json", big);
  EXPECT_EQ(overflow.where().field, "rank 0 byte " + std::to_string(big.find("1e999"))) << overflow.what();
  EXPECT_TRUE(has(overflow.rule(), "1e999 is beyond the range of a double")) << overflow.what();
  // 1e300 us holds in a double and is far beyond 1e6 s = 1e12 us.
  const InputError long_kernel = kineto_error("long.json", replaced(kKineto, "\"dur\": 50", "\"dur\": 1e300"));
  EXPECT_EQ(long_kernel.where().field, "rank 0 event 1");
  EXPECT_TRUE(has(long_kernel.rule(), "at most 1e6 s")) << long_kernel.what();
  // A timestamp spelled "nan" reads as NaN: not a time.
  const InputError nan_ts = kineto_error("nan.json", replaced(kKineto, "\"ts\": 100", "\"ts\": \"nan\""));
  EXPECT_EQ(nan_ts.where().field, "rank 0 event 1");
  EXPECT_TRUE(has(nan_ts.rule(), "not a finite number of microseconds")) << nan_ts.what();
  // The CPU op's times decide which op launched a kernel: checked the same way.
  const InputError cpu = kineto_error("cpu_dur.json", replaced(kKineto, "\"dur\": 20", "\"dur\": -20"));
  EXPECT_EQ(cpu.where().field, "rank 0 event 0");
  // Kernels spread over more than 1e6 s: 2e12 us between two kernels of one rank.
  const std::string spread = replaced(
      kKineto, "\"args\": {\"stream\": 7}}]",
      "\"args\": {\"stream\": 7}},\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"late\", \"pid\": 0, \"tid\": 7, "
      "\"ts\": 2000000000100, \"dur\": 5, \"args\": {\"stream\": 7}}]");
  EXPECT_TRUE(has(kineto_error("spread.json", spread).rule(), "more than the 1e6 s"));
}

TEST(KinetoNumbers, IdsAndRanksBeyondTheirIntegersAreRefused)
{
  // A stream id of 1e300 cast to an integer is undefined; a rank of 2^40 wraps an int.
  EXPECT_TRUE(has(kineto_error("stream.json", replaced(kKineto, "\"stream\": 7", "\"stream\": 1e300")).rule(),
                  "not an id that fits a 64-bit integer"));
  const InputError rank = kineto_error("rank.json", replaced(kKineto, "\"rank\": 0", "\"rank\": 1099511627776"));
  EXPECT_EQ(rank.where().field, "distributedInfo.rank");
  // A process group listing a rank as text: JSON of an unexpected type, once an exception without a location.
  const std::string pg = replaced(kKineto, "\"world_size\": 1}",
                                  "\"world_size\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"ranks\": [\"zero\"]}]}");
  EXPECT_TRUE(has(kineto_error("pg.json", pg).rule(), "not a whole number from 0"));
  // An NCCL kernel naming its process group's ranks in text, one beyond an int (std::stoi threw out_of_range).
  const std::string nccl =
      replaced(replaced(kKineto, "\"name\": \"gemm\"", "\"name\": \"ncclKernel_AllReduce_RING_LL_Sum_float\""),
               "\"args\": {\"stream\": 7}",
               "\"args\": {\"stream\": 7, \"Collective name\": \"allreduce\", \"Process Group Ranks\": "
               "\"[0, 99999999999]\"}");
  const InputError pg_ranks = kineto_error("pg_ranks.json", nccl);
  EXPECT_EQ(pg_ranks.where().field, "event 1");
  EXPECT_TRUE(has(pg_ranks.rule(), "Process Group Ranks '[0, 99999999999]'")) << pg_ranks.what();
}

// ---- ASTRA-sim 1.0 text: one MICRO layer ----

namespace {

const std::string kMicro = "MICRO\n"
                           "1\n"
                           "conv1 -1 5 NONE 0 5 NONE 0 5  ALLREDUCE 1048576 5\n";

InputError astra_error(const std::string& name, const std::string& text, int world = 8)
{
  TempFile f(name, text);
  LayerWorkloadOptions o;
  o.world_size = world;
  return error_of([&] { (void)read_astrasim1_workload(f.path.string(), o); });
}

} // namespace

TEST(LayerNumbers, SizesAndCountsBeyondTheirRangeNameLineAndField)
{
  {
    TempFile f("micro.txt", kMicro);
    LayerWorkloadOptions o;
    o.world_size = 8;
    EXPECT_EQ(read_astrasim1_workload(f.path.string(), o).world_size(), 8);
  }
  // 2^53 + 1 = 9007199254740993 B: one byte more than a size may be.
  const InputError size = astra_error("size.txt", replaced(kMicro, "1048576", "9007199254740993"));
  EXPECT_EQ(size.where().line, 3);
  EXPECT_EQ(size.where().field, "wg comm type size");
  EXPECT_TRUE(has(size.rule(), "outside the allowed range 0..9007199254740992")) << size.what();
  // all_gpus of 2^32 + 8 wrapped to 8 in an int before.
  const InputError gpus = astra_error("gpus.txt", replaced(kMicro, "MICRO", "MICRO all_gpus: 4294967304"), 0);
  EXPECT_EQ(gpus.where().line, 1);
  EXPECT_TRUE(has(gpus.rule(), "outside the allowed range 1..1048576")) << gpus.what();
  // 10^18 ticks of 1 ns = 1e9 s: a whole number, but a time beyond 1e6 s (validate names the line).
  const InputError ticks =
      astra_error("ticks.txt", "DATA\n1\nconv1 -1 1000000000000000000 NONE 0 5 NONE 0 5 ALLREDUCE 1048576 5\n");
  EXPECT_EQ(ticks.where().line, 3);
  EXPECT_TRUE(has(ticks.rule(), "at most 1e6 s")) << ticks.what();
}

// ---- AICB physical CSV ----

namespace {

const std::string kAicb = "[rank0 ~ rank7]\n"
                          "comm_type,comm_group,comm_group_size,msg_size,stage,dst,src,additional,_elapsed_time,algbw,"
                          "busbw,count\n"
                          "CommType.all_reduce,CommGroup.dp_group,8,1048576,init.model_setup,None,None,,None,None,None,"
                          "1\n";

InputError aicb_error(const std::string& name, const std::string& text)
{
  TempFile f(name, text);
  return error_of([&] { (void)read_aicb_physical_workload(f.path.string()); });
}

} // namespace

TEST(AicbNumbers, RanksSizesAndCountsBeyondTheirRangeAreRefused)
{
  {
    TempFile f("aicb.csv", kAicb);
    EXPECT_EQ(read_aicb_physical_workload(f.path.string()).world_size(), 8);
  }
  // A rank number beyond an int made std::stoi throw an exception with no location.
  const InputError ranks = aicb_error("ranks.csv", replaced(kAicb, "rank7]", "rank99999999999]"));
  EXPECT_EQ(ranks.where().line, 1);
  EXPECT_TRUE(has(ranks.rule(), "outside the allowed range 0..1048575")) << ranks.what();
  const InputError size = aicb_error("size.csv", replaced(kAicb, ",1048576,", ",18446744073709551616,"));
  EXPECT_EQ(size.where().line, 3);
  EXPECT_EQ(size.where().field, "msg_size");
  EXPECT_TRUE(has(size.rule(), "outside the allowed range 0..9007199254740992")) << size.what();
  // Each repeat of a row is an op of 40 bytes: at most a scenario's repeat, 10^6 (2^31 repeats would be 80 GiB).
  const InputError count = aicb_error("count.csv", kAicb.substr(0, kAicb.size() - 2) + "1000001\n");
  EXPECT_EQ(count.where().field, "count");
  EXPECT_TRUE(has(count.rule(), "0..1000000")) << count.what();
}

// ---- The op graph: whichever reader built it ----

TEST(OpGraphNumbers, SizesAndMeasuredTimesOutsideTheUnitRangesAreProblems)
{
  auto one_op = [](Bytes bytes, Seconds duration) {
    RankGraphBuilder b("prog.txt", SourceKind::Line);
    const OpId id = b.add(Op::make_compute(0, bytes, 0), "op");
    b.set_source_id(id, 7);
    b.set_measured(id, std::nullopt, duration);
    Workload w;
    w.add_rank(b.finish());
    return find_problems(w, 4);
  };
  EXPECT_TRUE(one_op(Bytes(1024), Seconds(1e-3)).empty());
  // 2^53 + 2 B is the next double above 2^53.
  const auto big = one_op(Bytes(9007199254740994.0), Seconds(1e-3));
  ASSERT_EQ(big.size(), 1U);
  EXPECT_EQ(big[0].where().line, 7);
  EXPECT_TRUE(has(big[0].rule(), "at most 2^53 B")) << big[0].what();
  const auto inf_time = one_op(Bytes(1024), Seconds(std::numeric_limits<double>::infinity()));
  ASSERT_EQ(inf_time.size(), 1U);
  EXPECT_TRUE(has(inf_time[0].rule(), "at most 1e6 s")) << inf_time[0].what();
}
