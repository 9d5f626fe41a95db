"""Result records (core/results.py): every field survives a JSON round trip, the derived part is
what the samples say (and is recomputed on reading), older schemas are read as they ran, and a
record that cannot be right is refused when it is made.  Values are exact: the mutation run of
#63 (benchmarks/mutation_score.py) found each of these unheld."""
from __future__ import annotations

import json
import math
import statistics

import pytest

from perfbench.core import stats
from perfbench.core.results import READABLE_SCHEMAS, SCHEMA_VERSION, ComparisonResult, PairedSamples, SchemaError
from perfbench.core.verdict import BenchmarkComparison, Reason, ScoreResult
from perfbench.core.version import __version__

BASE = (120.0, 110.0, 130.0, 100.0, 125.0, 115.0)
CAND = (60.0, 50.0, 70.0, 40.0, 61.0, 55.0)
ORDERS = (True, False, False, True, True, False)


def samples(**changes) -> PairedSamples:
    fields = dict(baseline_ns=BASE, candidate_ns=CAND, iters_per_block=7, stop_reason="max_pairs",
                  conditions=tuple({"sm_clock": 1000 + k, "throttled": k == 2} for k in range(6)),
                  discarded_throttled=1, processes=(0, 0, 0, 1, 1, 1), baseline_first=ORDERS)
    return PairedSamples(**dict(fields, **changes))


def comparison(**changes) -> ComparisonResult:
    fields = dict(baseline="b.py:kernel", candidate="c.py:kernel", device="cpu", timer="scorer_wall_clock", seed=17,
                  samples=samples(), config={"confidence": 0.9, "n_resamples": 300, "min_pairs": 6},
                  fingerprint={"cpu": "x"}, extra={"timed_output_checks": 3},
                  solution=samples(candidate_ns=tuple(c * 1.25 for c in CAND)))
    return ComparisonResult(**dict(fields, **changes))


def round_trip(record):
    return type(record).from_dict(json.loads(json.dumps(record.to_dict())))


# -- PairedSamples ---------------------------------------------------------------------------------
def test_samples_round_trip_every_field_and_count_throttled_pairs():
    s = samples()
    assert PairedSamples.from_dict(json.loads(json.dumps(s.to_dict()))) == s
    assert s.n_pairs == 6 and s.throttled_pairs == (2,)
    assert s.to_dict() == {"baseline_ns": list(BASE), "candidate_ns": list(CAND), "iters_per_block": 7,
                           "stop_reason": "max_pairs", "conditions": list(s.conditions), "discarded_throttled": 1,
                           "processes": [0, 0, 0, 1, 1, 1], "baseline_first": list(ORDERS)}
    assert all(type(x) is float for x in s.baseline_ns + s.candidate_ns)


def test_samples_without_orders_read_as_they_ran_ab_ba_in_each_process():
    """Schema 1 and 2 documents have no `baseline_first`: each process ran AB, BA, AB, ..."""
    d = samples().to_dict()
    del d["baseline_first"]
    assert PairedSamples.from_dict(d).baseline_first == (True, False, True, True, False, True)
    del d["processes"], d["conditions"], d["discarded_throttled"]
    one = PairedSamples.from_dict(d)
    assert one.baseline_first == (True, False, True, False, True, False)
    assert (one.processes, one.conditions, one.discarded_throttled) == ((), (), 0)


@pytest.mark.parametrize("changes,message", [
    (dict(candidate_ns=CAND[:-1]), "the same number of pairs"),
    (dict(processes=(0, 0, 0, 1, 1)), "one process number"),
    (dict(processes=(0, 0, 0, 1, 1, -1)), "one process number"),
    (dict(processes=(0, 0, 0, 1, 1, 1.0)), "one process number"),
    (dict(baseline_first=ORDERS[:-1]), "one bool per pair"),
    (dict(baseline_first=(1, 0, 0, 1, 1, 0)), "one bool per pair"),
    (dict(baseline_ns=(), candidate_ns=(), processes=(), baseline_first=(), conditions=()), "no pairs"),
    (dict(baseline_ns=BASE[:-1] + (0.0,)), "baseline_ns must hold finite positive times"),
    (dict(candidate_ns=CAND[:-1] + (math.inf,)), "candidate_ns must hold finite positive times"),
    (dict(candidate_ns=CAND[:-1] + (-1.0,)), "candidate_ns must hold finite positive times"),
    (dict(iters_per_block=0), "iters_per_block must be >= 1"),
])
def test_samples_that_cannot_be_right_are_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        samples(**changes)


def test_concat_labels_each_part_and_keeps_orders_only_when_every_part_has_them():
    a = PairedSamples(BASE[:3], CAND[:3], 7, "max_pairs", ({"t": 1},) * 3, 1, (), ORDERS[:3])
    b = PairedSamples(BASE[3:], CAND[3:], 7, "ci_target", ({"t": 2},) * 3, 2, (), ORDERS[3:])
    both = PairedSamples.concat([a, b])
    assert both == PairedSamples(BASE, CAND, 7, "max_pairs,ci_target", ({"t": 1},) * 3 + ({"t": 2},) * 3, 3,
                                 (0, 0, 0, 1, 1, 1), ORDERS)
    unordered = PairedSamples.concat([a, PairedSamples(BASE[3:], CAND[3:], 7, "max_pairs")])
    assert unordered.baseline_first == () and unordered.processes == (0, 0, 0, 1, 1, 1)
    with pytest.raises(ValueError, match="same iters_per_block"):
        PairedSamples.concat([a, PairedSamples(BASE[3:], CAND[3:], 8, "max_pairs")])
    with pytest.raises(ValueError, match="one or more parts"):
        PairedSamples.concat([])


# -- ComparisonResult ------------------------------------------------------------------------------
def test_a_comparison_round_trips_and_its_summary_is_the_samples():
    c = comparison()
    back = round_trip(c)
    assert back == c and back.summary == c.summary and back.solution_summary == c.solution_summary
    d = c.to_dict()
    s = stats.summarize(BASE, CAND, seed=17, confidence=0.9, n_resamples=300, processes=c.samples.processes,
                        baseline_first=ORDERS)
    assert c.summary == s
    assert {k: v for k, v in d.items() if k not in ("samples", "summary", "solution")} == {
        "schema_version": SCHEMA_VERSION, "perfbench_version": __version__, "baseline": "b.py:kernel",
        "candidate": "c.py:kernel", "device": "cpu", "timer": "scorer_wall_clock", "seed": 17,
        "config": {"confidence": 0.9, "n_resamples": 300, "min_pairs": 6}, "fingerprint": {"cpu": "x"},
        "extra": {"timed_output_checks": 3}}
    summary = d["summary"]
    assert summary == {
        "speedup": s.speedup.value, "ci_low": s.speedup.low, "ci_high": s.speedup.high, "confidence": 0.9,
        "p_value": s.p_value, "hodges_lehmann": s.hodges_lehmann, "n_pairs": 6, "outlier_pairs": list(s.outliers),
        "baseline_median_ns": 117.5, "candidate_median_ns": 57.5, "stability": s.stability.to_dict(),
        "period_effect": s.period.to_dict(), "by_position_median_ns": summary["by_position_median_ns"],
        "warnings": list(c.warnings)}
    # each side's median when it ran first and when second (ORDERS: pairs 0, 3, 4 baseline first)
    assert summary["by_position_median_ns"] == {"baseline": {"first": 120.0, "second": 115.0},
                                                "candidate": {"first": 55.0, "second": 60.0}}
    sol = d["solution"]
    assert sol["samples"] == c.solution.to_dict()
    ratio = c.versus_solution
    assert sol["summary"] == {"speedup": c.solution_summary.speedup.value,
                              "ci_low": c.solution_summary.speedup.low, "ci_high": c.solution_summary.speedup.high,
                              "period_effect": c.solution_summary.period.to_dict(),
                              "solution_median_ns": 71.875, "candidate_over_solution": ratio.value,
                              "ratio_ci": [ratio.low, ratio.high]}
    assert ratio.value == pytest.approx(1.25, rel=1e-9)
    assert (c.speedup, c.ci, c.p_value) == (s.speedup.value, (s.speedup.low, s.speedup.high), s.p_value)


def test_a_comparison_without_orders_or_solution_writes_nulls():
    c = comparison(samples=samples(baseline_first=(), processes=()), solution=None, config={})
    d = c.to_dict()
    assert d["solution"] is None and d["summary"]["period_effect"] is None and d["summary"]["stability"] is None
    assert d["summary"]["by_position_median_ns"] is None
    assert c.solution_summary is None and c.versus_solution is None
    assert d["summary"]["confidence"] == 0.95   # config's defaults: 95%, 2000 resamples
    assert c.summary == stats.summarize(BASE, CAND, seed=17)
    assert round_trip(c) == c


def test_the_derived_part_is_recomputed_on_reading():
    d = comparison().to_dict()
    d["summary"]["speedup"] = 99.0
    d["solution"]["summary"]["speedup"] = 99.0
    back = ComparisonResult.from_dict(d)
    assert back.speedup == comparison().speedup and back.solution_summary == comparison().solution_summary


@pytest.mark.parametrize("version", [None, 0, 5, "4"])
def test_a_schema_this_perfbench_cannot_read_is_refused(version):
    d = comparison().to_dict()
    d["schema_version"] = version
    with pytest.raises(SchemaError, match="cannot read schema_version"):
        ComparisonResult.from_dict(d)
    with pytest.raises(SchemaError, match="is not 4"):
        comparison(schema_version=3)
    assert READABLE_SCHEMAS == (1, 2, 3, 4) and SCHEMA_VERSION == 4


@pytest.mark.parametrize("changes,message", [
    (dict(seed=1.5), "seed must be an int"),
    (dict(seed="17"), "seed must be an int"),
    (dict(solution=PairedSamples(BASE + BASE[:1], CAND + CAND[:1], 7, "max_pairs")),
     "7 solution pairs for 6 candidate pairs"),
])
def test_a_comparison_that_cannot_be_right_is_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        comparison(**changes)


def test_an_order_effect_larger_than_the_ci_is_a_warning():
    """The baseline-first pairs read 20% higher than the others: a significant period effect,
    far wider than the CI after its removal."""
    n = 16
    orders = tuple(k % 4 in (0, 3) for k in range(n))
    cand = tuple(100.0 * (1 + 0.001 * k) for k in range(n))
    base = tuple(c * 2 * (1.2 if f else 1 / 1.2) for c, f in zip(cand, orders))
    c = comparison(samples=PairedSamples(base, cand, 1, "max_pairs", baseline_first=orders), solution=None)
    (w,) = c.warnings
    assert w.startswith("order_effect: the first block of a pair ran +20.0% against the second")
    assert "removed from every pair" in w


# -- BenchmarkComparison, Reason --------------------------------------------------------------------
def test_a_benchmark_round_trips():
    b = BenchmarkComparison("large", {"size": 4096, "seed": 1}, comparison(solution=None))
    d = b.to_dict()
    assert d == {"name": "large", "spec": {"size": 4096, "seed": 1}, "speedup": b.comparison.speedup,
                 "ci": list(b.comparison.ci), "comparison": b.comparison.to_dict(), "sol": None}
    assert BenchmarkComparison.from_dict(json.loads(json.dumps(d))) == b
    assert Reason("correctness.nan", "3 NaN").to_dict() == {"code": "correctness.nan", "message": "3 NaN"}


# -- ScoreResult -------------------------------------------------------------------------------------
def score(**changes) -> ScoreResult:
    fields = dict(task="t", task_kind="perf", candidate="c.py", device="cpu", verdict="scored", reasons=(), checks=9,
                  seed=17, comparison=comparison(solution=None), s_ref=1.5, s_ref_source="bench_configs",
                  warnings=("w1", "w2"), overrides={"n": 3}, worker_logs={"candidate": "log"},
                  clock_control={"status": "not_applicable"}, isolation={"missing": []},
                  threading={"threads": 1}, deadline_s=480.0)
    return ScoreResult(**dict(fields, **changes))


def test_a_score_round_trips_every_field_and_says_its_reward():
    r = score()
    assert round_trip(r) == r
    d = r.to_dict()
    sp = r.comparison.summary.speedup
    assert d == {
        "schema_version": SCHEMA_VERSION, "perfbench_version": __version__, "task": "t", "task_kind": "perf",
        "candidate": "c.py", "device": "cpu", "verdict": "scored", "reasons": [], "checks": 9, "seed": 17,
        "speedup": sp.value, "ci": [sp.low, sp.high], "p_value": r.comparison.p_value, "s_ref": 1.5,
        "s_ref_source": "bench_configs", "live_s_ref": None,
        "r_perf": min(1.0, math.log(sp.value / 1.5) / math.log(1.5)), "r_impl": None,
        "reward": min(1.0, math.log(sp.value / 1.5) / math.log(1.5)), "tests_passed": None, "tests_total": None,
        "warnings": ["w1", "w2"], "overrides": {"n": 3}, "comparison": r.comparison.to_dict(),
        "worker_logs": {"candidate": "log"}, "clock_control": {"status": "not_applicable"},
        "isolation": {"missing": []}, "threading": {"threads": 1}, "benchmarks": [], "deadline_s": 480.0,
        "contract": {}, "sol": None}


def test_the_speed_of_light_section_is_recomputed_from_the_work_the_peaks_and_the_samples():
    work = {"bytes": 4_000_000, "flops": None, "bytes_source": "counted", "flops_source": None, "dtype": "float32"}
    peaks = {"bandwidth_bytes_s": 40e9, "bandwidth_kind": "copy", "working_set_bytes": 1 << 22, "flop_s": None,
             "dtype": None, "source": "measured in this score"}
    r = score(sol_inputs={"work": work, "peaks": peaks})
    sol = r.to_dict()["sol"]
    assert round_trip(r) == r and ScoreResult.from_dict(r.to_dict()).sol == sol
    assert (sol["t_sol_ns"], sol["bound"]) == (pytest.approx(1e5), "memory")    # 4 MB at 40 GB/s: 100 us
    base_ns, cand_ns = r.comparison.samples.baseline_ns, r.comparison.samples.candidate_ns
    assert sol["baseline"]["fraction_of_sol"] == pytest.approx(1e5 / statistics.median(base_ns))
    assert sol["candidate"]["fraction_of_sol"] == pytest.approx(1e5 / statistics.median(cand_ns))
    assert sol["headroom"] == pytest.approx(statistics.median(base_ns) / 1e5)
    lo, hi = sol["candidate"]["fraction_ci"]
    assert lo <= sol["candidate"]["fraction_of_sol"] <= hi and 0 <= sol["candidate"]["sol_score"] <= 1


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_a_deadline_is_a_positive_finite_number_of_seconds(bad):
    with pytest.raises(ValueError, match="deadline_s must be a positive number of seconds"):
        score(deadline_s=bad)
    assert score(deadline_s=None).to_dict()["deadline_s"] is None


def test_a_rejected_score_round_trips_with_its_reasons_and_earns_nothing():
    r = score(verdict="rejected", reasons=(Reason("tamper.protocol", "x"), Reason("candidate.timeout", "y")),
              comparison=None)
    back = round_trip(r)
    assert back == r and back.reasons == r.reasons
    assert (r.r_perf, r.reward, r.speedup, r.to_dict()["ci"], r.to_dict()["p_value"]) == (0.0, 0.0, None, None, None)


def test_an_impl_score_reads_its_tests():
    r = score(task_kind="impl", comparison=None, s_ref=None, tests_passed=4, tests_total=5)
    assert round_trip(r) == r
    assert (r.r_impl, r.reward, r.r_perf) == (0.0, 0.0, None)   # R_impl: all or nothing
    assert score(task_kind="impl", comparison=None, tests_passed=5, tests_total=5).reward == 1.0
    assert score(task_kind="impl", comparison=None, tests_passed=None, tests_total=0).r_impl == 0.0
    assert score(task_kind="impl", comparison=None, verdict="rejected", reasons=(Reason("a.b", ""),),
                 tests_passed=5, tests_total=5).r_impl == 0.0


def test_a_problem_of_several_benchmarks_reads_their_geometric_mean():
    fast, slow = comparison(solution=None), comparison(samples=samples(candidate_ns=BASE), solution=None)
    r = score(comparison=None, benchmarks=(BenchmarkComparison("a", {}, fast), BenchmarkComparison("b", {}, slow)))
    assert round_trip(r) == r
    assert r.speedup == stats.geometric_mean([fast.summary.speedup, slow.summary.speedup])
    assert r.speedup.value == pytest.approx(math.sqrt(fast.speedup * slow.speedup))
    d = r.to_dict()
    assert d["p_value"] is None and d["comparison"] is None and [b["name"] for b in d["benchmarks"]] == ["a", "b"]


def test_a_live_s_ref_is_the_solutions_speedup_read_back_from_the_samples():
    r = score(comparison=comparison(), s_ref=None, s_ref_source="live")
    assert r.s_ref == r.comparison.solution_summary.speedup.value
    d = r.to_dict()
    d["s_ref"] = 1.01
    assert ScoreResult.from_dict(d).s_ref == r.s_ref
    sol, ratio = r.comparison.solution_summary.speedup, r.comparison.versus_solution
    assert r.live_s_ref == {"solution_speedup": sol.value, "solution_ci": [sol.low, sol.high],
                            "candidate_over_solution": ratio.value, "ratio_ci": [ratio.low, ratio.high]}
    # rejected before timing: no samples, no s_ref
    assert score(verdict="rejected", reasons=(Reason("a.b", ""),), comparison=None, s_ref_source="live").s_ref is None


@pytest.mark.parametrize("s_ref,expected", [(None, None), (1.0, None), (0.8, None)])
def test_no_reward_without_an_s_ref_above_one(s_ref, expected):
    assert score(s_ref=s_ref).r_perf is expected


@pytest.mark.parametrize("changes,message", [
    (dict(verdict="passed"), "verdict must be scored or rejected"),
    (dict(verdict="rejected"), "a rejection needs at least one reason"),
    (dict(comparison=None), "a scored perf result needs a comparison"),
    (dict(benchmarks=(BenchmarkComparison("a", {}, comparison(solution=None)),)), "not both"),
    (dict(s_ref_source="live"), "a live s_ref needs the solution's samples"),
    (dict(s_ref_source="live", comparison=None), "a scored perf result needs a comparison"),
])
def test_a_score_that_cannot_be_right_is_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        score(**changes)
    assert score(task_kind="impl", comparison=None).verdict == "scored"   # an impl task needs no comparison


@pytest.mark.parametrize("version", [None, 0, 5])
def test_a_score_of_a_schema_this_perfbench_cannot_read_is_refused(version):
    d = score().to_dict()
    d["schema_version"] = version
    with pytest.raises(SchemaError, match="cannot read schema_version"):
        ScoreResult.from_dict(d)


def test_a_minimal_score_document_reads_with_defaults():
    d = {"schema_version": 4, "perfbench_version": "0.1", "task": "t", "task_kind": "impl", "candidate": "c",
         "device": "cpu", "verdict": "scored", "reasons": [], "checks": 0, "seed": 1}
    r = ScoreResult.from_dict(d)
    assert r == ScoreResult("t", "impl", "c", "cpu", "scored", (), 0, 1, perfbench_version="0.1")
    assert (r.comparison, r.s_ref, r.s_ref_source, r.tests_passed, r.warnings, r.overrides, r.worker_logs,
            r.clock_control, r.isolation, r.threading, r.benchmarks) == (None, None, "", None, (), {}, {}, {}, {},
                                                                         {}, ())


def test_a_rejection_carries_its_code_and_message_and_exit_status():
    from perfbench.core.errors import EXIT_REJECTED, EXIT_USAGE, CandidateRejected, UsageError

    exc = CandidateRejected("correctness.nan", "3 positions")
    assert (exc.reason, exc.message, str(exc), exc.args) == ("correctness.nan", "3 positions",
                                                             "correctness.nan: 3 positions", ("3 positions",))
    assert (exc.exit_code, UsageError("x").exit_code, EXIT_REJECTED, EXIT_USAGE) == (1, 2, 1, 2)


def test_the_medians_written_for_readers_of_odd_and_even_counts():
    odd = comparison(samples=samples(baseline_ns=BASE[:5], candidate_ns=CAND[:5], conditions=(),
                                     processes=(), baseline_first=ORDERS[:5]), solution=None)
    d = odd.to_dict()["summary"]
    assert (d["baseline_median_ns"], d["candidate_median_ns"]) == (120.0, 60.0)
    # ORDERS[:5]: pairs 0, 3, 4 ran the baseline first (3 values: the middle one), pairs 1, 2 second (2: their mean)
    assert d["by_position_median_ns"] == {"baseline": {"first": 120.0, "second": 120.0},
                                          "candidate": {"first": 60.0, "second": 60.0}}
    one_order = comparison(samples=samples(baseline_first=(True,) * 6), solution=None).to_dict()["summary"]
    assert one_order["by_position_median_ns"] == {"baseline": {"first": 117.5, "second": None},
                                                  "candidate": {"first": None, "second": 57.5}}


def test_what_a_comparison_document_carries_is_read_back_as_written():
    d = comparison(samples=samples(baseline_first=(), processes=()),
                   solution=samples(baseline_first=(), processes=())).to_dict()
    assert d["solution"]["summary"]["period_effect"] is None   # a solution without orders: no period effect
    d["perfbench_version"] = "0.0.1"
    del d["extra"]
    back = ComparisonResult.from_dict(d)
    assert back.perfbench_version == "0.0.1" and back.extra == {}
    one = samples(processes=())
    assert PairedSamples.concat([one]) == samples(processes=(0,) * 6)


@pytest.mark.parametrize("version,message", [(5, "^cannot read schema_version 5$"),
                                             (None, "^cannot read schema_version None$")])
def test_a_scores_schema_refusal_names_the_version(version, message):
    d = score().to_dict()
    d["schema_version"] = version
    with pytest.raises(SchemaError, match=message):
        ScoreResult.from_dict(d)


@pytest.mark.parametrize("changes,message", [
    (dict(verdict="rejected"), "^a rejection needs at least one reason$"),
    (dict(comparison=None), "^a scored perf result needs a comparison$"),
    (dict(benchmarks=(BenchmarkComparison("a", {}, comparison(solution=None)),)),
     "^one comparison, or one per benchmark, not both$"),
    (dict(s_ref_source="live"), "^a live s_ref needs the solution's samples$"),
])
def test_each_refusal_of_a_score_in_its_words(changes, message):
    with pytest.raises(ValueError, match=message):
        score(**changes)
    with pytest.raises(ValueError, match=r"^7 solution pairs for 6 candidate pairs \(interleaved: at most one per "
                                         r"round, and the candidate has one in every round\)$"):
        comparison(solution=PairedSamples(BASE + BASE[:1], CAND + CAND[:1], 7, "max_pairs"))
    comparison(solution=PairedSamples(BASE[:4], CAND[:4], 7, "max_pairs"))   # every second round: fewer
    with pytest.raises(ValueError, match="^concat needs one or more parts with the same iters_per_block$"):
        PairedSamples.concat([])


def test_a_comparison_summarizes_with_its_configs_resamples():
    import numpy as np

    rng = np.random.default_rng(3)
    base = tuple(1000.0 * np.exp(rng.normal(0.7, 0.1, 40)))
    c = comparison(samples=PairedSamples(base, (1000.0,) * 40, 1, "max_pairs"), solution=None,
                   config={"n_resamples": 300, "confidence": 0.9})
    assert c.summary == stats.summarize(base, (1000.0,) * 40, seed=17, confidence=0.9, n_resamples=300) != \
        stats.summarize(base, (1000.0,) * 40, seed=17, confidence=0.9)


def test_a_comparison_without_resamples_configured_takes_2000():
    import numpy as np

    rng = np.random.default_rng(3)
    base = tuple(1000.0 * np.exp(rng.normal(0.7, 0.1, 40)))
    c = comparison(samples=PairedSamples(base, (1000.0,) * 40, 1, "max_pairs"), solution=None, config={})
    assert c.summary == stats.summarize(base, (1000.0,) * 40, seed=17, n_resamples=2000) != \
        stats.summarize(base, (1000.0,) * 40, seed=17, n_resamples=2001)
