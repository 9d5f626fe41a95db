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
