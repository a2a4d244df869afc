// DCQCN parameter sets, the reaction point's arithmetic against the paper's update rules worked by hand, RED
// marking, and bad input.
#include "railyard/models/cc/dcqcn.hpp"
#include "railyard/models/cc/registry.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>

using namespace railyard;
using models::cc::DcqcnParams;
using models::cc::ReactionPoint;

namespace {

constexpr double kLine = 50e9; // 400 Gb/s

// shared/validation/published.md: Kmin 5 KB, Kmax 200 KB, Pmax 1%, g 1/256, timer 55 us, byte counter 10 MB, 5
// fast-recovery steps, additive increase 40 Mb/s, CNP at most every 50 us per flow.
TEST(DcqcnParams, Sigcomm2015PresetIsThePapersTable)
{
  const DcqcnParams p = models::cc::dcqcn_preset("sigcomm2015");
  EXPECT_EQ(p.k_min.bytes(), 5e3);
  EXPECT_EQ(p.k_max.bytes(), 200e3);
  EXPECT_EQ(p.p_max, 0.01);
  EXPECT_EQ(p.g, 1.0 / 256);
  EXPECT_DOUBLE_EQ(p.increase_timer.seconds(), 55e-6);
  EXPECT_DOUBLE_EQ(p.alpha_period.seconds(), 55e-6);
  EXPECT_EQ(p.byte_counter.bytes(), 10e6);
  EXPECT_EQ(p.fast_recovery_steps, 5);
  EXPECT_DOUBLE_EQ(p.rate_ai.bytes_per_sec(), 40e6 / 8);
  EXPECT_DOUBLE_EQ(p.cnp_interval.seconds(), 50e-6);
  EXPECT_FALSE(p.sources.empty());
}

// ConnectX firmware defaults (mlxconfig): RPG_TIME_RESET 300 us, RPG_BYTE_RESET 32767 B, RPG_THRESHOLD 1,
// RPG_AI_RATE 5 Mb/s, RPG_HAI_RATE 50 Mb/s, DCE_TCP_G 1019/1024, DCE_TCP_RTT 1 us, RATE_REDUCE_MONITOR_PERIOD 4 us,
// MIN_TIME_BETWEEN_CNPS 4 us, RPG_MIN_DEC_FAC 50 %.
TEST(DcqcnParams, ConnectxPresetIsTheFirmwareDefaults)
{
  const DcqcnParams p = models::cc::dcqcn_preset("connectx");
  EXPECT_DOUBLE_EQ(p.increase_timer.seconds(), 300e-6);
  EXPECT_EQ(p.byte_counter.bytes(), 32767);
  EXPECT_EQ(p.fast_recovery_steps, 1);
  EXPECT_DOUBLE_EQ(p.rate_ai.bytes_per_sec(), 5e6 / 8);
  EXPECT_DOUBLE_EQ(p.rate_hai.bytes_per_sec(), 50e6 / 8);
  EXPECT_DOUBLE_EQ(p.g, 5.0 / 1024);
  EXPECT_DOUBLE_EQ(p.alpha_period.seconds(), 1e-6);
  EXPECT_DOUBLE_EQ(p.rate_reduce_interval.seconds(), 4e-6);
  EXPECT_DOUBLE_EQ(p.cnp_interval.seconds(), 4e-6);
  EXPECT_EQ(p.min_decrease_factor, 0.5);
  EXPECT_FALSE(p.clamp_target_rate);
  EXPECT_TRUE(p.clamp_after_timer);
}

TEST(DcqcnParams, RegistryNamesEveryModelWithFormulaAndCitation)
{
  const auto& models = models::cc::cc_models();
  std::vector<std::string> names;
  for (const auto& m : models) {
    names.push_back(m.name);
    EXPECT_FALSE(m.formula.empty()) << m.name;
    EXPECT_FALSE(m.citation.empty()) << m.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"none", "dcqcn/sigcomm2015", "dcqcn/connectx", "pfc"}));
}

// RED: 0 up to Kmin, linear to Pmax at Kmax, 1 beyond.
TEST(DcqcnParams, RedMarkingRamp)
{
  const DcqcnParams p = models::cc::dcqcn_preset("sigcomm2015");
  EXPECT_EQ(models::cc::marking_probability(p, Bytes(5e3)), 0.0);
  EXPECT_DOUBLE_EQ(models::cc::marking_probability(p, Bytes(102.5e3)), 0.005);
  EXPECT_DOUBLE_EQ(models::cc::marking_probability(p, Bytes(200e3)), 0.01);
  EXPECT_EQ(models::cc::marking_probability(p, Bytes(200e3 + 1)), 1.0);
}

// Paper Algorithm 1: on a CNP, R_T = R_C, R_C = R_C (1 - alpha / 2). A new flow has alpha = 1: the first cut halves.
TEST(ReactionPoint, FirstCnpHalvesTheRate)
{
  const DcqcnParams p = models::cc::dcqcn_preset("sigcomm2015");
  ReactionPoint rp(p, BytesPerSec(kLine), Seconds(0));
  EXPECT_EQ(rp.rate().bytes_per_sec(), kLine);
  EXPECT_TRUE(rp.on_cnp(p, Seconds(1e-6)));
  EXPECT_DOUBLE_EQ(rp.rate().bytes_per_sec(), kLine / 2);
  EXPECT_DOUBLE_EQ(rp.target().bytes_per_sec(), kLine);
}

// Without CNPs alpha decays by (1 - g) every period: after 10 periods alpha = (1 - g)^10.
TEST(ReactionPoint, AlphaDecaysWithoutCnps)
{
  const DcqcnParams p = models::cc::dcqcn_preset("sigcomm2015");
  ReactionPoint rp(p, BytesPerSec(kLine), Seconds(0));
  rp.advance(p, Seconds(10 * 55e-6 + 1e-9), Bytes(0));
  EXPECT_NEAR(rp.alpha(), std::pow(1 - p.g, 10), 1e-12);
}

// A period that saw a CNP moves alpha towards 1: alpha = (1 - g) alpha + g.
TEST(ReactionPoint, CnpInAPeriodRaisesAlpha)
{
  DcqcnParams p = models::cc::dcqcn_preset("sigcomm2015");
  p.initial_alpha = 0.5;
  ReactionPoint rp(p, BytesPerSec(kLine), Seconds(0));
  rp.on_cnp(p, Seconds(10e-6));
  rp.advance(p, Seconds(55e-6), Bytes(0));
  EXPECT_NEAR(rp.alpha(), (1 - p.g) * 0.5 + p.g, 1e-15);
}

// Two CNPs back to back (alpha = 1 for both): R_T = R/2, R_C = R/4. Then each timer event without CNP: F = 5 fast
// recovery steps R_C = (R_T + R_C) / 2, i.e. R_C = R/2 - (R/4) / 2^k; the 6th is additive: R_T += R_AI first.
TEST(ReactionPoint, FastRecoveryThenAdditiveIncrease)
{
  const DcqcnParams p = models::cc::dcqcn_preset("sigcomm2015");
  const double T = p.increase_timer.seconds();
  ReactionPoint rp(p, BytesPerSec(kLine), Seconds(0));
  rp.on_cnp(p, Seconds(1e-6));
  rp.on_cnp(p, Seconds(2e-6));
  EXPECT_DOUBLE_EQ(rp.rate().bytes_per_sec(), kLine / 4);
  EXPECT_DOUBLE_EQ(rp.target().bytes_per_sec(), kLine / 2);
  for (int k = 1; k <= 5; ++k) {
    rp.advance(p, Seconds(2e-6 + k * T), Bytes(0));
    EXPECT_NEAR(rp.rate().bytes_per_sec(), kLine / 2 - (kLine / 4) / std::pow(2, k), 1e-3) << "step " << k;
    EXPECT_DOUBLE_EQ(rp.target().bytes_per_sec(), kLine / 2) << "fast recovery keeps the target";
  }
  const double before = rp.rate().bytes_per_sec();
  rp.advance(p, Seconds(2e-6 + 6 * T), Bytes(0));
  const double rt = kLine / 2 + p.rate_ai.bytes_per_sec();
  EXPECT_DOUBLE_EQ(rp.target().bytes_per_sec(), rt);
  EXPECT_DOUBLE_EQ(rp.rate().bytes_per_sec(), (rt + before) / 2);
}

// The byte counter raises the rate too: 2.5 counters' worth of bytes are two increase events.
TEST(ReactionPoint, ByteCounterEvents)
{
  const DcqcnParams p = models::cc::dcqcn_preset("sigcomm2015");
  ReactionPoint rp(p, BytesPerSec(kLine), Seconds(0));
  rp.on_cnp(p, Seconds(1e-6)); // R_C = R/2, R_T = R
  rp.advance(p, Seconds(2e-6), Bytes(2.5 * p.byte_counter.bytes()));
  EXPECT_DOUBLE_EQ(rp.rate().bytes_per_sec(), kLine - kLine / 8); // two fast-recovery halvings of the gap R/2
}

// Hyper increase once both counters passed F: R_T grows by (min(T, BC) - F) R_HAI per event.
TEST(ReactionPoint, HyperIncreaseAfterBothCountersPassF)
{
  DcqcnParams p = models::cc::dcqcn_preset("sigcomm2015");
  p.fast_recovery_steps = 1;
  ReactionPoint rp(p, BytesPerSec(kLine), Seconds(0));
  rp.on_cnp(p, Seconds(0)); // R_T = R, R_C = R/2
  rp.on_cnp(p, Seconds(0)); // R_T = R/2, R_C = R/4
  const double B = p.byte_counter.bytes(), T = p.increase_timer.seconds();
  rp.advance(p, Seconds(0), Bytes(2 * B)); // BC = 1 (fast), BC = 2 (T = 0: additive)
  double rt = kLine / 2 + p.rate_ai.bytes_per_sec();
  EXPECT_DOUBLE_EQ(rp.target().bytes_per_sec(), rt);
  rp.advance(p, Seconds(T), Bytes(0)); // T = 1, BC = 2: min = 1 = F, additive
  rt += p.rate_ai.bytes_per_sec();
  EXPECT_DOUBLE_EQ(rp.target().bytes_per_sec(), rt);
  rp.advance(p, Seconds(2 * T), Bytes(0)); // T = 2, BC = 2: min = 2 > F, hyper with i = 1
  rt += p.rate_hai.bytes_per_sec();
  EXPECT_DOUBLE_EQ(rp.target().bytes_per_sec(), rt);
}

// ConnectX holds a CNP that comes within RATE_REDUCE_MONITOR_PERIOD of the last cut and applies it at its end.
TEST(ReactionPoint, ConnectxRateReduceInterval)
{
  const DcqcnParams p = models::cc::dcqcn_preset("connectx");
  ReactionPoint rp(p, BytesPerSec(kLine), Seconds(0));
  EXPECT_TRUE(rp.on_cnp(p, Seconds(0)));
  const double after_first = rp.rate().bytes_per_sec();
  EXPECT_FALSE(rp.on_cnp(p, Seconds(1e-6)));
  EXPECT_EQ(rp.rate().bytes_per_sec(), after_first);
  EXPECT_TRUE(rp.advance(p, Seconds(4e-6), Bytes(0)));
  EXPECT_LT(rp.rate().bytes_per_sec(), after_first);
  EXPECT_GE(rp.rate().bytes_per_sec(), after_first * p.min_decrease_factor);
  EXPECT_EQ(rp.decreases(), 2);
}

// A sender whose rate does not matter for a while is brought up to date in one call, as if advance() had been called
// at each event: with R_T below line rate (two cuts), 24 MB sent evenly over 600 us (40 GB/s) give byte-counter
// events at 250 and 500 us among the timer's at 55 us x k. In date order the stages are T1-T4, BC1, T5 in fast
// recovery (max of the counters <= F = 5) and T6-T9, BC2, T10 additive (min <= F): 6 and 6. One advance() at 600 us
// takes both byte events first (BC1, BC2, T1-T5 fast, T6-T10 additive: 7 and 5), the order the uniform call exists to
// avoid.
TEST(ReactionPoint, UniformAdvanceTakesEventsInDateOrder)
{
  const DcqcnParams p = models::cc::dcqcn_preset("sigcomm2015");
  const auto start = [&] {
    ReactionPoint rp(p, BytesPerSec(kLine), Seconds(0));
    rp.on_cnp(p, Seconds(0)); // R_T = R, R_C = R/2
    rp.on_cnp(p, Seconds(0)); // R_T = R/2, R_C = R/4
    return rp;
  };
  const double ai = p.rate_ai.bytes_per_sec();
  const auto expect = [&](int fast, int additive) {
    double rt = kLine / 2, rc = kLine / 4;
    for (int i = 0; i < fast; ++i)
      rc = (rt + rc) / 2;
    for (int i = 0; i < additive; ++i) {
      rt += ai;
      rc = (rt + rc) / 2;
    }
    return std::pair{rt, rc};
  };
  const double sent = 40e9 * 600e-6;
  ReactionPoint uniform = start();
  uniform.advance_uniform(p, Seconds(0), Seconds(600e-6), Bytes(sent));
  const auto [rt, rc] = expect(6, 6);
  EXPECT_DOUBLE_EQ(uniform.target().bytes_per_sec(), rt);
  EXPECT_DOUBLE_EQ(uniform.rate().bytes_per_sec(), rc);

  ReactionPoint lump = start();
  lump.advance(p, Seconds(600e-6), Bytes(sent));
  const auto [rt_lump, rc_lump] = expect(7, 5);
  EXPECT_DOUBLE_EQ(lump.target().bytes_per_sec(), rt_lump);
  EXPECT_DOUBLE_EQ(lump.rate().bytes_per_sec(), rc_lump);

  // The same as calling advance() every nanosecond with the bytes of that nanosecond (no event of one kind falls
  // within a nanosecond of one of the other kind here).
  ReactionPoint fine = start();
  for (int i = 1; i <= 600000; ++i)
    fine.advance(p, Seconds(i * 1e-9), Bytes(sent / 600000));
  EXPECT_NEAR(uniform.rate().bytes_per_sec(), fine.rate().bytes_per_sec(), 1e-9 * kLine);
  EXPECT_NEAR(uniform.target().bytes_per_sec(), fine.target().bytes_per_sec(), 1e-9 * kLine);
}

// ---- bad input ----

YamlNode dcqcn(const std::string& body)
{
  return YamlNode::load_string("dcqcn:\n" + body, "s.yaml").at("dcqcn");
}

TEST(DcqcnInput, KminAboveKmaxIsRefusedNamingTheField)
{
  try {
    models::cc::parse_dcqcn(dcqcn("  k_min: 300 KB\n  k_max: 200 KB\n"));
    FAIL() << "accepted k_min > k_max";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "s.yaml");
    EXPECT_EQ(e.where().line, 3);
    EXPECT_EQ(e.where().field, "dcqcn.k_max");
    EXPECT_NE(e.rule().find("out of order"), std::string::npos) << e.what();
    EXPECT_FALSE(e.fix().empty());
  }
  // Against the preset's k_max of 200 KB, a k_min of 300 KB alone is out of order too.
  EXPECT_THROW(models::cc::parse_dcqcn(dcqcn("  k_min: 300 KB\n")), InputError);
}

TEST(DcqcnInput, PmaxOutsideZeroOneIsRefused)
{
  for (const char* v : {"1.5", "-0.01"}) {
    try {
      models::cc::parse_dcqcn(dcqcn(std::string("  p_max: ") + v + "\n"));
      FAIL() << "accepted p_max " << v;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, "dcqcn.p_max");
      EXPECT_EQ(e.where().line, 2);
      EXPECT_NE(e.rule().find("[0, 1]"), std::string::npos);
    }
  }
}

TEST(DcqcnInput, UnknownPresetAndFieldsAreRefused)
{
  EXPECT_THROW(models::cc::parse_dcqcn(dcqcn("  preset: cx9\n")), InputError);
  EXPECT_THROW(models::cc::parse_dcqcn(dcqcn("  kmin: 5 KB\n")), InputError);
  EXPECT_THROW(models::cc::parse_dcqcn(dcqcn("  g: 0\n")), InputError);
  const DcqcnParams p = models::cc::parse_dcqcn(dcqcn("  preset: connectx\n  k_min: 100 KB\n"));
  EXPECT_EQ(p.k_min.bytes(), 100e3);
  EXPECT_DOUBLE_EQ(p.increase_timer.seconds(), 300e-6);
}

} // namespace
