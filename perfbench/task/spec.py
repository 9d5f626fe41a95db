"""Task directories (and KernelBench problem files; GPU MODE problem directories, gpumode.py):
parsing, validation of the format, and the trusted pieces the scorer runs itself (input maker,
reference).

A task directory holds task.toml, reference.py, baseline.py, solution.py, inputs.py and
optionally starter.py and tests/ (impl tasks).  A single .py file with `Model`, `get_inputs`
and `get_init_inputs` is a KernelBench problem: its Model is both the reference and the baseline,
and a candidate defines `ModelNew`.  docs/tasks.md describes both formats.
"""
from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from .contract import parse_contract
from .work import parse_work
from .gpumode import FORMAT_GPUMODE
from .gpumode import is_problem_dir as is_gpumode_dir
from .gpumode import load as load_gpumode
from .solexec import FORMAT_SOLEXEC
from .solexec import is_problem_dir as is_solexec_dir
from .solexec import load as load_solexec

# How a CUDA task's calls may be timed (timing/cuda/modes.py chooses among them): part of the format.
TIMING_MODES = ("events", "graph", "auto")

KINDS = ("perf", "impl")
DEVICES = ("cpu", "cuda")
FORMAT_DIR = "task_dir"
FORMAT_KERNELBENCH = "kernelbench"
FORMATS = (FORMAT_DIR, FORMAT_KERNELBENCH, FORMAT_GPUMODE, FORMAT_SOLEXEC)
# CPU threads per side when a task does not say: the one setting every host can honour, so a
# task's s_ref does not change with the number of cores of whoever calibrated it.
DEFAULT_CPU_THREADS = 1
OMP_WAIT_POLICIES = ("active", "passive")
# What a task's solution is written in (task.toml `family`): how `perfbench tasks list` groups them.
FAMILIES = ("python", "cpu-cpp", "triton", "cuda-cpp", "scorch")


@dataclass(frozen=True)
class TaskSpec:
    """A parsed task.  Everything the scorer and the workers need to know, serialisable."""

    root: Path                    # the task directory, or the KernelBench file
    format: str                   # FORMATS
    name: str
    kind: str
    device: str
    entry_point: str
    description: str = ""
    sizes: tuple[str, ...] = ("default",)
    timed_size: str = "default"
    rtol: float | None = None
    atol: float | None = None
    min_pairs: int = 10
    s_ref_default: float | None = None
    overrides: dict[str, Any] = field(default_factory=dict)  # KernelBench --set NAME=VALUE
    threads: int = DEFAULT_CPU_THREADS       # [cpu] threads: both sides, CPU tasks
    omp_wait_policy: str | None = None       # [cpu] omp_wait_policy; None: the runtime's default
    shared: tuple[str, ...] = ()             # [sandbox] shared: files a candidate may read besides its own
    packages: tuple[str, ...] = ()           # [sandbox] packages: installed packages shown with their source tree
    family: str = "python"                   # what the solution is written in (FAMILIES)
    timing_mode: str = "events"              # [timing] mode: CUDA events | graph | auto (timing/cuda/timer.py)
    cases: dict[str, dict] = field(default_factory=dict)   # GPU MODE, SOL-ExecBench: size name -> its case
    benchmarks: tuple[str, ...] = ()         # GPU MODE, SOL-ExecBench: the sizes timed, one comparison each
    contract: tuple[str, ...] | None = None  # [contract] transforms; None: none declared (contract.STANDARD)
    contract_args: tuple[int, ...] | None = None   # [contract] args; None: every floating tensor
    work: dict[str, Any] | None = None       # [work] flops, bytes of one timed call (task/work.py); None: counted
    destination_passing: bool = False        # SOL-ExecBench: the candidate writes outputs it is handed after the inputs

    def file(self, role: str) -> Path:
        """Path of reference/baseline/solution/starter/inputs (task_dir format)."""
        return self.root / f"{role}.py"

    def shown_case(self, name: str) -> dict[str, Any]:
        """A benchmark's case as the verdict shows it: GPU MODE's generate_input arguments; a
        SOL-ExecBench workload's uuid and var axes (its inputs and tolerance are the problem's)."""
        case = self.cases[name]
        return {"uuid": case["uuid"], **case["vars"]} if self.format == FORMAT_SOLEXEC else dict(case)

    @property
    def tests_dir(self) -> Path:
        return self.root / "tests"

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "format": self.format, "name": self.name, "kind": self.kind,
                "device": self.device, "entry_point": self.entry_point, "description": self.description,
                "sizes": list(self.sizes), "timed_size": self.timed_size, "rtol": self.rtol,
                "atol": self.atol, "min_pairs": self.min_pairs, "s_ref_default": self.s_ref_default,
                "overrides": dict(self.overrides), "threads": self.threads,
                "omp_wait_policy": self.omp_wait_policy, "shared": list(self.shared), "family": self.family,
                "timing_mode": self.timing_mode, "packages": list(self.packages),
                "cases": {k: dict(v) for k, v in self.cases.items()}, "benchmarks": list(self.benchmarks),
                "contract": None if self.contract is None else list(self.contract),
                "contract_args": None if self.contract_args is None else list(self.contract_args),
                "work": None if self.work is None else dict(self.work),
                "destination_passing": self.destination_passing}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TaskSpec":
        d = dict(d)
        d["root"] = Path(d["root"])
        d["sizes"] = tuple(d["sizes"])
        d["shared"] = tuple(d.get("shared", ()))
        d["packages"] = tuple(d.get("packages", ()))
        d["benchmarks"] = tuple(d.get("benchmarks", ()))
        for key in ("contract", "contract_args"):
            d[key] = None if d.get(key) is None else tuple(d[key])
        return cls(**d)


def _field(table: dict, key: str, types: type | tuple, where: str, default: Any = ...) -> Any:
    if key not in table:
        if default is ...:
            raise UsageError(f"{where}: missing field '{key}'")
        return default
    value = table[key]
    # bool is an int to isinstance; a TOML `true` is never a valid number here
    if not isinstance(value, types) or (isinstance(value, bool) and types is not bool):
        raise UsageError(f"{where}: field '{key}' has the wrong type ({type(value).__name__})")
    return value


def load_task(path: str | Path, overrides: dict[str, str] | None = None) -> TaskSpec:
    """Parse a task directory or a KernelBench problem file; one-line UsageError when malformed."""
    p = Path(path).expanduser()
    if p.is_file() and p.suffix == ".py":
        return _load_kernelbench(p.resolve(), overrides or {})
    if not p.is_dir():
        raise UsageError(f"{path}: no such task directory")
    toml_path = p / "task.toml"
    if not toml_path.is_file() and is_gpumode_dir(p):
        return TaskSpec(**load_gpumode(p, overrides or {}))
    if not toml_path.is_file() and is_solexec_dir(p):
        return TaskSpec(**load_solexec(p, overrides or {}))
    if overrides:
        raise UsageError("--set applies only to KernelBench problem files, GPU MODE benchmarks and SOL-ExecBench "
                         "problems")
    if not toml_path.is_file():
        raise UsageError(f"{p}: not a perfbench task (no task.toml), a GPU MODE problem (no task.yml) nor a "
                         "SOL-ExecBench problem (no definition.json)")
    return _load_task_toml(p, toml_path)


def _load_task_toml(p: Path, toml_path: Path) -> TaskSpec:
    """A task directory's task.toml, every field checked, and the files its kind needs."""
    try:
        doc = tomllib.loads(toml_path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{toml_path}: invalid TOML: {exc}") from None
    where = str(toml_path)
    kind = _one_of(_field(doc, "kind", str, where), KINDS, where, "kind")
    device = _one_of(_field(doc, "device", str, where), DEVICES, where, "device")
    inputs = _field(doc, "inputs", dict, where, {})
    sizes = tuple(_field(inputs, "sizes", list, where + " [inputs]", ["default"]))
    if not sizes or not all(isinstance(s, str) for s in sizes):
        raise UsageError(f"{where}: [inputs] sizes must be a non-empty list of names")
    timed = _field(inputs, "timed_size", str, where + " [inputs]", sizes[-1])
    if timed not in sizes:
        raise UsageError(f"{where}: [inputs] timed_size {timed!r} is not one of sizes {list(sizes)}")
    tol = _field(doc, "tolerance", dict, where, {})
    timing = _field(doc, "timing", dict, where, {})
    s_ref = _field(timing, "s_ref", (int, float), where + " [timing]", None)
    if s_ref is not None and s_ref <= 1.0:
        raise UsageError(f"{where}: [timing] s_ref must be > 1, got {s_ref}")
    timing_mode = _one_of(_field(timing, "mode", str, where + " [timing]", "events"), TIMING_MODES, where,
                          "[timing] mode")
    threads, policy = _cpu_section(_field(doc, "cpu", dict, where, {}), where)
    family = _one_of(_field(doc, "family", str, where, "python"), FAMILIES, where, "family")
    shared, packages = _sandbox_section(_field(doc, "sandbox", dict, where, {}), where, p)
    contract, contract_args = parse_contract(_field(doc, "contract", dict, where, None), where)
    work = parse_work(_field(doc, "work", dict, where, None), where)
    spec = TaskSpec(
        root=p.resolve(), format=FORMAT_DIR, name=_field(doc, "name", str, where, p.name), kind=kind,
        device=device, entry_point=_field(doc, "entry_point", str, where, "kernel"),
        description=_field(doc, "description", str, where, ""), sizes=sizes, timed_size=timed,
        rtol=_field(tol, "rtol", (int, float), where + " [tolerance]", None),
        atol=_field(tol, "atol", (int, float), where + " [tolerance]", None),
        min_pairs=_field(timing, "pairs", int, where + " [timing]", 10),
        s_ref_default=float(s_ref) if s_ref is not None else None, threads=threads,
        omp_wait_policy=policy, shared=shared, packages=packages, family=family,
        timing_mode=timing_mode, contract=contract, contract_args=contract_args, work=work)
    required = ["reference", "baseline", "inputs", "solution"] if kind == "perf" else ["solution"]
    for role in required:
        if not spec.file(role).is_file():
            raise UsageError(f"{spec.file(role)}: missing (every {kind} task needs {role}.py)")
    if kind == "impl" and not spec.tests_dir.is_dir():
        raise UsageError(f"{spec.tests_dir}: missing (impl tasks need a tests/ folder)")
    return spec


def _one_of(value: str, allowed: tuple[str, ...], where: str, name: str) -> str:
    if value not in allowed:
        raise UsageError(f"{where}: {name} must be one of {'|'.join(allowed)}, got {value!r}")
    return value


def _cpu_section(cpu: dict, where: str) -> tuple[int, str | None]:
    """[cpu]: the task's thread count and OpenMP wait policy (lower-cased)."""
    threads = _field(cpu, "threads", int, where + " [cpu]", DEFAULT_CPU_THREADS)
    if threads < 1:
        raise UsageError(f"{where}: [cpu] threads must be >= 1, got {threads}")
    policy = _field(cpu, "omp_wait_policy", str, where + " [cpu]", None)
    if policy is not None and policy.lower() not in OMP_WAIT_POLICIES:
        raise UsageError(f"{where}: [cpu] omp_wait_policy must be one of {'|'.join(OMP_WAIT_POLICIES)}, got {policy!r}")
    return threads, policy.lower() if policy else None


def _sandbox_section(sandbox: dict, where: str, root: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """[sandbox]: the shared sources (resolved, each must exist) and the installed packages shown."""
    shared_paths = []
    for entry in _field(sandbox, "shared", list, where + " [sandbox]", []):
        # trusted, non-secret sources a solution builds from (kernels/)
        target = (root / entry).resolve() if isinstance(entry, str) else None
        if target is None or not target.exists():
            raise UsageError(f"{where}: [sandbox] shared entry {entry!r} does not exist (paths are relative to the task)")
        shared_paths.append(str(target))
    # Installed packages the candidate imports whose source tree they read at run time (a
    # compiler's headers: Scorch), shown whole; resolved per machine when the sandbox is planned.
    packages = _field(sandbox, "packages", list, where + " [sandbox]", [])
    if not all(isinstance(name, str) and name.isidentifier() for name in packages):
        raise UsageError(f"{where}: [sandbox] packages must be a list of importable package names, got {packages!r}")
    return tuple(shared_paths), tuple(packages)


def _load_kernelbench(path: Path, overrides: dict[str, str]) -> TaskSpec:
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        raise UsageError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    constants = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise UsageError(f"{path}: not a task directory nor a KernelBench problem (no {', '.join(missing)})")
    parsed = {}
    for key, raw in overrides.items():
        if key not in constants:
            raise UsageError(f"--set {key}: {path.name} has no module-level constant {key!r}")
        try:
            parsed[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            raise UsageError(f"--set {key}={raw}: value must be a Python literal (number, string, tuple)") from None
    return TaskSpec(root=path, format=FORMAT_KERNELBENCH, name=path.stem, kind="perf", device="cuda",
                    entry_point="ModelNew", description="KernelBench problem", sizes=("default",),
                    timed_size="default", overrides=parsed)


def require_solution(spec: TaskSpec, command: str) -> TaskSpec:
    """`spec`, if it is a task directory: what times a task's own solution.py (validate,
    calibrate) cannot take a public benchmark's problem, which has none."""
    if spec.format != FORMAT_DIR:
        raise UsageError(f"{spec.root}: {command} times a task's solution.py; a {spec.format} problem has none "
                         "(score a candidate with --s-ref NUMBER for a reward)")
    return spec


def parse_overrides(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--set {item}: expected NAME=VALUE")
        out[key] = value
    return out
