"""Error types and the exit codes the CLI maps them to.

A user's mistake (bad file, bad field, missing function) is a `UsageError`: the CLI prints its
one-line message and exits 2.  A candidate that fails the correctness gate or is caught
tampering is a `CandidateRejected` with a stable reason code: exit 1.  Anything else escaping to
the CLI is perfbench's own bug and keeps its traceback.
"""
from __future__ import annotations

EXIT_REJECTED = 1
EXIT_USAGE = 2


class Terminated(SystemExit):
    """SIGTERM's exit (128 + the signal): unwinds like Ctrl-C.

    It lives below every layer because code that runs a user's file and reports what it raised
    (task.user_files) must let it pass, as it lets KeyboardInterrupt pass: a SIGTERM that
    arrives while a task's inputs.py imports stops the scorer; it is not that file's error."""


class PerfbenchError(Exception):
    """Base class for errors perfbench reports without a traceback."""

    exit_code = EXIT_USAGE


class UsageError(PerfbenchError):
    """The user asked for something that cannot work: missing file, bad field, bad option."""

    exit_code = EXIT_USAGE


class EnvironmentUnavailable(PerfbenchError):
    """The machine lacks what was asked for (no CUDA device, no NVML, no compiler)."""

    exit_code = EXIT_USAGE


class CandidateRejected(PerfbenchError):
    """Code under test failed: wrong output, exception, hang, tampering.

    `reason` is a stable dotted code (``correctness.shape``, ``candidate.raised``, ...) that
    tools and tests can match on; `message` explains it to a person.
    """

    exit_code = EXIT_REJECTED

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}"
