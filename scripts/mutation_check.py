"""Mutation check: can the tests fail?  Each mutation is one small semantic change to perfbench,
applied to a copy of the repository; the tests that should notice it are run against the copy.

    .venv/bin/python scripts/mutation_check.py [--only NAME ...] [--list]

Prints one row per mutation (caught / SURVIVED, seconds) and a closing "N caught, M survived".
Exit status 1 if any mutation survived or the unmutated copy fails its own tests.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

UNIT_SAMPLER = ["tests/unit/test_sampler.py", "tests/unit/test_schedule.py", "tests/unit/test_clocks.py"]
UNIT_STATS = ["tests/unit/test_stats.py", "tests/unit/test_scoring.py", "tests/unit/test_sampler.py"]
UNIT_CORRECT = ["tests/unit/test_correctness.py"]
GATE = ["tests/integration/test_score_gate.py"]
EXPLOITS = ["tests/adversarial/test_exploits.py"]
TAMPER = ["tests/unit/test_tamper.py", "tests/adversarial/test_exploits.py"]
ESCAPES = ["tests/adversarial/test_exploits.py::test_sandbox_escapes_denied_and_helpers_frozen_and_killed"]
EARLY_STOP = ["tests/unit/test_stopping.py",
              "tests/integration/test_score_gate.py::test_an_early_stop_reports_the_looks_ci_and_each_process_draws_its_own_seeds"]
INPUTS = ["tests/unit/test_task_inputs.py"]


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


def M(name: str, file: str, old: str, new: str, tests: list[str]) -> Mutation:
    return Mutation(name, file, old, new, tuple(tests))


MUTATIONS = [
    # -- the sampler and the schedule
    M("stop checked on every pair (unbalanced AB-BA)", "perfbench/timing/sampler.py",
      "if quads and i >= cfg.min_pairs:", "if i >= cfg.min_pairs:", UNIT_SAMPLER),
    M("baseline sees other inputs than the candidate", "perfbench/timing/sampler.py",
      "times[side] = sides[side if side == BASELINE else label].run_block(iters, block_seed(seed, k))",
      "times[side] = sides[side if side == BASELINE else label].run_block(iters, block_seed(seed, k) + (side == BASELINE))", UNIT_SAMPLER),
    M("every pair re-uses one input set", "perfbench/core/score_key.py",
      'return keyed_seed(key, "block", pair)', 'return keyed_seed(key, "block")',
      UNIT_SAMPLER),
    M("no AB-BA: baseline always first", "perfbench/core/crossover.py",
      "return tuple(bool(f) != bool(k) for f in flips for k in (0, 1))[:n_pairs]",
      "return tuple(True for f in flips for k in (0, 1))[:n_pairs]", UNIT_SAMPLER),
    M("pair order fixed (AB, BA, ...), not drawn from the seed", "perfbench/core/crossover.py",
      "    flips = np.random.default_rng((seed % (1 << 62), 0xABBA)).integers(0, 2, size=(n_pairs + 1) // 2)",
      "    return alternating_orders(n_pairs)", UNIT_SAMPLER),
    M("period effect left in the pairs' ratios", "perfbench/core/crossover.py",
      "    if len(baseline_first) == 0:\n        return lr\n    groups", "    if True:\n        return lr\n    groups",
      UNIT_SAMPLER),
    M("stop check and progress every other pair only", "perfbench/timing/sampler.py",
      "        if progress is not None:\n            progress(i, estimates[0])",
      "        if progress is not None and k % 2 == 0:\n            progress(i, estimates[0])", UNIT_SAMPLER),
    M("CI target never stops the run", "perfbench/timing/sampler.py",
      "if all(e is not None and e.rel_half_width <= cfg.target_rel_ci for e in estimates):", "if False:", UNIT_SAMPLER),
    M("time budget ignored", "perfbench/timing/sampler.py",
      "elif clock() - start >= cfg.time_budget_s:", "elif False:", UNIT_SAMPLER),
    M("throttled pairs never re-measured", "perfbench/timing/sampler.py",
      "if throttled and cfg.remeasure_throttled", "if False and cfg.remeasure_throttled", UNIT_SAMPLER),
    M("budgets on the host clock under FakeTimer", "perfbench/pipeline/compare.py",
      "clock=timer.clock_s)", "clock=__import__('time').perf_counter)", UNIT_SAMPLER),
    # -- statistics and reward
    M("speedup = mean of ratios, not median", "perfbench/core/stats.py",
      "return float(np.exp(np.median(_corrected(base, cand, baseline_first, processes))))",
      "return float(np.mean(np.exp(_corrected(base, cand, baseline_first, processes))))", UNIT_STATS),
    M("bootstrap ignores its seed", "perfbench/core/stats.py",
      "random_state=np.random.default_rng(seed)", "random_state=np.random.default_rng()", UNIT_STATS),
    M("Wilcoxon one-sided", "perfbench/core/stats.py", 'alternative="two-sided"', 'alternative="greater"', UNIT_STATS),
    M("r_perf pays below s_ref", "perfbench/core/scoring.py", "if s <= s_ref:\n        return 0.0",
      "if s < 1.0:\n        return 0.0", ["tests/unit/test_scoring.py"]),
    M("r_perf saturates at s_ref**3", "perfbench/core/scoring.py",
      "math.log(s / s_ref) / math.log(s_ref))", "math.log(s / s_ref) / (2 * math.log(s_ref)))",
      ["tests/unit/test_scoring.py"]),
    # -- run-to-run honesty (#14)
    M("CI without the t interval over processes", "perfbench/core/stats.py",
      "speedup = _estimate(s, min(b_lo, t_lo), max(b_hi, t_hi), confidence)",
      "speedup = _estimate(s, b_lo, b_hi, confidence)", UNIT_STATS),
    M("never unstable", "perfbench/core/stats.py", "return self.spread > self.within_width", "return False", UNIT_STATS),
    M("pairs not labelled by process", "perfbench/core/results.py",
      "sum(((j,) * p.n_pairs for j, p in enumerate(parts)), ()),", "(),", UNIT_STATS + GATE),
    M("extra threads never flagged", "perfbench/core/tamper.py",
      "if x.own_cpu_s > (threads + THREADS_SLACK) * wall_s + THREADS_FLOOR_S + 2 * resolution_s:", "if False:", TAMPER),
    M("a run's CPU never summed", "perfbench/core/tamper.py",
      "if cpu_s > (threads + THREADS_SLACK) * wall_s + THREADS_FLOOR_S + 2 * resolution_s + spread:", "if False:",
      TAMPER),
    M("checks never more than the configured share", "perfbench/sides/cpu_side.py",
      "if not self.check_ns or self.check_budget <= 0:", "if True:", TAMPER),
    # -- correctness rules
    M("broadcast outputs accepted", "perfbench/task/correctness.py",
      "if any(s == 0 and n > 1 for s, n in zip(rec.strides, rec.shape)):", "if False:", UNIT_CORRECT + GATE),
    M("aliasing outputs accepted", "perfbench/task/correctness.py", "if rec.aliases_input and not may_alias:", "if False:",
      UNIT_CORRECT + GATE),
    M("mutated inputs accepted", "perfbench/task/correctness.py",
      '"""Compare inputs as generated by the parent with the bytes the worker held after the call."""',
      '"""Compare inputs as generated by the parent with the bytes the worker held after the call."""\n    return []',
      UNIT_CORRECT + GATE),
    M("poison never recognised", "perfbench/task/correctness.py",
      "    if t.numel() == 0 or t.element_size() == 0:\n        return False",
      "    if True:\n        return False", UNIT_CORRECT + GATE),
    M("differing repeated calls not judged", "perfbench/task/correctness.py",
      "if differ and failing[0].reason in VALUE_REASONS:", "if False:", UNIT_CORRECT + EXPLOITS),
    M("one poison pattern only", "perfbench/task/correctness.py",
      "POISON_PATTERNS = (0xFF, 0xA5)", "POISON_PATTERNS = (0xFF, 0xFF)", UNIT_CORRECT + EXPLOITS),
    M("float32 tolerance 1000x looser", "perfbench/task/correctness.py",
      "torch.float32: (1e-4, 1e-5)", "torch.float32: (1e-1, 1e-2)", UNIT_CORRECT + GATE),
    M("NaN where the reference is finite accepted", "perfbench/task/correctness.py",
      "if not bool(same.all()):", "if False:", UNIT_CORRECT + GATE),
    # -- timed-output checks (sides/output_checks.py)
    M("timed outputs checked in the first two blocks only", "perfbench/sides/output_checks.py",
      "return checks_done < 2 or secrets.randbelow(1_000_000) < fraction * 1_000_000",
      "return checks_done < 2", GATE + EXPLOITS),
    M("timed outputs never checked", "perfbench/sides/cpu_side.py",
      "if self.program is not None and should_check(self.checks, self.check_share(wall)):", "if False:", EXPLOITS),
    M("always the first iteration checked", "perfbench/sides/cpu_side.py",
      "k = secrets.randbelow(len(block))   # chosen after the block ran", "k = 0", EXPLOITS),
    M("reported time never bounded by the wall clock", "perfbench/sides/output_checks.py",
      "if total > wall_ns:", "if False:", EXPLOITS),
    # -- trust boundary v2 (#9)
    M("scorer's clock not corrected for the null-block overhead", "perfbench/sides/cpu_side.py",
      "return max(wall_ns - overhead_ns, 0.01 * wall_ns) / iters", "return wall_ns / iters", TAMPER),
    M("candidate not frozen while the baseline is timed", "perfbench/sides/cpu_side.py",
      "            self.other.freeze()\n", "", EXPLOITS),
    M("trusted task files not hidden from the candidate", "perfbench/pipeline/sandboxes.py",
      'for role in ("solution", "reference")} - {cand}', "for role in ()} - {cand}", ESCAPES),
    M("sandbox without the read-only remount", "perfbench/isolation/sandbox/plan.py",
      "mount -o remount,bind,ro \"$m\" 2>/dev/null || true", "true", ESCAPES),
    M("cpuset holds every core, not the task's", "perfbench/isolation/sandbox/cgroup.py",
      "            write(self._cpuset_file, _cpus_spec(self.cpus))",
      "            pass",
      ["tests/integration/test_cgroup.py"] + ESCAPES),
    M("no new root: the worker keeps the host's /", "perfbench/isolation/sandbox/plan.py",
      'f"cd {q(root)}; mkdir .old; {pivot} . .old; cd /; umount -l /.old; rmdir /.old\\n",', '"true\\n",',
      ["tests/integration/test_sandbox.py"] + ESCAPES),
    M("perfbench's checkout bound whole (tasks, .git)", "perfbench/isolation/sandbox/worker_view.py",
      "if p and os.path.isabs(p) and os.path.realpath(p) != checkout]", "if p and os.path.isabs(p)]",
      ["tests/unit/test_worker_view.py"] + ESCAPES),
    M("worker keeps uid 0", "perfbench/isolation/sandbox/worker_view.py",
      "    if view.uid is None:\n        return []\n    return [f\"--reuid",
      "    if True:\n        return []\n    return [f\"--reuid", ESCAPES),
    M("extension caches not overlaid (read-only)", "perfbench/isolation/sandbox/worker_view.py",
      "        lines.append(f\"mount -t overlay overlay", "        lines.append(\"true\") or (f\"mount -t overlay overlay",
      ESCAPES),
    M("stale cgroups of a killed scorer kept", "perfbench/isolation/sandbox/cgroup.py",
      "        if owner_gone(*_NAME.match(d.name).groups()):",
      "        if False:", ["tests/integration/test_cgroup.py"]),
    M("private directories of a killed scorer kept", "perfbench/isolation/sandbox/plan.py",
      "        if m and owner_gone(*m.groups()):", "        if False:", ["tests/integration/test_sandbox.py"]),
    M("a cgroup's processes never killed", "perfbench/isolation/sandbox/orphan_guard.py",
      "    deadline = time.monotonic() + timeout_s\n    thaw_cgroup(dirs)",
      "    return True\n    thaw_cgroup(dirs)", ["tests/integration/test_cgroup.py"] + EXPLOITS),
    M("timed output read from an unfrozen worker's memory: wrong iteration", "perfbench/sides/cpu_side.py",
      "outs = self._outputs_of(k)", "outs = self._outputs_of(0)", EXPLOITS),
    M("a timed output's element count unbounded (a stride-0 view is copied)", "perfbench/sides/cpu_side.py",
      "        if numel > limit:\n", "        if False:\n",
      ["tests/adversarial/test_exploits.py::test_timed_only_cheat_rejected"]),
    M("workers keep the kernel keyrings", "perfbench/isolation/sandbox/hardening.py",
      "    _bound_file_sizes()\n    deny_syscalls()", "    _bound_file_sizes()",
      ["tests/adversarial/test_exploits.py::test_the_kernel_keyring_carries_nothing_from_one_score_to_the_next"]),
    M("the keyring filter misses the x32 entry points", "perfbench/isolation/sandbox/syscall_filter.py",
      "_X32_BIT = 0x40000000", "_X32_BIT = 0x7FFFFFFF", ["tests/integration/test_syscall_filter.py"]),
    M("no pids limit on a v2 cgroup of a hybrid host", "perfbench/isolation/sandbox/cgroup.py",
      "            cg._dirs[\"pids\"] = own\n            write(own / \"pids.max\", str(PIDS_MAX))",
      "            cg._dirs[\"pids\"] = own", ["tests/integration/test_cgroup.py"]),
    M("a candidate only its owner may read runs as uid 0", "perfbench/isolation/sandbox/plan.py",
      "            if copies:\n", "            if False:\n",
      ["tests/adversarial/test_exploits.py::test_a_candidate_only_its_owner_may_read_still_runs_unprivileged"]),
    M("a candidate worker that will not freeze crashes the scorer", "perfbench/isolation/processes/worker_client.py",
      "                if not self.untrusted:\n                    raise\n", "                raise\n",
      ["tests/integration/test_cgroup.py"]),
    M("the arenas are left unsealed (a truncation SIGBUSes the scorer)", "perfbench/isolation/wire/arena.py",
      "fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)", "0)",
      ["tests/unit/test_arena_seals.py", "tests/adversarial/test_exploits.py::test_a_candidate_cannot_truncate_the_scorers_arenas"]),
    M("workers may use userfaultfd", "perfbench/isolation/sandbox/syscall_filter.py",
      '"x86_64": (0xC000003E, (248, 249, 250, 323))', '"x86_64": (0xC000003E, (248, 249, 250))',
      ["tests/integration/test_syscall_filter.py"]),
    M("a read of the frozen worker's memory has no deadline", "perfbench/sides/cpu_side.py",
      "int(r[1]), nbytes, timeout_s=self.timeout_s)", "int(r[1]), nbytes)",
      ["tests/integration/test_process_memory.py"]),
    M("no memory limit on a worker's cgroup", "perfbench/isolation/sandbox/cgroup.py",
      "    _limit_memory(cg, d, v1_memory, mount)\n", "",
      ["tests/integration/test_cgroup.py::test_a_worker_cgroup_limits_its_memory_and_counts_the_kill"]),
    M("a kernel OOM kill reported as a crash", "perfbench/isolation/processes/worker_client.py",
      "if cgroup is not None and cgroup.oom_kills():", "if False:",
      ["tests/adversarial/test_exploits.py::test_a_candidate_that_hoards_memfds_is_stopped_by_its_memory_limit"]),
    M("the private directory on the scorer's disk", "perfbench/isolation/sandbox/worker_view.py",
      'f"mount -t tmpfs -o size={PRIVATE_DIR_BYTES},mode=700{owner} tmpfs {q(root + private_dir)}")',
      'f"mount --bind {q(private_dir)} {q(root + private_dir)}; chown {view.uid}:{view.gid} {q(private_dir)}")',
      ["tests/adversarial/test_exploits.py::test_a_candidate_that_fills_its_private_directory_stops_at_the_tmpfs_size"]),
    M("CPU leases not served in turn (a lease of every core starves)", "perfbench/device/lease.py",
      "while turnstile is not None and _try_lock(turnstile) is None:", "while False:",
      ["tests/unit/test_lease.py::test_cpu_leases_are_served_in_turn"]),
    M("a worker's error code taken as it comes", "perfbench/isolation/processes/worker_client.py",
      "if not isinstance(code, str) or not CANDIDATE_REASON.fullmatch(code):", "if False:",
      ["tests/unit/test_protocol_ops.py::test_a_worker_may_only_blame_the_candidate",
       "tests/adversarial/test_protocol_fuzz.py"]),
    M("the CPU gate trusts the worker's encoding again", "perfbench/pipeline/score_processes.py",
      "cand_side.gate_side())", "None)",
      ["tests/adversarial/test_exploits.py::test_exploit_rejected"]),
    M("a sandbox limit a call ran into is only candidate.raised", "perfbench/isolation/processes/worker_state.py",
      '        code = "resource.disk"', '        code = "candidate.raised"',
      ["tests/adversarial/test_exploits.py::test_a_candidate_that_fills_its_private_directory_stops_at_the_tmpfs_size"]),
    M("no baseline drift warning", "perfbench/pipeline/score_processes.py",
      "    if drift:\n", "    if False:\n",
      ["tests/integration/test_cli_golden.py::test_a_baseline_slower_than_at_calibration_is_said"]),
    M("the warm parent's sandbox shares the host's IPC namespace", "perfbench/isolation/sandbox/entry.py",
      "CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET", "CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWNET",
      ["tests/adversarial/test_exploits.py::test_ipc_and_dev_shm_carry_nothing_from_one_score_to_the_next"]),
    M("gate checks the first size only", "perfbench/pipeline/gate.py",
      "for size in program.spec.sizes for seed in seeds]", "for size in program.spec.sizes[:1] for seed in seeds]",
      ["tests/unit/test_fake_workers.py"] + GATE + EXPLOITS),
    # -- tamper checks and tripwires
    M("unaccounted time never flagged", "perfbench/core/tamper.py",
      "    if c - b > allowed:", "    if False:", TAMPER),
    M("CPU burned during baseline blocks ignored", "perfbench/core/tamper.py",
      "if cpu > IDLE_CPU_SHARE * wall and cpu > IDLE_CPU_FLOOR_S:", "if False:", TAMPER),
    M("background threads not tripped", "perfbench/isolation/processes/integrity.py", "        if threads:", "        if False:",
      EXPLOITS),
    M("child processes not tripped", "perfbench/isolation/processes/integrity.py", "        if kids:", "        if False:",
      EXPLOITS),
    M("inputs not refilled in place (fresh objects)", "perfbench/isolation/processes/own_input_requests.py",
      "        for h, f in zip(held, fresh):\n            h.copy_(f)\n        return held",
      "        return fresh", EXPLOITS),
    # -- #42: behaviours an independent mutation run found unheld
    M("an early stop reports the nominal 95% CI", "perfbench/pipeline/score_processes.py",
      "confidence=rule.reported_confidence(decision)),", "confidence=rule.confidence),", EARLY_STOP),
    M("the look's confidence never reported", "perfbench/core/stopping.py",
      "return self.confidence if decision is None else self.look_confidence", "return self.confidence", EARLY_STOP),
    M("the zygote keeps what a worker left in /dev/shm", "perfbench/isolation/processes/zygote.py",
      "                if not self.live and self.private_shm:", "                if False:",
      ["tests/adversarial/test_exploits.py::test_nothing_a_worker_leaves_in_dev_shm_reaches_the_next"]),
    M("the gate tests no input contract", "perfbench/task/contract.py",
      "for transform in spec.contract if spec.contract is not None else STANDARD:", "for transform in ():",
      ["tests/adversarial/test_exploits.py::test_a_kernel_right_only_on_what_the_generator_draws_breaks_the_input_contract",
       "tests/unit/test_fake_workers.py::test_the_contract_gate_through_a_worker_that_makes_its_own_inputs"]),
    M("a contract call's atol never widened", "perfbench/task/correctness.py",
      "            t = Tolerance(t.rtol, t.atol * atol_scale)", "            pass",
      ["tests/integration/test_shipped_tasks.py::test_cpu_task_solution_baseline_and_starter_match_the_reference_on_every_size"]),
    M("the score's deadline never limits a request", "perfbench/isolation/processes/worker_client.py",
      "limit, by_deadline = (timeout_s, False) if self.deadline is None else self.deadline.bound(timeout_s)",
      "limit, by_deadline = (timeout_s, False)",
      ["tests/integration/test_score_batch.py::test_a_candidate_past_the_scores_deadline_is_its_verdict_not_a_retry"]),
    M("the worker's LOAD seeds derived from the timing key", "perfbench/core/score_key.py",
      'return keyed_seed(self.worker, "init")', 'return keyed_seed(self.timing, "init")',
      ["tests/unit/test_fake_workers.py::test_no_worker_is_handed_a_value_of_the_timing_key"]),
    M("every worker process gets the master seed", "perfbench/pipeline/score_processes.py",
      "seed=su.key.process_seed(j),", "seed=su.key.timing,", EARLY_STOP),
    M("s_ref = the mean of the calibration runs", "perfbench/pipeline/calibrate.py",
      "Calibration(spec.name, statistics.median(speedups),", "Calibration(spec.name, statistics.mean(speedups),",
      ["tests/unit/test_calibration_plan.py"]),
    M("run-to-run records every run as stable", "perfbench/selfcheck/run_to_run.py",
      '"unstable": bool(st and st.unstable)', '"unstable": False', ["tests/unit/test_selfcheck.py"]),
    M("the warm parent's privilege drop fails (spawned instead)", "perfbench/isolation/sandbox/entry.py",
      "if _prctl(PR_GET_SECUREBITS) != 0:", "if True:", ESCAPES),
    M("a resumed batch re-scores rows already done", "perfbench/batch/runner.py",
      "    for r in rows:\n        if r.id in results.done:\n            continue",
      "    for r in rows:\n        if False:\n            continue", ["tests/unit/test_batch.py"]),
    M("every call of a block gets the block's first inputs", "perfbench/core/score_key.py",
      'return keyed_seed(block, "iteration", k)', 'return keyed_seed(block, "iteration")', INPUTS),
    M("the worker calls every iteration on the first staged view", "perfbench/isolation/wire/arena.py",
      'dict(u, base=start + k * u["stride"])', 'dict(u, base=start)', INPUTS),
    M("every timed block's inputs start on a page boundary (#38, protocol 5)", "perfbench/sides/cpu_side.py",
      "BlockLayout.of(block, start=in_page_start(seed))\n        overhead", "BlockLayout.of(block, start=0)\n        overhead",
      ["tests/unit/test_fake_workers.py"]),
    # -- #63: fresh mutations that survived, each now held by a named test
    M("the pair bootstrap's period correction with its sign flipped", "perfbench/core/crossover.py",
      "np.concatenate([a - p[:, None], b + p[:, None]], axis=1)", "np.concatenate([a + p[:, None], b - p[:, None]], axis=1)",
      ["tests/unit/test_stats.py::test_the_pair_bootstrap_removes_the_period_effect_from_an_unbalanced_run"]),
    M("the t interval over processes always at 95%", "perfbench/core/stats.py",
      "t_lo, t_hi = process_t_interval(stability.process_speedups, confidence)",
      "t_lo, t_hi = process_t_interval(stability.process_speedups)",
      ["tests/unit/test_stats.py::test_summarize_gives_the_confidence_it_is_asked_for_with_processes_too"]),
    M("interim looks at the nominal CI, not the widened one", "perfbench/core/stopping.py",
      "seed=seed, confidence=rule.look_confidence,", "seed=seed, confidence=rule.confidence,",
      ["tests/unit/test_stopping.py::test_an_interim_look_decides_on_the_widened_ci_not_the_nominal_one"]),
    M("a worker may answer any word.code", "perfbench/isolation/processes/worker_client.py",
      'CANDIDATE_REASON = re.compile(r"(candidate|tamper|correctness|output|resource|worker)\\.[a-z_]{1,40}")',
      'CANDIDATE_REASON = re.compile(r"[a-z]+\\.[a-z_]{1,40}")',
      ["tests/unit/test_protocol_ops.py::test_a_worker_may_only_blame_the_candidate"]),
    M("v1 swap not limited (memory.memsw)", "perfbench/isolation/sandbox/cgroup.py",
      '                write(own / "memory.memsw.limit_in_bytes", str(limit))\n', "                pass\n",
      ["tests/integration/test_cgroup.py::test_a_worker_cgroup_limits_its_memory_and_counts_the_kill"]),
    M("bfloat16 tolerance 10x looser", "perfbench/task/correctness.py",
      "torch.bfloat16: (2e-2, 1e-2)", "torch.bfloat16: (2e-1, 1e-1)",
      ["tests/unit/test_correctness.py::test_each_tolerance_passes_its_own_rounding_and_fails_a_lower_precision"]),
    M("the live s_ref warning reads the candidate's speedup", "perfbench/pipeline/score_processes.py",
      "if comparison.solution is not None and comparison.solution_summary.speedup.value <= 1.0:",
      "if comparison.solution is not None and comparison.summary.speedup.value <= 1.0:",
      ["tests/unit/test_fake_workers.py::test_a_live_solution_no_faster_than_the_baseline_is_said_whatever_the_candidate"]),
    M("a block's last call never checked", "perfbench/sides/cpu_side.py",
      "k = secrets.randbelow(len(block))", "k = secrets.randbelow(len(block) - 1)",
      ["tests/unit/test_fake_workers.py::test_the_checked_call_of_a_timed_block_may_be_its_last"]),
    M("a block's last call never checked (guarded for one-call blocks)", "perfbench/sides/cpu_side.py",
      "k = secrets.randbelow(len(block))", "k = secrets.randbelow(max(len(block) - 1, 1))",
      ["tests/unit/test_fake_workers.py::test_the_checked_call_of_a_timed_block_may_be_its_last"]),
    # -- #64: nothing outlives a killed scorer
    M("the orphan guard is never told what the scorer made", "perfbench/isolation/sandbox/orphan_guard.py",
      'os.write(self._fd, f"{kind} {value}\\n".encode())', "pass",
      ["tests/integration/test_killed_scorer.py"]),
    M("a forked worker outlives its zygote", "perfbench/isolation/processes/zygote.py",
      "            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)\n", "",
      ["tests/integration/test_fork_server.py::test_a_forked_worker_dies_with_its_zygote_whoever_holds_its_channel"]),
    M("the drawn in-page offset is ignored by the worker's views", "perfbench/isolation/wire/arena.py",
      'u, start = spec["uniform"], spec.get("start", 0)', 'u, start = spec["uniform"], 0', INPUTS),
    # -- #58 (6): the input contract among the timed blocks
    M("contract blocks never drawn", "perfbench/sides/contract_blocks.py",
      "if not self.transforms or self._rng.random() >= self.share:", "if True:",
      ["tests/unit/test_contract_blocks.py", "tests/unit/test_fake_workers.py::"
       "test_contract_blocks_run_on_both_sides_between_pairs_and_reject_a_candidate_that_counts_its_calls"]),
    M("a contract block run untransformed", "perfbench/sides/cpu_side.py",
      "block = plan.transformed(usual, transform)", "block = usual",
      ["tests/unit/test_fake_workers.py::"
       "test_contract_blocks_run_on_both_sides_between_pairs_and_reject_a_candidate_that_counts_its_calls"]),
    M("the candidate's contract block unchecked", "perfbench/sides/cpu_side.py",
      "        if self.program is None:\n            return\n        k = plan.checked_iteration(iters)",
      "        if True:\n            return\n        k = plan.checked_iteration(iters)",
      ["tests/unit/test_fake_workers.py::"
       "test_contract_blocks_run_on_both_sides_between_pairs_and_reject_a_candidate_that_counts_its_calls"]),
    M("a CUDA worker ignores a contract block's transform", "perfbench/isolation/processes/own_input_requests.py",
      'if req.get("transform"):   # a contract block', 'if False:   # a contract block',
      ["tests/unit/test_fake_workers.py::test_a_contract_block_through_a_worker_that_makes_its_own_inputs"]),
    M("only the candidate runs contract blocks", "perfbench/pipeline/score_processes.py",
      "pair_end=pair_end(cand_side, [base_side, *others.values()], plan),",
      "pair_end=pair_end(cand_side, [cand_side], plan),",
      ["tests/unit/test_fake_workers.py::"
       "test_contract_blocks_run_on_both_sides_between_pairs_and_reject_a_candidate_that_counts_its_calls"]),
]


def copy_repo(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = REPO / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)


def run_tests(root: Path, tests: tuple[str, ...], timeout_s: float | None = 300) -> tuple[bool, float, str]:
    """(passed, seconds, output tail).  A run past `timeout_s` counts as failed: a mutation that
    makes the tests hang (a stop condition removed) is caught, just slowly."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
                              cwd=root, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(root)),
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, time.perf_counter() - t0, "timed out"
    return proc.returncode == 0, time.perf_counter() - t0, proc.stdout[-1500:]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="substrings of mutation names to run")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    chosen = [m for m in MUTATIONS if not args.only or any(o in m.name for o in args.only)]
    if args.list:
        for m in chosen:
            print(f"{m.name:55s} {m.file}")
        return 0
    survived = 0
    with tempfile.TemporaryDirectory(prefix="perfbench-mutant-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)   # the sandboxed worker runs as `nobody` and must read perfbench here
        copy_repo(root)
        tests = tuple(sorted({t for m in chosen for t in m.tests}))
        ok, secs, out = run_tests(root, tests, timeout_s=None)
        print(f"{'unmutated copy':55s} {'passes' if ok else 'FAILS'} {secs:6.1f}s", flush=True)
        if not ok:
            print(out)
            return 1
        for m in chosen:
            path = root / m.file
            original = path.read_text()
            if original.count(m.old) != 1:
                print(f"{m.name:55s} BAD MUTATION: pattern found {original.count(m.old)} times in {m.file}")
                return 1
            path.write_text(original.replace(m.old, m.new))
            try:
                ok, secs, _ = run_tests(root, m.tests)
            finally:
                path.write_text(original)
            survived += ok
            print(f"{m.name:55s} {'SURVIVED' if ok else 'caught'} {secs:6.1f}s", flush=True)
    print(f"{len(chosen) - survived} caught, {survived} survived")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
