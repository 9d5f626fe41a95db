"""The executable side of a task: input maker, reference, and the callables under test.

Used by the scorer (inputs, reference, oracle: trusted) and by worker processes (inputs and the
baseline/candidate callable).  One class for both task formats so callers never branch on it.
"""
from __future__ import annotations

import copy
import os
import time
import threading
from pathlib import Path
from typing import Any, Callable, Collection, Sequence

import torch

from ..core.errors import CandidateRejected, UsageError
from .correctness import Failure, OutputRecord
from .gpumode import GpuModeProblem
from .output_signature import as_outputs
from .solexec import DEFINITION
from .solexec_problem import SolExecProblem
from .spec import FORMAT_GPUMODE, FORMAT_KERNELBENCH, FORMAT_SOLEXEC, TaskSpec
from .user_files import describe_exception, get_callable, load_module


# Below this much serial work (calls x the size's first call) a block's inputs are made serially.
THREADED_INPUTS_MIN_S = 0.005


def _to_device(x: Any, device: str) -> Any:
    return x.to(device) if isinstance(x, torch.Tensor) else x


def _upcast(x: Any) -> Any:
    if isinstance(x, torch.Tensor) and x.is_floating_point():
        return x.to(torch.float64)
    return x


def _on_pinned_threads(work: Callable[[list], list], shares: list[list], cores: Collection[int]) -> list[list]:
    """work(share) for every share, each on a thread of its own pinned to `cores`, in order.

    One thread per share, not a pool: a pool hands the second share to the first thread when that
    one is already idle (a preempted submitter), leaving a core unused; seen as a flaky test."""
    results: list[list] = [[] for _ in shares]
    errors: list[BaseException | None] = [None] * len(shares)

    def run(i: int) -> None:
        try:
            os.sched_setaffinity(0, cores)
            results[i] = work(shares[i])
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread below
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,), name=f"perfbench-inputs-{i}", daemon=True)
               for i in range(len(shares))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for exc in errors:
        if exc is not None:
            raise exc
    return results


class TaskProgram:
    """A task's trusted code loaded into this process, for one device."""

    def __init__(self, spec: TaskSpec, device: str, init_seed: int = 0):
        self.spec = spec
        self.device = device
        self.init_seed = init_seed
        self._gpumode: GpuModeProblem | None = None
        self._solexec: SolExecProblem | None = None
        if spec.format == FORMAT_SOLEXEC:
            self._solexec = SolExecProblem(spec, device)
            self._make = self._solexec.inputs
            self._reference = self._reference_model = None
        elif spec.format == FORMAT_GPUMODE:
            # --device cpu for a CUDA problem: what it makes on cuda is made here (gpumode.cuda_on_cpu)
            self._gpumode = GpuModeProblem(spec.root, spec.cases, on_cpu=device == "cpu")
            self._make = self._gpumode.inputs
            self._reference = self._reference_model = None
        elif spec.format == FORMAT_KERNELBENCH:
            self._problem = load_module(spec.root)
            for key, value in spec.overrides.items():
                setattr(self._problem, key, value)
            self._make = lambda seed, size: self._kernelbench_inputs(seed)
            self._reference_model = self._build(get_callable(self._problem, "Model", spec.root))
            self._reference = self._reference_model
        else:
            inputs_mod = load_module(spec.file("inputs"))
            self._make = get_callable(inputs_mod, "make_inputs", spec.file("inputs"))
            self._reference = None   # loaded on first use: a sandboxed worker never reads it
            self._reference_model = None
        # Input sets are made on threads only by a maker that keeps to its own generator
        # (docs/tasks.md).  A KernelBench problem seeds the global RNG; a maker seen to move the
        # global RNG is never threaded again.
        # A GPU MODE problem run on the CPU makes its inputs under gpumode.cuda_on_cpu, which swaps
        # torch.Generator for the whole process while it runs: one thread at a time.
        # A SOL-ExecBench problem's own input maker (custom inputs) seeds the global RNG too.
        self._threaded_inputs = spec.format != FORMAT_KERNELBENCH and not (self._gpumode and self._gpumode.on_cpu) \
            and not (self._solexec and self._solexec.custom)
        self._input_call_s: dict[str, float] = {}   # per size: its first call's time

    # -- inputs and reference (trusted) -------------------------------------------------------
    def _kernelbench_inputs(self, seed: int) -> tuple:
        # KernelBench problems draw from the global RNG: seed it per input set.
        torch.manual_seed(seed)
        return tuple(get_callable(self._problem, "get_inputs", self.spec.root)())

    def make_inputs(self, seed: int, size: str) -> tuple:
        try:
            args = self._make(seed, size)
        except Exception as exc:  # noqa: BLE001 - task code
            raise UsageError(f"{self.spec.name}: input maker failed for size {size!r}: {describe_exception(exc)}") from None
        if not isinstance(args, (tuple, list)):
            raise UsageError(f"{self.spec.name}: make_inputs must return a tuple, got {type(args).__name__}")
        return tuple(_to_device(a, self.device) for a in args)

    def without_outputs(self, inputs: tuple) -> tuple:
        """A call's inputs less the outputs a destination-passing candidate is handed after them."""
        return inputs[:self._solexec.n_inputs] if self._solexec is not None else inputs

    def make_inputs_many(self, seeds: Sequence[int], size: str,
                         cores: Collection[int] | None = None) -> list[tuple]:
        """`make_inputs` for each seed, in order: split between threads, one per core of `cores`
        (default: every core this process may use), each thread pinned to them; torch's
        generators release the GIL.  The first seed of each size is made alone, timed (small
        work stays serial: starting threads costs ~1 ms) and watching the global RNG."""
        seeds = list(seeds)
        made = []
        if seeds and size not in self._input_call_s:
            before = torch.random.get_rng_state()
            t0 = time.perf_counter()
            made.append(self.make_inputs(seeds.pop(0), size))
            self._input_call_s[size] = time.perf_counter() - t0
            if not torch.equal(before, torch.random.get_rng_state()):
                self._threaded_inputs = False   # it draws from the global RNG: threads would race on it
        cores = sorted(os.sched_getaffinity(0) if cores is None else cores)
        threads = min(len(seeds), len(cores))
        if (not self._threaded_inputs or threads < 2
                or len(seeds) * self._input_call_s.get(size, 0.0) < THREADED_INPUTS_MIN_S):
            return made + [self.make_inputs(seed, size) for seed in seeds]
        shares = [seeds[i::threads] for i in range(threads)]
        done = _on_pinned_threads(lambda share: [self.make_inputs(seed, size) for seed in share], shares, cores)
        rest: list[tuple] = [()] * len(seeds)
        for i, share in enumerate(done):
            rest[i::threads] = share
        return made + rest

    def _reference_fn(self) -> Callable[..., Any]:
        if self._reference is None:
            path = self.spec.file("reference")
            self._reference = get_callable(load_module(path), "reference", path)
        return self._reference

    def reference(self, inputs: tuple) -> list[torch.Tensor]:
        with torch.no_grad():
            if self._gpumode is not None:
                return as_outputs(self._gpumode.reference(inputs))
            if self._solexec is not None:
                return self._solexec.reference(inputs)
            return as_outputs(self._reference_fn()(*inputs))

    @property
    def judges_itself(self) -> bool:
        """Whether `judge` decides (so no reference output need be computed for a check)."""
        return self._gpumode is not None or self._solexec is not None

    def judge(self, inputs: tuple, outs: list[OutputRecord], ins: list[OutputRecord],
              atol_scale: float = 1.0, *, size: str) -> list[Failure] | None:
        """The problem's own verdict on one call's outputs (GPU MODE: check_implementation, which
        may let a call write into its inputs; SOL-ExecBench: its tolerance rules), or None where
        perfbench's comparison decides."""
        if self._solexec is not None:
            return self._solexec.judge(inputs, outs, ins, size, atol_scale)
        if self._gpumode is None:
            return None
        if len(outs) != 1 or outs[0].tensor is None:
            return [Failure("output.structure", f"{len(outs)} outputs ({', '.join(o.type_name for o in outs)}); "
                                                "custom_kernel returns one tensor")]
        with torch.no_grad():   # (values read back arrive on the CPU; the reference runs on the device)
            message = self._gpumode.check(inputs, outs[0].tensor.to(self.device))
        return [] if message is None else [Failure("correctness.mismatch", f"check_implementation: {message[:300]}")]

    def oracle(self, inputs: tuple) -> list[torch.Tensor] | None:
        """The reference computed in float64 (None if the task's reference cannot run so)."""
        if self._gpumode is not None or self._solexec is not None:
            return None   # the problem judges, at its own tolerance
        fn = self._reference_fn()
        if self._reference_model is not None:
            fn = copy.deepcopy(self._reference_model).to(torch.float64)
        try:
            with torch.no_grad():
                return as_outputs(fn(*(_upcast(x) for x in inputs)))
        except (RuntimeError, TypeError):
            return None

    # -- code under test ------------------------------------------------------------------------
    def _build(self, cls: Any) -> Callable[..., Any]:
        init = get_callable(self._problem, "get_init_inputs", self.spec.root)()
        torch.manual_seed(self.init_seed)  # same initial weights for Model and ModelNew
        model = cls(*init)
        return model.to(self.device) if isinstance(model, torch.nn.Module) else model

    def load_callable(self, path: Path, *, untrusted: bool) -> Callable[..., Any]:
        """The function (or KernelBench model) in `path` that is timed and checked."""
        if self._solexec is not None:   # the definition's run (the baseline) or the solution's function
            if path.resolve() == (self.spec.root / DEFINITION).resolve():
                return self._solexec.wrap(self._solexec.run, destination_passing=False)
            module = load_module(path, untrusted=untrusted)
            fn = get_callable(module, self.spec.entry_point, path, untrusted=untrusted)
            return self._solexec.wrap(fn, self.spec.destination_passing)
        if self._gpumode is not None:   # ref_kernel (the baseline) or custom_kernel, called with data
            if path.resolve() == self.spec.file("reference").resolve():
                return self._gpumode.wrap(self._gpumode.ref_kernel)
            module = load_module(path, untrusted=untrusted)
            return self._gpumode.wrap(get_callable(module, self.spec.entry_point, path, untrusted=untrusted))
        if self.spec.format == FORMAT_KERNELBENCH and path.resolve() == self.spec.root:
            return self._build(get_callable(self._problem, "Model", path))  # the baseline
        module = load_module(path, untrusted=untrusted)
        if self.spec.format != FORMAT_KERNELBENCH:
            return get_callable(module, self.spec.entry_point, path, untrusted=untrusted)
        cls = get_callable(module, self.spec.entry_point, path, untrusted=untrusted)
        try:
            return self._build(cls)
        except Exception as exc:  # noqa: BLE001 - candidate code
            msg = f"{path}: constructing {self.spec.entry_point} failed: {describe_exception(exc)}"
            raise (CandidateRejected("candidate.raised", msg) if untrusted else UsageError(msg)) from None
