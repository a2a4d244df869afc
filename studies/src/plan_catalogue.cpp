// The parts catalogue: parts with a price and a power, each naming a dated public source (data/catalogue/parts.yaml).
#include "railyard/studies/plan.hpp"

#include <fmt/format.h>

#include <cmath>
#include <string_view>

namespace railyard::studies {
namespace detail {
std::string_view builtin_catalogue_text(); // generated from data/catalogue/parts.yaml (studies/embed_text.cmake)
}

namespace {

const char* const kCategories[] = {"gpu", "host", "switch", "transceiver", "cable"};

bool is_null(const YamlNode& n)
{
  return n.raw().IsNull();
}

/// A figure: a number >= 0, or null (no public figure: a gap).
std::optional<double> figure(const YamlNode& n)
{
  if (is_null(n)) return std::nullopt;
  const double v = n.as_double();
  if (!std::isfinite(v) || v < 0)
    n.fail(fmt::format("{} is not a price or a power (a number >= 0)", v),
           "give a number >= 0, or null where no public figure is known");
  return v;
}

void read_part(const YamlNode& p, Part& part)
{
  p.expect_keys({"category", "description", "price_usd", "price_source", "power_w", "power_source", "gpus", "nics",
                 "nic_ports_per_transceiver", "ports", "port_gbps", "ports_per_transceiver", "reach_m", "medium"});
  if (auto c = p.get("category")) {
    part.category = c->as_string();
    bool known = false;
    for (const char* k : kCategories)
      known = known || part.category == k;
    if (!known)
      c->fail(fmt::format("'{}' is not a part category", part.category), "use gpu, host, switch, transceiver or cable");
  }
  if (auto d = p.get("description")) part.description = d->as_string();
  if (auto v = p.get("price_usd")) part.price_usd = figure(*v);
  if (auto v = p.get("power_w")) part.power_w = figure(*v);
  if (auto v = p.get("price_source")) part.price_source = v->as_string();
  if (auto v = p.get("power_source")) part.power_source = v->as_string();
  if (auto v = p.get("gpus")) part.gpus = static_cast<int>(v->as_int(1, 1024));
  if (auto v = p.get("nics")) part.nics = static_cast<int>(v->as_int(0, 1024));
  if (auto v = p.get("nic_ports_per_transceiver")) part.nic_ports_per_transceiver = static_cast<int>(v->as_int(1, 8));
  if (auto v = p.get("ports")) part.ports = static_cast<int>(v->as_int(1, 100000));
  if (auto v = p.get("ports_per_transceiver")) part.ports_per_transceiver = static_cast<int>(v->as_int(1, 8));
  if (auto v = p.get("port_gbps")) part.port_gbps = v->as_double();
  if (auto v = p.get("reach_m")) part.reach_m = v->as_double();
  if (auto v = p.get("medium")) {
    part.medium = v->as_string();
    if (part.medium != "dac" && part.medium != "fiber")
      v->fail(fmt::format("'{}' is not a cable medium", part.medium), "use dac or fiber");
  }
}

void read_facility(const YamlNode& f, Facility& fac)
{
  f.expect_keys({"pue", "pue_source", "electricity_usd_per_kwh", "electricity_source", "power_fraction",
                 "power_fraction_source"});
  if (auto v = f.get("pue")) {
    fac.pue = v->as_double();
    if (!(fac.pue >= 1 && fac.pue <= 5))
      v->fail(fmt::format("a PUE of {} is not between 1 and 5", fac.pue),
              "give the facility's power over its IT power, e.g. 1.25");
  }
  if (auto v = f.get("electricity_usd_per_kwh")) {
    fac.electricity_usd_per_kwh = v->as_double();
    if (!(fac.electricity_usd_per_kwh >= 0 && fac.electricity_usd_per_kwh < 10))
      v->fail("the electricity price must be between 0 and 10 USD per kWh", "give e.g. 0.08");
  }
  if (auto v = f.get("power_fraction")) {
    fac.power_fraction = v->as_double();
    if (!(fac.power_fraction > 0 && fac.power_fraction <= 1))
      v->fail("power_fraction must be in (0, 1]: the share of nameplate power drawn while training", "give e.g. 1.0");
  }
  if (auto v = f.get("pue_source")) fac.pue_source = v->as_string();
  if (auto v = f.get("electricity_source")) fac.electricity_source = v->as_string();
  if (auto v = f.get("power_fraction_source")) fac.power_fraction_source = v->as_string();
}

void overlay(Catalogue& c, const YamlNode& root, const std::string& name)
{
  root.expect_keys({"version", "currency", "facility", "parts", "sources"});
  if (auto v = root.get("version")) c.version = v->as_string();
  if (auto v = root.get("currency")) {
    const std::string cur = v->as_string();
    if (cur != "USD") v->fail(fmt::format("currency {} is not supported", cur), "give prices in USD (currency: USD)");
    c.currency = cur;
  }
  if (auto f = root.get("facility")) read_facility(*f, c.facility);
  if (auto s = root.get("sources")) {
    if (!s->is_map())
      s->fail("sources must map an id to a source", "write sources: {my_quote: {title: ..., accessed: 2026-12-01}}");
    for (const std::string& id : s->keys()) {
      const YamlNode e = s->at(id);
      e.expect_keys({"title", "url", "published", "accessed", "says"});
      CatalogueSource& src = c.sources[id];
      src.id = id;
      src.title = e.string_or("title", src.title);
      src.url = e.string_or("url", src.url);
      src.published = e.string_or("published", src.published);
      src.accessed = e.string_or("accessed", src.accessed);
      src.says = e.string_or("says", src.says);
      if (src.title.empty()) e.fail("a source needs a title", "give title: (what it is: a page, a quote, a datasheet)");
      if (src.published.empty() && src.accessed.empty())
        e.fail("a source needs a date", "give published: or accessed: (YYYY-MM-DD)");
    }
  }
  if (auto p = root.get("parts")) {
    if (!p->is_map()) p->fail("parts must map an id to a part", "write parts: {h100_sxm: {category: gpu, ...}}");
    for (const std::string& id : p->keys()) {
      Part& part = c.parts[id];
      part.id = id;
      read_part(p->at(id), part);
      if (part.category.empty())
        p->at(id).fail("a part needs a category", "give category: gpu, host, switch, transceiver or cable");
    }
  }
  c.files.push_back(name);
  // Every figure names a source the catalogue has, and every source a date.
  const auto check = [&](const std::string& part, const char* field, const std::optional<double>& v,
                         const std::string& source) {
    if (!v) return;
    if (source.empty() || !c.sources.count(source))
      throw InputError({name, 0, fmt::format("parts.{}.{}", part, field)},
                       source.empty()
                           ? "a figure without a source"
                           : fmt::format("the figure's source '{}' is not in the catalogue's sources", source),
                       "name a source under sources: (a page, a quote, a datasheet, with its date) for every price "
                       "and power");
  };
  for (const auto& [id, part] : c.parts) {
    check(id, "price_source", part.price_usd, part.price_source);
    check(id, "power_source", part.power_w, part.power_source);
  }
}

} // namespace

Catalogue parse_catalogue(const std::string& text, const std::string& name)
{
  Catalogue c;
  c.currency = "USD";
  overlay(c, YamlNode::load_string(text, name), name);
  return c;
}

Catalogue builtin_catalogue()
{
  Catalogue c = parse_catalogue(std::string(detail::builtin_catalogue_text()), "built-in catalogue");
  c.files = {"built-in (data/catalogue/parts.yaml, version " + c.version + ")"};
  return c;
}

Catalogue overlay_catalogue(Catalogue base, const std::string& path)
{
  overlay(base, YamlNode::load_file(path), path);
  return base;
}

} // namespace railyard::studies
