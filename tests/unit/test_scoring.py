import math

import pytest

from perfbench.core.scoring import MIN_S_REF, gate_impl_tests, gate_s_ref, gate_stable, gate_starter_not_faster, r_impl, r_perf


@pytest.mark.parametrize("s_ref", [1.15, 1.5, 2.0, 7.3])
def test_r_perf_edges(s_ref):
    assert r_perf(s_ref, s_ref) == 0.0
    assert r_perf(s_ref * 0.5, s_ref) == 0.0
    assert r_perf(s_ref ** 2, s_ref) == pytest.approx(1.0, abs=1e-12)
    assert r_perf(s_ref ** 3, s_ref) == 1.0
    # halfway on the log scale between s_ref and s_ref**2
    assert r_perf(s_ref ** 1.5, s_ref) == pytest.approx(0.5)


def test_r_perf_formula_value():
    assert r_perf(3.0, 2.0) == pytest.approx(math.log(1.5) / math.log(2.0))


@pytest.mark.parametrize("s,s_ref,exc", [
    (2.0, 1.0, ValueError), (2.0, 0.9, ValueError), (float("nan"), 2.0, ValueError),
    (2.0, float("nan"), ValueError), (-1.0, 2.0, ValueError), (0.0, 2.0, ValueError),
    (float("inf"), 2.0, ValueError), ("2", 2.0, TypeError), (True, 2.0, TypeError),
])
def test_r_perf_rejects_nonsense(s, s_ref, exc):
    with pytest.raises(exc):
        r_perf(s, s_ref)


def test_r_impl():
    assert r_impl(5, 5) == 1.0
    assert r_impl(4, 5) == 0.0
    for bad in [(6, 5), (-1, 5), (0, 0)]:
        with pytest.raises(ValueError):
            r_impl(*bad)


def test_validity_gates():
    assert gate_s_ref(1.5, 1.3).ok
    assert not gate_s_ref(1.5, 1.1).ok          # unstable: CI reaches below the threshold
    assert not gate_s_ref(MIN_S_REF - 0.01, MIN_S_REF - 0.02).ok
    assert gate_starter_not_faster(1.02, 0.97).ok
    assert not gate_starter_not_faster(1.3, 1.2).ok
    # The baseline's own program read 1.6% ahead [1.006, ...] beside a 5.5x solution: noise.
    near = gate_starter_not_faster(1.016, 1.006, 5.535)
    assert near.ok and "ahead of the baseline by up to 0.00 of R_perf at s 5.54; needs <= 0.1" in near.detail
    assert not gate_starter_not_faster(1.3, 1.2, 5.5).ok          # 0.11 of R: a real head start
    assert not gate_starter_not_faster(1.05, 1.02, None).ok       # no solution to scale by
    gates = {g.name: g.ok for g in gate_impl_tests(5, 5, 3)}
    assert gates == {"enough_tests": True, "solution_passes_all": True, "starter_fails_one": True}
    gates = {g.name: g.ok for g in gate_impl_tests(4, 3, 4)}
    assert gates == {"enough_tests": False, "solution_passes_all": False, "starter_fails_one": False}


def test_gate_stable():
    from perfbench.core.stats import Stability

    assert gate_stable(None, 2.0).ok                  # one process: nothing to compare
    ok = gate_stable(Stability((2.0, 2.04), ((1.98, 2.06), (2.0, 2.08))), 2.02)   # 2% apart, CIs 4% wide
    assert ok.ok and ok.detail.startswith("worker processes' speedups spread 2.0% (a process's own CI 4.0% wide): "
                                          "moves R_perf by up to 0.03 at s 2.02; needs <= 0.1")
    # Spread wider than a process's CI (the score's `unstable` warning) but small against ln(s):
    # a precise run on a host whose processes differ a little is still a usable task.
    assert gate_stable(Stability((4.2, 4.34), ((4.18, 4.26), (4.3, 4.38))), 4.27).ok
    bad = gate_stable(Stability((2.0, 2.2), ((1.98, 2.06), (2.18, 2.27))), 2.1)  # 10% apart at s ~2
    assert not bad.ok and "moves R_perf by up to 0.13" in bad.detail and "unstable" in bad.detail


# -- #63: the messages and boundaries a mutation run found unheld (benchmarks/mutation_score.py) ----
@pytest.mark.parametrize("s,s_ref,message", [
    (2.0, 1.0, "s_ref must be > 1 (the reference solution must beat the baseline), got 1.0"),
    (float("nan"), 2.0, "s must be finite, got nan"), (2.0, float("inf"), "s_ref must be finite, got inf"),
    (0.0, 2.0, "s must be positive, got 0.0"), (2.0, -3, "s_ref must be positive, got -3"),
    ("2", 2.0, "s must be a number, got str"), (2.0, False, "s_ref must be a number, got bool"),
])
def test_r_perf_says_what_is_wrong(s, s_ref, message):
    with pytest.raises((ValueError, TypeError)) as exc:
        r_perf(s, s_ref)
    assert str(exc.value) == message


def test_r_perf_accepts_integers_and_pays_just_above_s_ref():
    assert r_perf(4, 2) == 1.0
    assert 0.0 < r_perf(2.0 * (1 + 1e-9), 2.0) < 1e-8


def test_r_impl_says_what_is_wrong():
    assert r_impl(0, 1) == 0.0 and r_impl(1, 1) == 1.0
    with pytest.raises(ValueError, match=r"^an implementation task needs tests, got total=0$"):
        r_impl(0, 0)
    with pytest.raises(ValueError, match=r"^passed must be in \[0, 5\], got 6$"):
        r_impl(6, 5)
    with pytest.raises(ValueError, match=r"^passed must be in \[0, 5\], got -1$"):
        r_impl(-1, 5)


def test_gate_s_ref_exactly():
    from perfbench.core.scoring import GateResult

    assert gate_s_ref(1.5, 1.3) == GateResult("solution_speedup", True, "s_ref=1.500 (CI low 1.300); needs >= 1.15")
    assert gate_s_ref(MIN_S_REF, MIN_S_REF).ok                    # the bound itself passes
    assert not gate_s_ref(MIN_S_REF, MIN_S_REF - 1e-9).ok
    assert not gate_s_ref(MIN_S_REF - 1e-9, 2.0).ok


def test_gate_starter_not_faster_exactly():
    from perfbench.core.scoring import GateResult

    assert gate_starter_not_faster(1.02, 0.97) == GateResult(
        "starter_not_faster", True, "starter speedup 1.020 (CI low 0.970); needs CI low <= 1")
    assert gate_starter_not_faster(1.0, 1.0, 5.0).ok                 # CI low at 1: not ahead
    assert not gate_starter_not_faster(1.1, 1.05, 1.0).ok            # a solution no faster: no scale
    assert gate_starter_not_faster(1.3, 1.2, 5.5) == GateResult(
        "starter_not_faster", False, "starter speedup 1.300 (CI low 1.200): ahead of the baseline by up to 0.11 "
        "of R_perf at s 5.50; needs <= 0.1")
    # just within MAX_NOISE_R ahead passes, just beyond fails
    assert gate_starter_not_faster(1.2, 4.0 ** 0.0999, 4.0).ok
    assert not gate_starter_not_faster(1.2, 4.0 ** 0.1001, 4.0).ok


def test_gate_stable_exactly_at_its_bound():
    from perfbench.core.scoring import MAX_NOISE_R, GateResult
    from perfbench.core.stats import Stability

    assert gate_stable(None, 2.0) == GateResult("solution_stable", True, "one worker process: no between-process check")
    at_bound = Stability((2.0, 2.0 * 2.0 ** MAX_NOISE_R), ((1.9, 2.1), (2.0, 2.2)))
    assert gate_stable(at_bound, 2.0).ok
    assert not gate_stable(Stability((2.0, 2.0 * 2.0 ** (MAX_NOISE_R * 1.01)), ((1.9, 2.1),) * 2), 2.0).ok
    slow = gate_stable(Stability((0.9, 0.91), ((0.89, 0.92),) * 2), 0.95)   # no speedup: R cannot be moved
    assert not slow.ok and "moves R_perf by up to inf at s 0.95" in slow.detail
    assert slow.detail.endswith("needs <= 0.1 (unstable: raise [timing] pairs, [cpu] threads = 1, or a quieter host)")


def test_gate_impl_tests_exactly():
    from perfbench.core.scoring import GateResult

    assert gate_impl_tests(5, 5, 4) == [GateResult("enough_tests", True, "5 tests; needs >= 5"),
                                        GateResult("solution_passes_all", True, "solution passed 5/5"),
                                        GateResult("starter_fails_one", True, "starter passed 4/5")]


def test_the_starter_gate_picks_its_scale_by_the_ci_and_the_solution():
    from perfbench.core.scoring import GateResult

    # CI low exactly 1: no head start, judged without a scale
    assert gate_starter_not_faster(1.01, 1.0, 5.0) == GateResult(
        "starter_not_faster", True, "starter speedup 1.010 (CI low 1.000); needs CI low <= 1")
    # a solution of 1.5x is a scale: 2% ahead is 0.05 of R_perf there
    assert gate_starter_not_faster(1.03, 1.02, 1.5) == GateResult(
        "starter_not_faster", True, "starter speedup 1.030 (CI low 1.020): ahead of the baseline by up to 0.05 of "
        "R_perf at s 1.50; needs <= 0.1")


def test_gate_stable_at_a_speedup_of_exactly_one():
    from perfbench.core.stats import Stability

    flat = gate_stable(Stability((1.0, 1.01), ((0.99, 1.01),) * 2), 1.0)
    assert not flat.ok and "moves R_perf by up to inf at s 1.00" in flat.detail
    good = gate_stable(Stability((2.0, 2.04), ((1.98, 2.06), (2.0, 2.08))), 2.02)
    assert good.name == "solution_stable" and good.detail.endswith("needs <= 0.1")


def test_the_noise_gates_pass_exactly_at_max_noise_r():
    """Built so that ln(spread) / ln(s) is MAX_NOISE_R to the last bit (s = e**10, spread = e)."""
    from perfbench.core.scoring import MAX_NOISE_R
    from perfbench.core.stats import Stability

    s, spread = math.exp(10), math.e
    assert math.log(spread) / math.log(s) == MAX_NOISE_R
    assert gate_stable(Stability((1.0, spread), ((0.9, 1.1),) * 2), s).ok
    assert gate_starter_not_faster(spread, spread, s).ok


def test_gate_stable_says_the_spread_in_percent():
    from perfbench.core.stats import Stability

    g = gate_stable(Stability((2.0, 2.2), ((1.98, 2.06), (2.18, 2.27))), 2.1)
    assert g.detail.startswith("worker processes' speedups spread 10.0% (a process's own CI ")


def test_a_reward_beyond_the_speed_of_light_is_said():
    from perfbench.core.scoring import unreachable_reward

    assert unreachable_reward(3.0, 9.0) is None and unreachable_reward(3.0, 20.0) is None
    assert unreachable_reward(4.0, 9.5) == ("R_perf = 1 needs a speedup of s_ref^2 = 16.00, but the baseline is only "
                                            "9.50x its speed-of-light time here: a reward of 1 is physically out of "
                                            "reach on this machine")
