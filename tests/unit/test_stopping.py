"""Decision-aware stopping (core/stopping.py): the rule's boundaries exactly, where it may look,
and its error rate on seeded FakeTimer scores (perfbench/testing/simulate.py)."""
import pytest

import math

from perfbench.core.results import PairedSamples
from perfbench.core.stats import Estimate
from perfbench.core.stopping import StoppingRule, interim_decision
from perfbench.timing.sampler import SamplerConfig
from perfbench.testing.simulate import SimulatedHost, simulated_score

def ci(low, high):
    return Estimate(math.sqrt(low * high), low, high, 0.95)


SIM = SamplerConfig(min_pairs=10, max_pairs=30, warmup_s=0.0, min_block_s=0.0, n_resamples=500, time_budget_s=1e9)


@pytest.mark.parametrize("low,high,expected", [
    (0.9, 3.99, "r_perf_zero"),        # entirely below s_ref = 4
    (0.9, 4.0, "r_perf_zero"),         # at s_ref R_perf is still 0
    (16.0, 40.0, "r_perf_one"),        # entirely above s_ref**2
    (4.1, 4.3, "r_perf_settled"),      # R_perf in [0.018, 0.051]: 0.033 wide
    (4.1, 4.5, None),                  # R_perf in [0.018, 0.085]
    (3.0, 5.0, None),
])
def test_decide(low, high, expected):
    assert StoppingRule(processes=3, s_ref=4.0).decide(ci(low, high)) == expected


def test_without_s_ref_only_the_ci_target_stops():
    rule = StoppingRule(processes=3, s_ref=None, target_rel_ci=0.01)
    assert rule.decide(ci(0.5, 0.6)) is None
    assert rule.decide(ci(2.0, 2.02)) == "ci_target"


def test_r_ci_none_stops_only_on_certain_rewards():
    rule = StoppingRule(processes=3, s_ref=4.0, target_r_ci=None, target_rel_ci=None)
    assert rule.decide(ci(4.1, 4.3)) is None and rule.decide(ci(1.0, 2.0)) == "r_perf_zero"


def test_the_default_width_target_is_a_3_percent_half_width():
    # (--ci-target): 4.1-4.3 is 2.4% either side of its centre, 4.0-4.5 5.9%
    rule = StoppingRule(processes=10, s_ref=None)
    assert rule.target_rel_ci == 0.03
    assert rule.decide(ci(4.1, 4.3)) == "ci_target" and rule.decide(ci(4.0, 4.5)) is None


@pytest.mark.parametrize("target", [-0.01, 1.0])
def test_a_width_target_outside_0_1_is_refused(target):
    with pytest.raises(ValueError, match="target_rel_ci"):
        StoppingRule(processes=10, s_ref=None, target_rel_ci=target)


@pytest.mark.parametrize("processes,min_processes,looks,confidence", [
    (1, 2, 0, 0.95), (2, 2, 0, 0.95), (3, 2, 1, 0.975), (5, 2, 3, 0.9875),
    (3, 3, 0, 0.95), (4, 3, 1, 0.975), (6, 3, 3, 0.9875)])
def test_looks_are_bonferroni_widened(processes, min_processes, looks, confidence):
    rule = StoppingRule(processes=processes, s_ref=2.0, min_processes=min_processes)
    assert rule.interim_looks == looks and rule.look_confidence == pytest.approx(confidence)


SLOW = PairedSamples((1e6,) * 10, (4e6,) * 10, 1, "max_pairs")   # s = 0.25, no noise at all


def test_no_look_after_the_first_process_nor_after_the_last():
    rule = StoppingRule(processes=3, s_ref=4.0, min_processes=2)
    assert interim_decision([SLOW], rule, seed=1) is None             # no between-process variance yet
    assert interim_decision([SLOW, SLOW], rule, seed=1) == "r_perf_zero"
    assert interim_decision([SLOW, SLOW, SLOW], rule, seed=1) is None  # the run ends here anyway


def test_by_default_no_stop_before_three_processes():
    """The speedup is published beside the reward: 2 processes of an A/A read it 1.36% off at the
    median, 3 processes 0.83% (#38).  So the default 3-process score measures all three, however
    settled R_perf is, and a longer one may stop from the third on."""
    assert StoppingRule(processes=3, s_ref=4.0).interim_looks == 0
    assert [interim_decision([SLOW] * n, StoppingRule(processes=3, s_ref=4.0), seed=1) for n in (1, 2, 3)] == [None] * 3
    rule = StoppingRule(processes=5, s_ref=4.0)
    assert [interim_decision([SLOW] * n, rule, seed=1) for n in (1, 2, 3, 4, 5)] == \
        [None, None, "r_perf_zero", "r_perf_zero", None]


@pytest.mark.parametrize("bad", [dict(processes=0), dict(s_ref=1.0), dict(target_r_ci=1.5), dict(confidence=1.0),
                                 dict(min_processes=1)])
def test_rule_validates(bad):
    with pytest.raises(ValueError):
        StoppingRule(**dict(dict(processes=3, s_ref=2.0), **bad))


def test_a_clearly_slow_candidate_stops_after_two_processes():
    runs = [simulated_score(1.0, StoppingRule(3, 4.0, min_processes=2), SIM, SimulatedHost(), seed=s) for s in range(5)]
    assert [r.decision for r in runs] == ["r_perf_zero"] * 5
    assert [sorted(set(r.samples.processes)) for r in runs] == [[0, 1]] * 5


def test_coverage_at_the_boundary_stays_nominal():
    """The hardest truth for a sequential rule is a boundary itself (s = s_ref): every chance
    excursion of an early look below it would stop the run with a CI that misses the truth.
    Seeded, so it cannot flake; benchmarks/stopping_coverage.py runs the large study.  (The
    earliest rule a score may be given, min_processes=2: the most looks per pair.)"""
    rule = StoppingRule(3, 4.0, min_processes=2)
    runs = [simulated_score(4.0, rule, SIM, SimulatedHost(), seed=1000 + s) for s in range(40)]
    covered = sum(r.covers(4.0) for r in runs)
    assert covered >= 38, covered   # >= 95%
    assert any(r.decision for r in runs)   # the rule did stop some runs early


def test_a_run_that_stopped_early_reports_the_looks_confidence():
    rule = StoppingRule(3, 4.0, min_processes=2)
    assert rule.reported_confidence(None) == 0.95 and rule.reported_confidence("r_perf_zero") == pytest.approx(0.975)
    run = simulated_score(1.0, rule, SIM, SimulatedHost(), seed=0)
    assert run.decision == "r_perf_zero" and run.summary.speedup.confidence == pytest.approx(0.975)


def test_an_interim_look_decides_on_the_widened_ci_not_the_nominal_one():
    """s_ref placed between the nominal 95% CI's upper end and the look's (5 processes, looks
    after the 3rd and 4th: 98.3%).  The nominal CI lies below s_ref; the look's still spans it,
    so the look may not stop the run (#63: a look at the nominal CI stopped it)."""
    import numpy as np

    from perfbench.core import stats

    rng = np.random.default_rng(7)
    parts = []
    for j in range(3):
        cand = 1000.0 * np.exp(rng.normal(0, 0.02, 10))
        base = cand * 2.0 * np.exp(rng.normal(0.02 * j, 0.03, 10))
        parts.append(PairedSamples(tuple(base), tuple(cand), 1, "max_pairs", processes=(j,) * 10))
    s = PairedSamples.concat(parts)
    rule = StoppingRule(5, 4.0)
    assert rule.look_confidence == pytest.approx(1 - 0.05 / 3)

    def high(confidence):
        return stats.summarize(s.baseline_ns, s.candidate_ns, seed=3, confidence=confidence, n_resamples=500,
                               processes=s.processes, baseline_first=s.baseline_first).speedup.high

    nominal, widened = high(0.95), high(rule.look_confidence)
    assert nominal < widened
    rule = StoppingRule(5, (nominal + widened) / 2, target_r_ci=None)
    assert interim_decision(parts, rule, seed=3, n_resamples=500) is None
    assert interim_decision(parts, StoppingRule(5, widened * 1.001, target_r_ci=None), seed=3, n_resamples=500) == "r_perf_zero"


def test_a_rule_records_itself_with_its_looks_confidence():
    rule = StoppingRule(5, 2.0, confidence=0.9, target_r_ci=None, target_rel_ci=0.02, min_processes=3)
    assert rule.to_dict() == {"processes": 5, "s_ref": 2.0, "confidence": 0.9, "target_r_ci": None,
                              "target_rel_ci": 0.02, "min_processes": 3, "look_confidence": pytest.approx(1 - 0.1 / 3)}


@pytest.mark.parametrize("bad,message", [
    (dict(processes=0), "processes must be >= 1, got 0"),
    (dict(s_ref=1.0), "s_ref must be > 1, got 1.0"),
    (dict(target_r_ci=-0.01), r"target_r_ci must be in \[0, 1\], got -0.01"),
    (dict(target_r_ci=1.01), r"target_r_ci must be in \[0, 1\], got 1.01"),
    (dict(confidence=0.0), r"confidence must be in \(0, 1\), got 0.0"),
    (dict(confidence=1.0), r"confidence must be in \(0, 1\), got 1.0"),
    (dict(min_processes=1), "min_processes must be >= 2 .* got 1"),
])
def test_a_rule_says_which_setting_is_wrong(bad, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        StoppingRule(**dict(dict(processes=3, s_ref=2.0), **bad))
    # the bounds themselves are settings a user may give
    assert StoppingRule(3, 2.0, target_r_ci=0.0).target_r_ci == 0.0
    assert StoppingRule(3, 2.0, target_r_ci=1.0).target_r_ci == 1.0
    assert StoppingRule(1, None).processes == 1


def test_each_decision_at_its_bound():
    from perfbench.core.scoring import r_perf

    rule = StoppingRule(5, 4.0, target_r_ci=None, target_rel_ci=0.01)
    assert rule.decide(ci(10.0, 12.0)) is None            # above 2 x s_ref, below s_ref**2: undecided
    assert rule.decide(ci(16.0, 17.0)) == "r_perf_one"
    exact = ci(2.0, 8.0)
    assert StoppingRule(5, None, target_rel_ci=exact.rel_half_width).decide(exact) == "ci_target"   # at the target
    assert StoppingRule(5, None, target_rel_ci=exact.rel_half_width * 0.999).decide(exact) is None
    low, high = 5.0, 5.5
    width = r_perf(high, 4.0) - r_perf(low, 4.0)
    assert StoppingRule(5, 4.0, target_r_ci=width).decide(ci(low, high)) == "r_perf_settled"   # at the target
    assert StoppingRule(5, 4.0, target_r_ci=width * 0.999).decide(ci(low, high)) is None


def _three_processes(period=0.0):
    import numpy as np

    rng = np.random.default_rng(7)
    parts = []
    for j in range(3):
        first = tuple(bool(f) for f in (k % 4 in (0, 3) for k in range(10)))
        cand = 1000.0 * np.exp(rng.normal(0, 0.02, 10))
        lr = rng.normal(0.02 * j, 0.03, 10) + np.where(first, period, -period)
        parts.append(PairedSamples(tuple(cand * 2.0 * np.exp(lr)), tuple(cand), 1, "max_pairs",
                                   processes=(j,) * 10, baseline_first=first))
    return parts


def test_a_look_reads_every_pair_with_its_process_and_order_from_its_seed():
    """The look's CI is summarize's on all pairs so far, by process and with each pair's order
    (a 10% period effect here), at the look's confidence, 2000 resamples by default, from the
    run's seed: s_ref exactly at its upper end is decided (R_perf = 0) every time."""
    from perfbench.core import stats

    parts = _three_processes(period=0.1)
    s = PairedSamples.concat(parts)
    rule = StoppingRule(5, 4.0, target_r_ci=None)
    high = stats.summarize(s.baseline_ns, s.candidate_ns, seed=3, confidence=rule.look_confidence, n_resamples=2000,
                           processes=s.processes, baseline_first=s.baseline_first).speedup.high
    at = StoppingRule(5, high, target_r_ci=None)
    assert [interim_decision(parts, at, seed=3) for _ in range(8)] == ["r_perf_zero"] * 8
    assert interim_decision(parts, StoppingRule(5, high * 0.9999, target_r_ci=None), seed=3) is None


def test_a_looks_bootstrap_is_the_runs_seed_and_2000_resamples():
    """Three processes holding the same pairs in other orders: the t interval over their medians
    is a point, so the look's CI is the cluster bootstrap's: from the run's seed, 2000 resamples
    (another seed or count moves its upper end off an s_ref placed exactly on it)."""
    import numpy as np

    from perfbench.core import stats

    rng = np.random.default_rng(9)
    lr = rng.normal(0.7, 0.08, 12)
    parts = [PairedSamples(tuple(1000.0 * np.exp(rng.permutation(lr))), (1000.0,) * 12, 1, "max_pairs",
                           processes=(j,) * 12) for j in range(3)]
    s = PairedSamples.concat(parts)
    rule = StoppingRule(5, 4.0, target_r_ci=None, target_rel_ci=0.0)
    summary = stats.summarize(s.baseline_ns, s.candidate_ns, seed=3, confidence=rule.look_confidence,
                              processes=s.processes)
    t_lo, t_hi = stats.process_t_interval(summary.stability.process_speedups, rule.look_confidence)
    assert t_hi == pytest.approx(t_lo) and summary.speedup.high > t_hi * 1.01   # the bootstrap decides
    at = StoppingRule(5, summary.speedup.high, target_r_ci=None, target_rel_ci=0.0)
    assert [interim_decision(parts, at, seed=3) for _ in range(8)] == ["r_perf_zero"] * 8
    other = stats.summarize(s.baseline_ns, s.candidate_ns, seed=3, confidence=rule.look_confidence,
                            processes=s.processes, n_resamples=2001).speedup.high
    assert other != summary.speedup.high
    between = StoppingRule(5, (summary.speedup.high + other) / 2, target_r_ci=None, target_rel_ci=0.0)
    assert interim_decision(parts, between, seed=3) == ("r_perf_zero" if summary.speedup.high < other else None)


def test_a_look_uses_the_resamples_it_is_given():
    import numpy as np

    from perfbench.core import stats

    rng = np.random.default_rng(9)
    lr = rng.normal(0.7, 0.08, 12)
    parts = [PairedSamples(tuple(1000.0 * np.exp(rng.permutation(lr))), (1000.0,) * 12, 1, "max_pairs",
                           processes=(j,) * 12) for j in range(3)]
    s = PairedSamples.concat(parts)
    conf = StoppingRule(5, 4.0).look_confidence
    high = {n: stats.summarize(s.baseline_ns, s.candidate_ns, seed=3, confidence=conf, processes=s.processes,
                               n_resamples=n).speedup.high for n in (2000, 2001)}
    between = StoppingRule(5, (high[2000] + high[2001]) / 2, target_r_ci=None, target_rel_ci=0.0)
    assert interim_decision(parts, between, seed=3, n_resamples=2001) == \
        ("r_perf_zero" if high[2001] < high[2000] else None)
