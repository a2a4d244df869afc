#include "railyard/calibration/profile.hpp"

#include "railyard/common/error.hpp"
#include "railyard/common/output_file.hpp"
#include "railyard/common/yaml.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <tuple>

namespace railyard::calibration {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max(); // counts are stored as int

// ---------------------------------------------------------------------------------------------------------------
// Reading

enum class Bound { NonNegative, Positive, Fraction };

double read_number(const YamlNode& n, Bound bound, bool allow_inf = false)
{
  const std::string s = n.as_string();
  double v = 0;
  if (allow_inf && (s == ".inf" || s == ".Inf" || s == ".INF" || s == "inf")) {
    v = kInf;
  } else {
    v = n.as_double();
    if (!std::isfinite(v)) n.fail(fmt::format("'{}' is not a finite number", s), "write a finite number");
  }
  switch (bound) {
  case Bound::NonNegative:
    if (v < 0) n.fail(fmt::format("{} is negative", s), "write a number >= 0");
    break;
  case Bound::Positive:
    if (!(v > 0)) n.fail(fmt::format("{} is not positive", s), "write a number > 0");
    break;
  case Bound::Fraction:
    // Up to 1.5: a fitted efficiency can pass 1 where the chip clocks above the datasheet's boost clock.
    if (!(v > 0) || v > 1.5)
      n.fail(fmt::format("efficiency {} is outside (0, 1.5]", s),
             "write the measured fraction of the peak, such as 0.8");
    break;
  }
  return v;
}

// A number whose unit is in its key (latency_us, bandwidth_GBps, from_bytes) must, once converted, lie in the range
// units.hpp gives that quantity, like every value written with its unit in a scenario.
template <class Q>
Q in_range(const YamlNode& n, Q (*checked)(double), double v)
{
  try {
    return checked(v);
  } catch (const std::invalid_argument& e) {
    n.fail(e.what(), "write the measured value in the unit the key names");
  }
}

Seconds read_us(const YamlNode& n)
{
  return in_range(n, checked_seconds, read_number(n, Bound::NonNegative) * 1e-6);
}

// `allow_inf`: a collective piece's busbw may be .inf, a piece of pure latency.
BytesPerSec read_GBps(const YamlNode& n, bool allow_inf = false)
{
  const double v = read_number(n, Bound::Positive, allow_inf);
  if (std::isinf(v)) return BytesPerSec(v);
  return in_range(n, checked_bandwidth, v * 1e9);
}

Bytes read_size(const YamlNode& n)
{
  return in_range(n, checked_bytes, read_number(n, Bound::NonNegative));
}

// Every number of an entry names its source in the entry's `source:` map, under the number's own key.
std::string read_source(const YamlNode& entry, const std::string& key)
{
  const auto src = entry.get("source");
  if (!src)
    entry.fail(fmt::format("the number '{}' has no source: this entry has no 'source:' map", key),
               fmt::format("add 'source:' with '{}: <citation or input file>' under it", key));
  if (!src->is_map())
    src->fail("expected a map from each number's key to its source",
              fmt::format("write '{}: <citation or input file>' under source:", key));
  const auto s = src->get(key);
  if (!s)
    src->fail(fmt::format("the number '{}' has no source", key),
              fmt::format("add '{}: <citation, URL or input file>' here; write 'assumption: <why>' where the number "
                          "is not measured or published",
                          key));
  const std::string text = s->as_string();
  if (text.empty()) s->fail("empty source", "name the document, URL or input file the number comes from");
  return text;
}

FitRecord read_fit(const YamlNode& n, const std::set<std::string>& known_inputs)
{
  n.expect_keys({"points", "rms_rel_error", "max_rel_error", "inputs"});
  FitRecord f;
  f.quality.points = static_cast<int>(n.at("points").as_int(1, kMaxInt, "a fit has at least one point"));
  f.quality.rms_rel_error = read_number(n.at("rms_rel_error"), Bound::NonNegative);
  f.quality.max_rel_error = read_number(n.at("max_rel_error"), Bound::NonNegative);
  if (f.quality.max_rel_error + 1e-12 < f.quality.rms_rel_error)
    n.at("max_rel_error")
        .fail("the maximum relative error is below the RMS relative error", "write the values the fit reported");
  for (const auto& i : n.at("inputs").items()) {
    const std::string path = i.as_string();
    if (!known_inputs.count(path))
      i.fail(fmt::format("input '{}' is not listed under the profile's 'inputs:'", path),
             "list every file a fit came from under 'inputs:' with its bytes and sha256");
    f.inputs.push_back(path);
  }
  return f;
}

LinkParams read_link(const YamlNode& n, const std::set<std::string>& inputs)
{
  n.expect_keys({"kind", "latency_us", "bandwidth_GBps", "source", "fit"});
  LinkParams l;
  l.line = n.where().line;
  const auto kind = n.at("kind");
  const auto k = link_kind_from_string(kind.as_string());
  if (!k)
    kind.fail(fmt::format("unknown link kind '{}'", kind.as_string()), std::string("use one of: ") + kLinkKindNames);
  l.kind = *k;
  l.latency = read_us(n.at("latency_us"));
  l.bandwidth = read_GBps(n.at("bandwidth_GBps"));
  l.latency_source = read_source(n, "latency_us");
  l.bandwidth_source = read_source(n, "bandwidth_GBps");
  n.at("source").expect_keys({"latency_us", "bandwidth_GBps"});
  if (const auto f = n.get("fit")) l.fit = read_fit(*f, inputs);
  return l;
}

CollectiveFit read_collective(const YamlNode& n, const std::set<std::string>& inputs)
{
  n.expect_keys(
      {"collective", "algorithm", "protocol", "link", "nranks", "nodes", "measured_bytes", "source", "fit", "pieces"});
  CollectiveFit c;
  c.line = n.where().line;
  const auto coll = n.at("collective");
  const auto k = models::collective_from_string(coll.as_string());
  if (!k)
    coll.fail(fmt::format("unknown collective '{}'", coll.as_string()), std::string("use one of: ") + kCollectiveNames);
  c.collective = *k;
  const auto algo = n.at("algorithm");
  if (!parse_algorithm(algo.as_string(), c.algorithm))
    algo.fail(fmt::format("unknown algorithm '{}'", algo.as_string()), std::string("use one of: ") + kAlgorithmNames);
  const auto proto = n.at("protocol");
  if (!parse_protocol(proto.as_string(), c.protocol))
    proto.fail(fmt::format("unknown protocol '{}'", proto.as_string()), std::string("use one of: ") + kProtocolNames);
  const auto link = n.at("link");
  const auto lk = link_kind_from_string(link.as_string());
  if (!lk)
    link.fail(fmt::format("unknown link kind '{}'", link.as_string()), std::string("use one of: ") + kLinkKindNames);
  c.link = *lk;
  c.nranks = static_cast<int>(n.at("nranks").as_int(2, kMaxInt, "a collective fit needs at least 2 ranks"));
  c.nodes = static_cast<int>(n.at("nodes").as_int(1, c.nranks, "a measurement spans 1 to nranks nodes"));
  const auto source = n.at("source");
  c.source = source.as_string();
  if (c.source.empty()) source.fail("empty source", "name the document, URL or input files the numbers come from");
  if (const auto mb = n.get("measured_bytes")) {
    const auto items = mb->items();
    if (items.size() != 2)
      mb->fail("expected [smallest, largest] measured size in bytes", "write two numbers, e.g. [8, 8589934592]");
    c.measured_min = read_size(items[0]);
    c.measured_max = read_size(items[1]);
    if (c.measured_max < c.measured_min)
      mb->fail("the largest measured size is below the smallest", "write [smallest, largest]");
  }
  if (const auto f = n.get("fit")) c.fit = read_fit(*f, inputs);
  const auto pieces = n.at("pieces");
  const auto items = pieces.items();
  if (items.empty())
    pieces.fail("a collective needs at least one piece", "add '- {from_bytes: 0, latency_us: ..., busbw_GBps: ...}'");
  for (const auto& p : items) {
    p.expect_keys({"from_bytes", "latency_us", "busbw_GBps", "points", "rms_rel_error", "max_rel_error"});
    CollectivePiece piece;
    const auto from = p.at("from_bytes");
    piece.from = read_size(from);
    if (c.pieces.empty() && piece.from.bytes() != 0)
      from.fail("the first piece must start at 0 bytes", "write 'from_bytes: 0' in the first piece");
    if (!c.pieces.empty() && !(piece.from > c.pieces.back().from))
      from.fail("pieces must be in increasing order of from_bytes", "sort the pieces by from_bytes");
    piece.latency = read_us(p.at("latency_us"));
    piece.busbw = read_GBps(p.at("busbw_GBps"), true);
    if (const auto pts = p.get("points")) piece.quality.points = static_cast<int>(pts->as_int(0, kMaxInt));
    if (const auto r = p.get("rms_rel_error")) piece.quality.rms_rel_error = read_number(*r, Bound::NonNegative);
    if (const auto r = p.get("max_rel_error")) piece.quality.max_rel_error = read_number(*r, Bound::NonNegative);
    c.pieces.push_back(piece);
  }
  return c;
}

ComputeParams read_compute(const YamlNode& n, const std::set<std::string>& inputs)
{
  n.expect_keys({"dtype", "peak_tflops", "efficiency", "source", "fit"});
  ComputeParams c;
  const auto dt = n.at("dtype");
  const auto t = dtype_from_string(dt.as_string());
  if (!t) dt.fail(fmt::format("unknown dtype '{}'", dt.as_string()), std::string("use one of: ") + kDTypeNames);
  c.dtype = *t;
  const auto peak = n.at("peak_tflops");
  c.peak_flops = read_number(peak, Bound::Positive) * 1e12;
  // 1e6 TFLOP/s (an exaFLOP/s) is 100 times any GPU's peak; far beyond it, FLOPs / peak rounds to zero time.
  if (c.peak_flops > 1e18)
    peak.fail(fmt::format("peak_tflops {} is above 1e6 (1 EFLOP/s per GPU)", peak.as_string()),
              "write the GPU's peak in TFLOP/s, such as 989 for an H100's dense BF16");
  c.efficiency = read_number(n.at("efficiency"), Bound::Fraction);
  c.peak_source = read_source(n, "peak_tflops");
  c.efficiency_source = read_source(n, "efficiency");
  n.at("source").expect_keys({"peak_tflops", "efficiency"});
  if (const auto f = n.get("fit")) c.fit = read_fit(*f, inputs);
  return c;
}

int read_count(const YamlNode& n, int max)
{
  return static_cast<int>(n.as_int(1, max));
}

GemmTiling read_gemm(const YamlNode& n)
{
  n.expect_keys({"tile_m", "tile_n", "sms", "source"});
  GemmTiling g;
  g.tile_m = read_count(n.at("tile_m"), 4096);
  g.tile_n = read_count(n.at("tile_n"), 4096);
  g.sms = read_count(n.at("sms"), 100000);
  g.tile_source = read_source(n, "tile");
  g.sms_source = read_source(n, "sms");
  n.at("source").expect_keys({"tile", "sms"});
  g.line = n.where().line;
  return g;
}

KernelModel read_kernel(const YamlNode& n, const std::set<std::string>& inputs)
{
  n.expect_keys(
      {"launch_overhead_us", "memory_bandwidth_GBps", "memory_efficiency", "source", "memory_fit", "compute", "gemm"});
  KernelModel k;
  k.launch_overhead = read_us(n.at("launch_overhead_us"));
  k.memory_bandwidth = read_GBps(n.at("memory_bandwidth_GBps"));
  k.memory_efficiency = read_number(n.at("memory_efficiency"), Bound::Fraction);
  k.launch_overhead_source = read_source(n, "launch_overhead_us");
  k.memory_bandwidth_source = read_source(n, "memory_bandwidth_GBps");
  k.memory_efficiency_source = read_source(n, "memory_efficiency");
  n.at("source").expect_keys({"launch_overhead_us", "memory_bandwidth_GBps", "memory_efficiency"});
  if (const auto f = n.get("memory_fit")) k.memory_fit = read_fit(*f, inputs);
  if (const auto c = n.get("compute"))
    for (const auto& item : c->items()) {
      auto cp = read_compute(item, inputs);
      if (k.compute_for(cp.dtype))
        item.fail(fmt::format("dtype {} appears twice", to_string(cp.dtype)), "keep one entry per dtype");
      k.compute.push_back(std::move(cp));
    }
  if (const auto g = n.get("gemm")) k.gemm = read_gemm(*g);
  return k;
}

FrameworkModel read_framework(const YamlNode& n, const std::set<std::string>& inputs)
{
  n.expect_keys({"name", "launch_us", "collective_us", "microbatch_us", "step_us", "sync_after_p2p", "source", "fit"});
  FrameworkModel f;
  f.line = n.where().line;
  f.name = n.string_or("name", "");
  f.launch = read_us(n.at("launch_us"));
  f.collective = read_us(n.at("collective_us"));
  f.microbatch = read_us(n.at("microbatch_us"));
  f.step = read_us(n.at("step_us"));
  f.sync_after_p2p = n.bool_or("sync_after_p2p", true);
  const auto source = n.at("source");
  f.source = source.as_string();
  if (f.source.empty())
    source.fail("empty source", "say what the numbers were fitted to (railyard calibrate --steps writes it)");
  if (const auto fit = n.get("fit")) f.fit = read_fit(*fit, inputs);
  return f;
}

// ---------------------------------------------------------------------------------------------------------------
// Writing

// 15 significant digits: enough for every measured number, and it hides the last-bit noise of unit conversions
// (50 us stored in seconds and multiplied back by 1e6 is 49.999999999999986), so text stays stable across
// read/write cycles.
std::string num(double v)
{
  if (std::isinf(v)) return ".inf";
  return fmt::format("{:.15g}", v);
}

void emit_fit(YAML::Emitter& out, const char* key, const FitRecord& f)
{
  out << YAML::Key << key << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "points" << YAML::Value << f.quality.points;
  out << YAML::Key << "rms_rel_error" << YAML::Value << num(f.quality.rms_rel_error);
  out << YAML::Key << "max_rel_error" << YAML::Value << num(f.quality.max_rel_error);
  out << YAML::Key << "inputs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& i : f.inputs)
    out << i;
  out << YAML::EndSeq << YAML::EndMap;
}

} // namespace

// ---------------------------------------------------------------------------------------------------------------
// Queries

const CollectivePiece& CollectiveFit::piece_at(Bytes size) const
{
  const CollectivePiece* at = &pieces.front();
  for (const auto& p : pieces)
    if (p.from <= size) at = &p;
  return *at;
}

Seconds CollectiveFit::time(Bytes size, int n) const
{
  const auto& p = piece_at(size);
  if (std::isinf(p.busbw.bytes_per_sec())) return p.latency;
  const double factor = models::busbw_factor(collective, n);
  return p.latency + Seconds(size.bytes() * factor / p.busbw.bytes_per_sec());
}

double GemmTiling::tiles(double m, double n, double batch) const
{
  const double a = std::ceil(m / tile_m) * std::ceil(n / tile_n);
  const double b = std::ceil(m / tile_n) * std::ceil(n / tile_m);
  return std::min(a, b) * batch;
}

double GemmTiling::waves(double m, double n, double batch, int sms_taken) const
{
  const int free = std::max(1, sms - std::max(0, sms_taken));
  return std::ceil(tiles(m, n, batch) / free);
}

const ComputeParams* KernelModel::compute_for(DType t) const
{
  for (const auto& c : compute)
    if (c.dtype == t) return &c;
  return nullptr;
}

const LinkParams* Profile::link(LinkKind k) const
{
  for (const auto& l : links)
    if (l.kind == k) return &l;
  return nullptr;
}

const CollectiveFit* Profile::collective(models::CollectiveKind c, std::optional<models::Algorithm> a,
                                         std::optional<models::Protocol> p, LinkKind link, int nranks) const
{
  const CollectiveFit* best = nullptr;
  for (const auto& f : collectives) {
    if (f.collective != c || f.algorithm != a || f.protocol != p || f.link != link) continue;
    // Closest rank count; on a tie the larger, measured with more of the fabric in play.
    if (!best || std::abs(f.nranks - nranks) < std::abs(best->nranks - nranks) ||
        (std::abs(f.nranks - nranks) == std::abs(best->nranks - nranks) && f.nranks > best->nranks))
      best = &f;
  }
  return best;
}

std::optional<Seconds> Profile::collective_time(models::CollectiveKind c, std::optional<models::Algorithm> a,
                                                std::optional<models::Protocol> p, LinkKind link, Bytes size,
                                                int nranks) const
{
  const auto* f = collective(c, a, p, link, nranks);
  if (!f) return std::nullopt;
  return f->time(size, nranks);
}

Seconds Profile::kernel_time(double flops, Bytes bytes, DType dtype) const
{
  if (!kernel)
    throw InputError({file, 0, "kernel"}, fmt::format("profile '{}' has no kernel model", system),
                     "calibrate with gemm_bench and mem_bench CSVs (calibration/run_on_gpu.sh), or use a shipped "
                     "profile with a 'kernel:' section");
  const double mem = bytes.bytes() / (kernel->memory_bandwidth.bytes_per_sec() * kernel->memory_efficiency);
  double compute = 0;
  if (flops > 0) {
    const auto* c = kernel->compute_for(dtype);
    if (!c)
      throw InputError(
          {file, 0, "kernel.compute"},
          fmt::format("profile '{}' has no compute efficiency for {}", system, to_string(dtype)),
          fmt::format("add a '- dtype: {}' entry under kernel.compute, or run gemm_bench for it", to_string(dtype)));
    compute = flops / (c->peak_flops * c->efficiency);
  }
  return kernel->launch_overhead + Seconds(std::max(mem, compute));
}

Seconds Profile::gemm_time(double m, double n, double k, double batch, Bytes bytes, DType dtype, int sms_taken) const
{
  const double flops = 2 * m * n * k * batch;
  if (!kernel || !kernel->gemm || flops <= 0) return kernel_time(flops, bytes, dtype);
  const auto* c = kernel->compute_for(dtype);
  if (!c) return kernel_time(flops, bytes, dtype); // names the missing entry
  const GemmTiling& g = *kernel->gemm;
  const double tile = 2.0 * g.tile_m * g.tile_n * k / (c->peak_flops * c->efficiency / g.sms);
  const double compute = g.waves(m, n, batch, sms_taken) * tile;
  const double mem = bytes.bytes() / (kernel->memory_bandwidth.bytes_per_sec() * kernel->memory_efficiency);
  return kernel->launch_overhead + Seconds(std::max(mem, compute));
}

// ---------------------------------------------------------------------------------------------------------------
// Files

Profile parse_profile(const std::string& text, const std::string& name)
{
  const YamlNode root = YamlNode::load_string(text, name);
  if (!root.is_map()) root.fail("a profile is a YAML map", "start the file with 'railyard_profile: 1'");
  root.expect_keys({"railyard_profile", "system", "description", "created_by", "gpu", "nccl", "inputs", "links",
                    "collectives", "kernel", "framework"});
  Profile p;
  p.file = name;
  const auto version = root.at("railyard_profile");
  if (const auto v = version.as_int(0, kMaxInt); v != kProfileVersion)
    version.fail(
        fmt::format("profile format version {} is not supported (this railyard reads version {})", v, kProfileVersion),
        "recalibrate with this railyard (railyard calibrate) or use a profile shipped with it");
  p.system = root.at("system").as_string();
  if (p.system.empty()) root.at("system").fail("empty system name", "name the system, e.g. dgx_h100_ib_ndr");
  p.description = root.string_or("description", "");
  p.created_by = root.string_or("created_by", "");

  const auto gpu = root.at("gpu");
  gpu.expect_keys({"model", "per_node", "source"});
  p.gpu_model = gpu.at("model").as_string();
  if (p.gpu_model.empty())
    gpu.at("model").fail("empty GPU model", "write the name CUDA reports, e.g. 'NVIDIA H100 80GB HBM3'");
  p.gpus_per_node = static_cast<int>(gpu.at("per_node").as_int(1, kMaxInt, "a node has at least one GPU"));
  p.gpu_model_source = read_source(gpu, "model");
  p.gpus_per_node_source = read_source(gpu, "per_node");
  gpu.at("source").expect_keys({"model", "per_node"});

  if (const auto nccl = root.get("nccl")) {
    nccl->expect_keys({"library", "version", "source"});
    if (const auto lib = nccl->get("library")) {
      const auto l = collective_library_from_string(lib->as_string());
      if (!l)
        lib->fail(fmt::format("unknown collective library '{}'", lib->as_string()),
                  std::string("write one of: ") + kCollectiveLibraryNames);
      p.collective_library = *l;
    }
    // An RCCL run may not print its version (rccl-tests prints RCCL's only with NCCL_DEBUG=VERSION); the library
    // alone is then worth keeping. An NCCL block says at least the version.
    if (const auto v = nccl->get("version"))
      p.nccl_version = v->as_string();
    else if (!nccl->get("library"))
      nccl->fail("the nccl block says neither 'version' nor 'library'",
                 "write the version of the library the measurements ran on, e.g. 'version: 2.21.5', or 'library: "
                 "RCCL' when only the library is known");
    const auto src = nccl->at("source");
    p.nccl_version_source = src.as_string();
  }

  std::set<std::string> input_paths;
  if (const auto inputs = root.get("inputs"))
    for (const auto& i : inputs->items()) {
      i.expect_keys({"path", "bytes", "sha256"});
      InputFile f;
      f.path = i.at("path").as_string();
      f.bytes = i.at("bytes").as_uint64();
      const auto sha = i.at("sha256");
      f.sha256 = sha.as_string();
      if (f.sha256.size() != 64 ||
          !std::all_of(f.sha256.begin(), f.sha256.end(), [](char ch) { return std::isxdigit(ch); }))
        sha.fail("not a SHA-256 (64 hex digits)", "write the output of 'sha256sum FILE'");
      if (!input_paths.insert(f.path).second)
        i.at("path").fail(fmt::format("input '{}' is listed twice", f.path), "list each input once");
      p.inputs.push_back(std::move(f));
    }

  if (const auto links = root.get("links"))
    for (const auto& item : links->items()) {
      auto l = read_link(item, input_paths);
      if (p.link(l.kind))
        item.at("kind").fail(fmt::format("link kind {} appears twice", to_string(l.kind)), "keep one entry per kind");
      p.links.push_back(std::move(l));
    }

  if (const auto colls = root.get("collectives"))
    for (const auto& item : colls->items()) {
      auto c = read_collective(item, input_paths);
      for (const auto& other : p.collectives)
        if (other.collective == c.collective && other.algorithm == c.algorithm && other.protocol == c.protocol &&
            other.link == c.link && other.nranks == c.nranks && other.nodes == c.nodes)
          item.fail(fmt::format("a second entry for {} {}/{} over {} with {} ranks on {} nodes",
                                models::to_string(c.collective), algorithm_name(c.algorithm), protocol_name(c.protocol),
                                to_string(c.link), c.nranks, c.nodes),
                    "merge the two entries into one (recalibrate from all their inputs together)");
      p.collectives.push_back(std::move(c));
    }

  if (const auto k = root.get("kernel")) p.kernel = read_kernel(*k, input_paths);
  if (const auto f = root.get("framework")) p.framework = read_framework(*f, input_paths);
  return p;
}

Profile read_profile(const std::string& path)
{
  return parse_profile(read_text_file(path), path);
}

std::string profile_to_yaml(const Profile& p)
{
  YAML::Emitter out;
  out << YAML::Comment("Railyard profile: measured or published numbers of one GPU system, each with its source. "
                       "Format: calibration/README.md")
      << YAML::Newline;
  out << YAML::BeginMap;
  out << YAML::Key << "railyard_profile" << YAML::Value << kProfileVersion;
  out << YAML::Key << "system" << YAML::Value << p.system;
  if (!p.description.empty()) out << YAML::Key << "description" << YAML::Value << p.description;
  if (!p.created_by.empty()) out << YAML::Key << "created_by" << YAML::Value << p.created_by;

  out << YAML::Key << "gpu" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << p.gpu_model;
  out << YAML::Key << "per_node" << YAML::Value << p.gpus_per_node;
  out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << p.gpu_model_source;
  out << YAML::Key << "per_node" << YAML::Value << p.gpus_per_node_source;
  out << YAML::EndMap << YAML::EndMap;

  if (!p.nccl_version.empty() || p.collective_library != CollectiveLibrary::Nccl) {
    out << YAML::Key << "nccl" << YAML::Value << YAML::BeginMap;
    if (p.collective_library != CollectiveLibrary::Nccl)
      out << YAML::Key << "library" << YAML::Value << library_name(p.collective_library);
    if (!p.nccl_version.empty()) out << YAML::Key << "version" << YAML::Value << p.nccl_version;
    out << YAML::Key << "source" << YAML::Value << p.nccl_version_source;
    out << YAML::EndMap;
  }

  if (!p.inputs.empty()) {
    out << YAML::Key << "inputs" << YAML::Value << YAML::BeginSeq;
    for (const auto& i : p.inputs) {
      out << YAML::BeginMap;
      out << YAML::Key << "path" << YAML::Value << i.path;
      out << YAML::Key << "bytes" << YAML::Value << i.bytes;
      out << YAML::Key << "sha256" << YAML::Value << i.sha256;
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }

  if (!p.links.empty()) {
    out << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
    for (const auto& l : p.links) {
      out << YAML::BeginMap;
      out << YAML::Key << "kind" << YAML::Value << to_string(l.kind);
      out << YAML::Key << "latency_us" << YAML::Value << num(l.latency.seconds() * 1e6);
      out << YAML::Key << "bandwidth_GBps" << YAML::Value << num(l.bandwidth.bytes_per_sec() / units::kGB);
      out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "latency_us" << YAML::Value << l.latency_source;
      out << YAML::Key << "bandwidth_GBps" << YAML::Value << l.bandwidth_source;
      out << YAML::EndMap;
      if (l.fit) emit_fit(out, "fit", *l.fit);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }

  if (!p.collectives.empty()) {
    out << YAML::Key << "collectives" << YAML::Value << YAML::BeginSeq;
    for (const auto& c : p.collectives) {
      out << YAML::BeginMap;
      out << YAML::Key << "collective" << YAML::Value << models::to_string(c.collective);
      out << YAML::Key << "algorithm" << YAML::Value << algorithm_name(c.algorithm);
      out << YAML::Key << "protocol" << YAML::Value << protocol_name(c.protocol);
      out << YAML::Key << "link" << YAML::Value << to_string(c.link);
      out << YAML::Key << "nranks" << YAML::Value << c.nranks;
      out << YAML::Key << "nodes" << YAML::Value << c.nodes;
      if (c.measured_max.bytes() > 0)
        out << YAML::Key << "measured_bytes" << YAML::Value << YAML::Flow << YAML::BeginSeq
            << num(c.measured_min.bytes()) << num(c.measured_max.bytes()) << YAML::EndSeq;
      out << YAML::Key << "source" << YAML::Value << c.source;
      if (c.fit) emit_fit(out, "fit", *c.fit);
      out << YAML::Key << "pieces" << YAML::Value << YAML::BeginSeq;
      for (const auto& piece : c.pieces) {
        out << YAML::Flow << YAML::BeginMap;
        out << YAML::Key << "from_bytes" << YAML::Value << num(piece.from.bytes());
        out << YAML::Key << "latency_us" << YAML::Value << num(piece.latency.seconds() * 1e6);
        out << YAML::Key << "busbw_GBps" << YAML::Value << num(piece.busbw.bytes_per_sec() / units::kGB);
        if (piece.quality.points > 0) {
          out << YAML::Key << "points" << YAML::Value << piece.quality.points;
          out << YAML::Key << "rms_rel_error" << YAML::Value << num(piece.quality.rms_rel_error);
          out << YAML::Key << "max_rel_error" << YAML::Value << num(piece.quality.max_rel_error);
        }
        out << YAML::EndMap;
      }
      out << YAML::EndSeq << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }

  if (p.kernel) {
    const auto& k = *p.kernel;
    out << YAML::Key << "kernel" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "launch_overhead_us" << YAML::Value << num(k.launch_overhead.seconds() * 1e6);
    out << YAML::Key << "memory_bandwidth_GBps" << YAML::Value << num(k.memory_bandwidth.bytes_per_sec() / units::kGB);
    out << YAML::Key << "memory_efficiency" << YAML::Value << num(k.memory_efficiency);
    out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "launch_overhead_us" << YAML::Value << k.launch_overhead_source;
    out << YAML::Key << "memory_bandwidth_GBps" << YAML::Value << k.memory_bandwidth_source;
    out << YAML::Key << "memory_efficiency" << YAML::Value << k.memory_efficiency_source;
    out << YAML::EndMap;
    if (k.memory_fit) emit_fit(out, "memory_fit", *k.memory_fit);
    if (!k.compute.empty()) {
      out << YAML::Key << "compute" << YAML::Value << YAML::BeginSeq;
      for (const auto& c : k.compute) {
        out << YAML::BeginMap;
        out << YAML::Key << "dtype" << YAML::Value << to_string(c.dtype);
        out << YAML::Key << "peak_tflops" << YAML::Value << num(c.peak_flops / 1e12);
        out << YAML::Key << "efficiency" << YAML::Value << num(c.efficiency);
        out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
        out << YAML::Key << "peak_tflops" << YAML::Value << c.peak_source;
        out << YAML::Key << "efficiency" << YAML::Value << c.efficiency_source;
        out << YAML::EndMap;
        if (c.fit) emit_fit(out, "fit", *c.fit);
        out << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    if (k.gemm) {
      out << YAML::Key << "gemm" << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "tile_m" << YAML::Value << k.gemm->tile_m;
      out << YAML::Key << "tile_n" << YAML::Value << k.gemm->tile_n;
      out << YAML::Key << "sms" << YAML::Value << k.gemm->sms;
      out << YAML::Key << "source" << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "tile" << YAML::Value << k.gemm->tile_source;
      out << YAML::Key << "sms" << YAML::Value << k.gemm->sms_source;
      out << YAML::EndMap << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  if (p.framework) {
    const auto& f = *p.framework;
    out << YAML::Key << "framework" << YAML::Value << YAML::BeginMap;
    if (!f.name.empty()) out << YAML::Key << "name" << YAML::Value << f.name;
    out << YAML::Key << "launch_us" << YAML::Value << num(f.launch.seconds() * 1e6);
    out << YAML::Key << "collective_us" << YAML::Value << num(f.collective.seconds() * 1e6);
    out << YAML::Key << "microbatch_us" << YAML::Value << num(f.microbatch.seconds() * 1e6);
    out << YAML::Key << "step_us" << YAML::Value << num(f.step.seconds() * 1e6);
    out << YAML::Key << "sync_after_p2p" << YAML::Value << f.sync_after_p2p;
    out << YAML::Key << "source" << YAML::Value << f.source;
    if (f.fit) emit_fit(out, "fit", *f.fit);
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  if (!out.good()) throw std::invalid_argument(std::string("cannot emit the profile as YAML: ") + out.GetLastError());
  std::string text = std::string(out.c_str()) + "\n";
  // The writer never writes what the reader would refuse.
  try {
    (void)parse_profile(text, "<profile being written>");
  } catch (const InputError& e) {
    throw std::invalid_argument(std::string("the profile is not valid: ") + e.what());
  }
  return text;
}

void write_profile(const Profile& p, const std::string& path)
{
  const std::string text = profile_to_yaml(p);
  write_file_replacing(path, [&](std::ostream& out) { out << text; });
}

} // namespace railyard::calibration
