"""GPU MODE problem directories (github:gpu-mode/reference-kernels, docs/tasks.md): the format,
and the problem's own code as the scorer and the workers run it.

A problem directory holds task.yml (`tests:` and `benchmarks:`, lists of generate_input
keyword arguments), reference.py (`ref_kernel(data)`, `generate_input(**spec)`,
`check_implementation(data, output)`) and task.py; utils.py sits in the directory or its parent.
A submission defines `custom_kernel(data)`.  perfbench times `ref_kernel` as the baseline, gates
on the tests with the problem's own `check_implementation` (run in the scorer, on its own copy
of the inputs: a v2 reference writes into the output tensor it is handed), and draws every
`seed` in a spec afresh, secretly, as it does for its own tasks: within the range the problem's
own specs use (`seed_bound`), since some problems' data depend on the seed's value.

`--device cpu` runs a CUDA problem on the CPU: while the problem's code runs (generate_input,
ref_kernel inside check_implementation), tensors and generators it asks for on `cuda` are made
on the CPU (`cuda_on_cpu`).  The timed calls run unchanged.
"""
from __future__ import annotations

import ast
import contextlib
import sys
from pathlib import Path
from typing import Any, Iterator

from ..core.errors import UsageError
from .user_files import describe_exception, get_callable, load_module

FORMAT_GPUMODE = "gpumode"
# The problem's own modules, imported by bare name (`from task import ...`): dropped from
# sys.modules before a problem loads, so that one process can load two problems.
PROBLEM_MODULES = ("task", "utils", "reference", "submission")
REQUIRED = ("ref_kernel", "generate_input", "check_implementation")


# The secret seeds of a problem lie below the smallest power of two above every seed its own specs
# use, and at least this: 65536 possible inputs per spec, none known in advance.  Not the full
# 31 bits: pmpp sort_py draws row i around `seed + i`; near 2e9 float32's step is 256, every
# element was equal and any output holding those values passed (#58 (7)).
MIN_SEED_BOUND = 1 << 16
MAX_SEED_BOUND = 1 << 31   # problems pass the seed on to numpy's and python's random too


def seed_bound(cases: dict[str, dict]) -> int:
    """Secret seeds are drawn below this (MIN_SEED_BOUND says why)."""
    seeds = [abs(int(c["seed"])) for c in cases.values() if isinstance(c.get("seed"), (int, float))]
    return min(MAX_SEED_BOUND, max([MIN_SEED_BOUND] + [1 << int(s).bit_length() for s in seeds]))


def is_problem_dir(path: Path) -> bool:
    return path.is_dir() and (path / "task.yml").is_file()


def utils_dir(root: Path) -> Path | None:
    """Where the problem's `utils.py` is: its directory, else its parent (GPU MODE's layout)."""
    return next((d for d in (root, root.parent) if (d / "utils.py").is_file()), None)


def import_dirs(root: Path) -> tuple[str, ...]:
    """sys.path entries under which `task`, `utils` and `reference` import as GPU MODE's runner
    has them (it copies them beside the submission)."""
    u = utils_dir(root)
    return (str(root),) + ((str(u),) if u is not None and u != root else ())


def _specs(doc: dict, key: str, where: str, params: set[str] | None) -> list[dict]:
    specs = doc.get(key)
    if not isinstance(specs, list) or not specs or not all(isinstance(s, dict) for s in specs):
        raise UsageError(f"{where}: `{key}:` must be a non-empty list of specs ({{name: value, ...}})")
    for i, s in enumerate(specs):
        bad = [k for k in s if not isinstance(k, str) or (params is not None and k not in params)]
        if bad:
            takes = ", ".join(sorted(params)) if params else "nothing"
            raise UsageError(f"{where}: {key}[{i}]: generate_input takes no {bad[0]!r} (it takes {takes})")
        if not all(isinstance(v, (int, float, str, bool)) for v in s.values()):
            raise UsageError(f"{where}: {key}[{i}]: values must be numbers or strings, got {s}")
    return [dict(s) for s in specs]


def _reference_names(path: Path) -> tuple[set[str], set[str] | None]:
    """The top-level names reference.py defines, and generate_input's keyword parameters
    (None where it takes **kwargs)."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        raise UsageError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    names: set[str] = set()
    params: set[str] | None = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
            if isinstance(node, ast.FunctionDef) and node.name == "generate_input":
                a = node.args
                params = None if a.kwarg else {x.arg for x in a.args + a.kwonlyargs}
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names, params


def _override(specs: list[dict], overrides: dict[str, str], params: set[str] | None) -> list[dict]:
    """`--set KEY=VALUE` on every benchmark spec (CPU-sized checks of a GPU problem); `--set
    benchmarks=0,2` keeps those benchmarks only."""
    keep = overrides.get("benchmarks")
    if keep is not None:
        try:
            picked = [int(i) for i in keep.split(",")]
            specs = [specs[i] for i in picked]
        except (ValueError, IndexError):
            raise UsageError(f"--set benchmarks={keep}: expected indices of task.yml's benchmarks "
                             f"(0..{len(specs) - 1}), comma-separated") from None
    for key, raw in overrides.items():
        if key == "benchmarks":
            continue
        if params is not None and key not in params:
            raise UsageError(f"--set {key}: generate_input takes no {key!r} (it takes {', '.join(sorted(params))})")
        try:
            value: Any = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw
        specs = [dict(s, **{key: value}) for s in specs]
    return specs


def load(root: Path, overrides: dict[str, str]) -> dict[str, Any]:
    """A GPU MODE problem directory as TaskSpec fields; one-line UsageError naming what is wrong."""
    import yaml

    root = root.resolve()
    missing = [f for f in ("task.yml", "reference.py", "task.py") if not (root / f).is_file()]
    if missing:
        raise UsageError(f"{root}: a GPU MODE problem needs {', '.join(missing)}")
    where = str(root / "task.yml")
    try:
        doc = yaml.safe_load((root / "task.yml").read_text())
    except yaml.YAMLError as exc:
        raise UsageError(f"{where}: invalid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: expected a mapping with tests: and benchmarks:")
    names, params = _reference_names(root / "reference.py")
    absent = [n for n in REQUIRED if n not in names]
    if absent:
        raise UsageError(f"{root / 'reference.py'}: defines no {', '.join(absent)}")
    tests = _specs(doc, "tests", where, params)
    benchmarks = _override(_specs(doc, "benchmarks", where, params), overrides, params)
    cases = {f"test{i}": s for i, s in enumerate(tests)}
    cases.update({f"benchmark{i}": s for i, s in enumerate(benchmarks)})
    description = str(doc.get("description", "")).strip().splitlines()
    return dict(root=root, format=FORMAT_GPUMODE, name=root.name, kind="perf", device="cuda", family="gpu-mode",
                entry_point="custom_kernel", description=description[0] if description else "GPU MODE problem",
                sizes=tuple(f"test{i}" for i in range(len(tests))),
                timed_size="benchmark0", overrides=dict(overrides), cases=cases,
                benchmarks=tuple(f"benchmark{i}" for i in range(len(benchmarks))))


# -- the problem's code, run ------------------------------------------------------------------------
def enable_imports(root: Path) -> None:
    """From now on in this process, `from task import ...` and `from utils import ...` resolve to
    this problem's files (a submission imports them too, after the reference)."""
    for name in PROBLEM_MODULES:
        sys.modules.pop(name, None)
    sys.path[:0] = [d for d in import_dirs(root) if d not in sys.path]


@contextlib.contextmanager
def cuda_on_cpu(active: bool) -> Iterator[None]:
    """While active: a tensor or generator the code asks for on `cuda` is made on the CPU, and
    torch.cuda.synchronize does nothing (--device cpu for a CUDA problem)."""
    if not active:
        yield
        return
    import torch
    from torch.overrides import TorchFunctionMode

    def cpu(device: Any) -> Any:
        try:
            return "cpu" if torch.device(device).type == "cuda" else device
        except (RuntimeError, TypeError):
            return device

    class CudaOnCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = cpu(kwargs["device"])
            if func is torch.Tensor.cuda:
                return args[0]
            if func is torch.Tensor.to:
                args = tuple(cpu(a) if isinstance(a, (str, torch.device)) else a for a in args)
            return func(*args, **kwargs)

    real_generator, real_sync = torch.Generator, torch.cuda.synchronize

    class Generator(real_generator):   # a class, not a function: torch modules imported meanwhile
        def __new__(cls, device: Any = "cpu"):   # annotate with `torch.Generator | None`
            return real_generator(device=cpu(device))

    torch.Generator = Generator                       # type: ignore[misc]
    torch.cuda.synchronize = lambda *a, **k: None     # type: ignore[assignment]
    try:
        with CudaOnCpu():
            yield
    finally:
        torch.Generator, torch.cuda.synchronize = real_generator, real_sync


def clone_data(data: Any) -> Any:
    """A deep copy of a problem's data (tensors cloned), as GPU MODE's runner makes."""
    import torch

    if isinstance(data, torch.Tensor):
        return data.clone()
    if isinstance(data, (tuple, list)):
        return type(data)(clone_data(x) for x in data)
    if isinstance(data, dict):
        return {k: clone_data(v) for k, v in data.items()}
    return data


class GpuModeProblem:
    """A problem's reference.py loaded into this process (the scorer, or a worker: which makes
    its own inputs on CUDA and times `ref_kernel` as the baseline).  perfbench hands a call its
    inputs as a tuple of tensors; `as_data` turns them back into the `data` generate_input made
    (that tuple, or its one tensor)."""

    def __init__(self, root: Path, cases: dict[str, dict], on_cpu: bool):
        self.root, self.cases, self.on_cpu = root, cases, on_cpu
        self.seed_bound = seed_bound(cases)
        path = root / "reference.py"
        enable_imports(root)
        self.module = load_module(path)
        self.ref_kernel, self.generate_input, self.check_implementation = (
            get_callable(self.module, name, path) for name in REQUIRED)
        self.tuple_data: bool | None = None   # learnt from the first inputs made

    def inputs(self, seed: int, size: str) -> tuple:
        """generate_input(**spec) with the spec's seed replaced by `seed` (secret, per set), taken
        below the problem's `seed_bound`."""
        import torch

        kwargs = dict(self.cases[size])
        if "seed" in kwargs:
            kwargs["seed"] = seed % self.seed_bound
        with cuda_on_cpu(self.on_cpu):
            data = self.generate_input(**kwargs)
        if isinstance(data, torch.Tensor):
            self.tuple_data = False
            return (data,)
        if isinstance(data, (tuple, list)) and all(isinstance(x, torch.Tensor) for x in data):
            self.tuple_data = True
            return tuple(data)
        raise UsageError(f"{self.root / 'reference.py'}: generate_input returned {type(data).__name__}; perfbench "
                         "scores problems whose data is a tensor or a tuple of tensors")

    def as_data(self, inputs: tuple) -> Any:
        return tuple(inputs) if self.tuple_data is not False else inputs[0]

    def wrap(self, fn: Any) -> Any:
        """`fn(data)` as perfbench calls it: fn(*inputs)."""
        return lambda *inputs: fn(self.as_data(inputs))

    def reference(self, inputs: tuple) -> Any:
        """ref_kernel on a copy: a v2 reference writes into the output tensor in `data`."""
        try:
            with cuda_on_cpu(self.on_cpu):
                return self.ref_kernel(clone_data(self.as_data(inputs)))
        except Exception as exc:  # noqa: BLE001 - the problem's code
            raise UsageError(f"{self.root / 'reference.py'}: ref_kernel raised {describe_exception(exc)}") from None

    def check(self, inputs: tuple, output: Any) -> str | None:
        """The problem's check_implementation on the scorer's own copy of the inputs: None when it
        passes, else its message.  (v1 problems return a message, '' when it passes; v2 (ok, message).)"""
        try:
            with cuda_on_cpu(self.on_cpu):
                verdict = self.check_implementation(clone_data(self.as_data(inputs)), output)
        except Exception as exc:  # noqa: BLE001 - the problem's code, on the candidate's output
            return f"check_implementation raised {describe_exception(exc)} on this output"
        if isinstance(verdict, tuple) and len(verdict) == 2:
            ok, message = verdict
            return None if ok else (str(message) or "check_implementation failed")
        if isinstance(verdict, str):
            return verdict or None
        raise UsageError(f"{self.root / 'reference.py'}: check_implementation returned {type(verdict).__name__}, "
                         "expected (bool, message) or a message")
