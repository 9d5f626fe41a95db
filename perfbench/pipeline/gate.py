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
from ..isolation.processes.worker_handle import WorkerClient
from ..isolation.processes.zygote_handle import ForkServer
from ..isolation.wire.arena import InputLayout
from ..isolation.wire.protocol import Op, ProtocolError, decode_values
from ..sides.cpu_side import ARENA_SLACK, ArenaSide, map_arenas
from ..sides.cuda_side import reply_budget, verify_call
from ..task.correctness import POISON_PATTERNS, Failure, Tolerance, judge_repeated_call, outputs_differ
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
    tol = task_tolerance(program.spec)
    items = [(size, seed) for size in program.spec.sizes for seed in seeds]
    checks = 0
    with ThreadPoolExecutor(1, thread_name_prefix="perfbench-gate") as pool:
        made = pool.submit(_expected_for, program, *items[0])
        for i, (size, seed) in enumerate(items):
            x, ref = made.result()
            if i + 1 < len(items):
                made = pool.submit(_expected_for, program, *items[i + 1])
            # The output's size sizes the poison written before each call.
            poison_bytes = sum(t.numel() * t.element_size() for t in ref[0] if hasattr(t, "numel"))
            calls = []
            for pattern in POISON_PATTERNS:
                if side is not None:
                    outs, ins = side.gate_call(x, poison_bytes, pattern, ref[0])
                    calls.append((outs, verify_call(program, x, outs, ins, tol, expected=ref)))
                    continue
                header, blobs = client.request(Op.CHECK, timeout_s, seeds=[seed], size=size,
                                               poison_bytes=poison_bytes, poisons=[pattern],
                                               reply_bytes=reply_budget(x, ref[0]))
                try:
                    outs, ins = _one_call(header, blobs)
                    calls.append((outs, verify_call(program, x, outs, ins, tol, expected=ref)))
                except (KeyError, TypeError, ValueError, ProtocolError) as exc:
                    raise CandidateRejected("tamper.protocol", f"{client.label}: bad check reply: {exc}") from None
            differ = any(outputs_differ(calls[0][0], outs) for outs, _ in calls[1:])
            fails = judge_repeated_call([f for _, f in calls], differ)
            checks += 1
            if fails:
                made.cancel()
                return checks, [Failure(f.reason, f"size {size!r}: {f.message}") for f in fails]
    return checks, []


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


def gate_only(task: str | Path, candidate: str | Path, config: ScoreConfig | None = None) -> tuple[int, list[Failure]]:
    """The correctness gate alone (selfcheck, quick checks): (checks run, failures)."""
    cfg = config or ScoreConfig()
    spec = load_task(task)
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
            return gate(w, program, seeds, cfg.call_timeout_s, side)
        except CandidateRejected as exc:
            return 0, [Failure(exc.reason, exc.message)]
