"""What a worker process holds once it has loaded its side (baseline or candidate): the loaded
callable, its timer and tripwires, the last block's outputs; and the rejection for an exception
its code raised.  Both request families (arena_requests.py on the CPU, own_input_requests.py on
CUDA and for contract blocks) work on it."""
from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import Any


def raised_by_candidate(exc: Exception) -> Exception:
    """The rejection for an exception from candidate code.  A limit of its sandbox it ran into
    has a code of its own (#39: `resource.disk` for its private tmpfs or the file-size limit,
    `resource.memory`, `resource.pids` for threads it could not start), so a verdict says which
    limit, not only that the call raised."""
    import errno

    from ...core.errors import CandidateRejected
    from ...task.user_files import describe_exception

    if isinstance(exc, MemoryError):
        code = "resource.memory"
    elif isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        code = "resource.disk"
    elif isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        code = "resource.pids"
    else:
        code = "candidate.raised"
    return CandidateRejected(code, f"raised {describe_exception(exc)}")


class WorkerState:
    """The side this worker loaded (its code, timer, tripwires) and what both kinds of requests
    share: the loaded callable's calls and the last block's outputs, kept until read."""

    def __init__(self) -> None:
        import torch

        threads = os.environ.get("OMP_NUM_THREADS")
        if threads and threads.isdigit() and int(threads) > 0:
            torch.set_num_threads(int(threads))   # the task's count, whatever torch chose
        self.torch = torch
        self.program = None
        self.fn = None
        self.integrity = None
        self.device = "cpu"
        self.timer = None
        self.flush = None
        self.last_block: tuple[list, tuple, tuple | None] = ([], (), None)

    def load(self, req: dict[str, Any]) -> tuple[dict, list]:
        from ...core.errors import CandidateRejected
        from ...task.program import TaskProgram
        from ...task.spec import TaskSpec
        from ...timing.cuda.timer import CudaEventTimer
        from ...timing.flush import flusher_for
        from ...timing.timers import CpuTimer
        from .integrity import Integrity

        self.device = req["device"]
        spec = TaskSpec.from_dict(req["task"])
        self.program = TaskProgram(spec, self.device, init_seed=req["init_seed"])
        self.timer = (CudaEventTimer(self.device, mode=req.get("timing_mode", "events"))
                      if self.device.startswith("cuda") else CpuTimer())
        self.flush = flusher_for(self.device, req["cache_flush"])
        # Warm the framework before the snapshot so its own lazily started threads are not blamed.
        self.torch.ones(8, device=self.device).sum().item()
        self.integrity = Integrity()
        # Packages this side imports from a checkout rather than the installed copy (nothing of
        # them is imported yet: the zygote imports torch and perfbench only).
        sys.path[:0] = [str(p) for p in req.get("import_paths", ())]
        self.fn = self.program.load_callable(Path(req["file"]), untrusted=req["untrusted"])
        probe = self.program.make_inputs(req["probe_seed"], req["probe_size"])
        try:
            inspect.signature(self.fn).bind(*probe)
        except TypeError as exc:
            raise CandidateRejected("candidate.signature", f"{req['file']}: cannot be called with the task's "
                                    f"{len(probe)} inputs: {exc}") from None
        except ValueError:
            pass  # builtins without a signature: the call itself will tell
        self.check_integrity()
        return {"ok": True}, []

    def call(self, inputs: tuple) -> Any:
        try:
            with self.torch.no_grad():
                out = self.fn(*inputs)
            self.sync()
        except Exception as exc:  # noqa: BLE001 - candidate code
            raise raised_by_candidate(exc) from None
        return out

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize(self.device)

    def check_integrity(self) -> None:
        from ...core.errors import CandidateRejected

        bad = self.integrity.violations()
        if bad:
            raise CandidateRejected(*bad[0])

    def poison(self, nbytes: int, pattern: int) -> None:
        """Fill memory the allocator will hand out next with `pattern` bytes.

        Blocks of the expected output's size are filled and freed, so an output allocated but
        never written usually comes back holding the pattern.  Usually: the scorer does not rely
        on it, it calls twice with different patterns and compares (correctness.judge_repeated_call).
        """
        n = max(int(nbytes), 1)
        # Several blocks: the allocator hands back one of the most recently freed of a size.
        junk = [self.torch.full((n,), pattern, dtype=self.torch.uint8, device=self.device)
                for _ in range(32 if n < (1 << 16) else 2)]
        del junk
