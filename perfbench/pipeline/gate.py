"""The correctness gate, and what it shares with the timing run: seeds, tolerances, loading a
side into its worker, the candidate's sandboxed worker; `gate_only`, the gate without timing."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..core.deadline import Deadline
from ..core.errors import CandidateRejected
from ..core.score_key import ScoreKey
from ..device.check import check_device
from ..isolation.processes.cpu_threads import CpuThreading
from ..isolation.processes.worker_client import WorkerClient
from ..isolation.processes.fork_server import ForkServer
from ..isolation.wire.arena import InputLayout
from ..isolation.wire.protocol import Op, ProtocolError, decode_values
from ..sides.cpu_side import ARENA_SLACK, ArenaSide, map_arenas
from ..sides.output_checks import reply_budget, verify_call
from ..task.correctness import POISON_PATTERNS, Failure, Tolerance, judge_repeated_call, outputs_differ
from ..task.contract import contract_calls, contract_failures
from ..task.program import TaskProgram
from ..task.spec import TaskSpec, load_task
from .config import ScoreConfig
from .sandboxes import candidate_files


def task_tolerance(spec: TaskSpec) -> Tolerance | None:
    if spec.rtol is None and spec.atol is None:
        return None  # per-dtype defaults
    return Tolerance(spec.rtol if spec.rtol is not None else 0.0, spec.atol if spec.atol is not None else 0.0)


def load_side(client: WorkerClient, spec: TaskSpec, device: str, file: Path, cfg: ScoreConfig,
              init_seed: int, probe_seed: int, timing_mode: str = "events") -> None:
    # Absolute paths: a sandboxed worker's working directory is its private directory.
    task = dict(spec.to_dict(), root=str(spec.root.resolve()))
    packages = cfg.cand_packages if client.untrusted else cfg.base_packages
    client.request(Op.LOAD, cfg.load_timeout_s, task=task, device=device, file=str(file.resolve()),
                   untrusted=client.untrusted, init_seed=init_seed, cache_flush=cfg.sampler.cache_flush,
                   probe_seed=probe_seed, probe_size=spec.sizes[0], timing_mode=timing_mode,
                   import_paths=[str(p.import_root) for p in packages])


def gate(client: WorkerClient, program: TaskProgram, seeds: list[int], timeout_s: float,
         side: ArenaSide | None = None) -> tuple[int, list[Failure]]:
    """Run the candidate on every size with fresh seeds, twice per input set (one call per
    poison pattern); compare in this process.

    On the CPU (`side`, the candidate's arena side) each call is made like a timed one: the
    scorer's inputs written into the arena, the outputs read from the frozen worker's memory, so
    no value the candidate's process encodes decides the gate (#39: a candidate that replaced
    the encoder passed with garbage outputs).  On CUDA the worker still encodes its outputs
    (`check`): device memory is not the process's to read (docs/security.md, not defended yet).

    One call per request, so a call that hangs is killed after `timeout_s`, as `--timeout`
    promises, not after that times the number of calls.  The first call gets no more: it
    includes any compiling on first use (Triton, torch.compile), which `--timeout` must allow.

    The gate is not timed, so the scorer makes the next input set and its expected outputs on a
    thread while the worker runs this set's calls and this one is judged (row_softmax's gate on a
    Zen 3 host: 2.07-2.19 s when the scorer made them in turn, 1.59-1.79 s so).  Each set is
    judged before the next set's calls, so a wrong kernel stops the gate at its first wrong set."""
    items = [(size, seed) for size in program.spec.sizes for seed in seeds]
    checks = 0
    with ThreadPoolExecutor(1, thread_name_prefix="perfbench-gate") as pool:
        made = pool.submit(_expected_for, program, *items[0])
        for i, (size, seed) in enumerate(items):
            x, ref = made.result()
            if i + 1 < len(items):
                made = pool.submit(_expected_for, program, *items[i + 1])
            calls = [_checked_call(client, program, side, (size, seed, None), x, ref, pattern, timeout_s)
                     for pattern in POISON_PATTERNS]
            differ = any(outputs_differ(calls[0][0], outs) for outs, _ in calls[1:])
            fails = judge_repeated_call([f for _, f in calls], differ)
            checks += 1
            if fails:
                made.cancel()
                return checks, [Failure(f.reason, f"size {size!r}: {f.message}") for f in fails]
    return checks, []


def _checked_call(client: WorkerClient, program: TaskProgram, side: ArenaSide | None,
                  made: tuple[str, int, str | None], x: tuple, ref: tuple[list, list | None], pattern: int,
                  timeout_s: float, atol_scale: float = 1.0) -> tuple[list, list[Failure]]:
    """One gate call on `x` (made from (size, seed, contract transform)), after the memory the
    allocator hands out next was filled with `pattern`: its outputs and what is wrong with them
    (`atol_scale`: correctness.check_outputs)."""
    tol = task_tolerance(program.spec)
    poison_bytes = sum(t.numel() * t.element_size() for t in ref[0] if hasattr(t, "numel"))  # sizes the poison
    if side is not None:
        outs, ins = side.gate_call(x, poison_bytes, pattern, ref[0])
        return outs, verify_call(program, x, outs, ins, tol, expected=ref, atol_scale=atol_scale, size=made[0])
    size, seed, transform = made   # CUDA: the worker makes the inputs, from the same seed and transform
    header, blobs = client.request(Op.CHECK, timeout_s, seeds=[seed], size=size, poison_bytes=poison_bytes,
                                   poisons=[pattern], reply_bytes=reply_budget(x, ref[0]),
                                   **({"transform": transform} if transform else {}))
    try:
        outs, ins = _one_call(header, blobs)
        return outs, verify_call(program, x, outs, ins, tol, expected=ref, atol_scale=atol_scale, size=made[0])
    except (KeyError, TypeError, ValueError, ProtocolError) as exc:
        raise CandidateRejected("tamper.protocol", f"{client.label}: bad check reply: {exc}") from None


def contract_gate(client: WorkerClient, program: TaskProgram, seed: int, timeout_s: float,
                  side: ArenaSide | None = None) -> tuple[int, list[Failure], dict]:
    """The task's input contract (task/contract.py): every size's inputs of `seed`, under each
    transform the task declares (the standard ones if it declares none), where the task's
    reference stays defined and finite (in float64 too).  One call each, after the first poison
    (the gate proper caught reads of memory never written).  Returns (calls, failures, the
    record the verdict keeps: the transforms run and those skipped, with why); a wrong output
    is `correctness.contract`, naming the transform."""
    record: dict = {"declared": program.spec.contract is not None, "transforms": [], "skipped": {}}
    checks = 0
    for call in contract_calls(program, seed):
        if call.skipped is not None:
            record["skipped"][call.transform] = call.skipped
            continue
        _, fails = _checked_call(client, program, side, (call.size, seed, call.transform), call.inputs,
                                 call.expected, POISON_PATTERNS[0], timeout_s, call.atol_scale)
        checks += 1
        if fails:
            return checks, contract_failures(call.transform, f"size {call.size!r}", fails), record
        if call.last:
            record["transforms"].append(call.transform)
    return checks, [], record


def gate_with_contract(client: WorkerClient, program: TaskProgram, seeds: list[int], contract_seed: int,
                       timeout_s: float, side: ArenaSide | None = None) -> tuple[int, list[Failure], dict | None]:
    """The whole gate: `gate` on the task's own draws, then, if it passed, `contract_gate`.
    Returns (calls, failures, the contract's record; None when the gate proper failed)."""
    checks, fails = gate(client, program, seeds, timeout_s, side)
    if fails:
        return checks, fails, None
    n, fails, record = contract_gate(client, program, contract_seed, timeout_s, side)
    return checks + n, fails, record


def _expected_for(program: TaskProgram, size: str, seed: int) -> tuple[tuple, tuple[list, list | None]]:
    """The scorer's own inputs for `seed` and what they should give: (reference, float64 oracle)."""
    x = program.make_inputs_many([seed], size)[0]
    return x, (program.reference(x), program.oracle(x))


def _one_call(header: dict, blobs: list) -> tuple[list, list]:
    """The outputs and inputs of the one call a `check` reply describes."""
    results = header["results"]
    if not isinstance(results, list) or len(results) != 1:
        raise ProtocolError(f"{len(results)} results for 1 call")
    n_out, n_in = len(results[0]["outputs"]), len(results[0]["inputs"])
    if len(blobs) != n_out + n_in:
        raise ProtocolError(f"{len(blobs)} buffers for {n_out} outputs and {n_in} inputs")
    return decode_values(results[0]["outputs"], blobs[:n_out]), decode_values(results[0]["inputs"], blobs[n_out:])


def candidate_worker(spec: TaskSpec, cand_path: Path, cfg: ScoreConfig,
                     threading: CpuThreading | None = None, server: ForkServer | None = None,
                     deadline: Deadline | None = None) -> WorkerClient:
    """The candidate's worker, sandboxed (`candidate_files` says what it sees); forked from
    `server` (started with the same files) when there is one; its requests end by `deadline`."""
    if server is not None:   # forked into the zygote's sandbox, planned with these files already
        return WorkerClient("candidate", untrusted=True, sandbox=cfg.sandbox, threading=threading, server=server,
                            deadline=deadline)
    expose, hide = candidate_files(spec, cand_path, cfg.cand_packages)
    return WorkerClient("candidate", untrusted=True, sandbox=cfg.sandbox, hide=hide, expose=expose,
                        threading=threading, deadline=deadline)


def gate_only(task: str | Path | TaskSpec, candidate: str | Path,
              config: ScoreConfig | None = None) -> tuple[int, list[Failure]]:
    """The correctness gate alone, its input contract included (selfcheck, quick checks):
    (checks run, failures)."""
    cfg = config or ScoreConfig()
    spec = task if isinstance(task, TaskSpec) else load_task(task)
    device = check_device(cfg.device or spec.device)
    key = ScoreKey.fresh()
    init_seed, probe_seed, seeds = key.init_seed, key.probe_seed, key.check_seeds(cfg.check_seeds)
    program = TaskProgram(spec, device, init_seed=init_seed)
    with candidate_worker(spec, Path(candidate), cfg) as w:
        try:
            w.start(cfg.load_timeout_s)
            side = None
            if device == "cpu":   # the arenas mapped before any task code loads, as for a score
                probe = program.make_inputs(probe_seed, spec.timed_size)
                expected = program.reference(probe)
                base = map_arenas(w, ARENA_SLACK * InputLayout.of(probe).stride, expected, 1, cfg.call_timeout_s)
                side = ArenaSide(w, program, None, expected, base, cfg.call_timeout_s)
            load_side(w, spec, device, Path(candidate), cfg, init_seed, probe_seed)
            checks, fails, _ = gate_with_contract(w, program, seeds, key.contract_seed(), cfg.call_timeout_s, side)
            return checks, fails
        except CandidateRejected as exc:
            return 0, [Failure(exc.reason, exc.message)]
