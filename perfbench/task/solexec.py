"""SOL-ExecBench problem directories (github:NVIDIA/SOL-ExecBench, docs/tasks.md): the format,
read into TaskSpec fields without torch.

A problem directory holds definition.json and workload.jsonl:
- definition.json: `axes` (`const` with a `value`, `var`, or `expr` with an `expression` over
  other axes), `inputs` and `outputs` (each a `shape` of axis names or digits, null for a scalar,
  and a `dtype`), `reference` (Python source whose `run(*inputs)` is the reference) and optionally
  `custom_inputs_entrypoint` (a function of that source that makes a workload's inputs);
- workload.jsonl: one workload a line: the var axes, each input's kind (`random`, `scalar`
  with a `value`, `safetensors` with a `path` and a `tensor_key`, `custom`) and optionally a
  `tolerance`.

Each workload is one timed comparison (a `benchmark`, as a GPU MODE benchmark is) and one size
the gate checks.  The solution (solexec_solution.py) says the calling convention; the values
(solexec_problem.py) are drawn from secret seeds.
"""
from __future__ import annotations

import ast
import json
import operator
from pathlib import Path
from typing import Any

from ..core.errors import UsageError
from .solexec_values import domain
from .user_files import read_jsonl

FORMAT_SOLEXEC = "sol-execbench"
DEFINITION, WORKLOADS = "definition.json", "workload.jsonl"

# dtype names of the format, as torch spells them (torch.<name>).  float4_e2m1fn_x2 (two FP4
# values packed per byte) is known to the format and refused here: nothing here can check it.
DTYPES = ("float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
          "int64", "int32", "int16", "int8", "uint8", "bool")
UNSUPPORTED_DTYPES = ("float4_e2m1", "float4_e2m1fn_x2")
INPUT_KINDS = ("random", "scalar", "safetensors", "custom")
# upstream's ToleranceSpec defaults, used where a workload gives no tolerance
TOLERANCE_DEFAULTS: dict[str, Any] = {"max_atol": 1e-2, "max_rtol": 1e-2, "required_matched_ratio": 0.99,
                                      "max_error_cap": None, "allow_negative_inf": False}
# `--set workloads=0,2` keeps those workloads; any other --set KEY is a const axis
SELECT_KEY = "workloads"
# The input contract (task/contract.py) of a problem: its scale transforms, not its shifts.  The
# judge is the problem's own reference at the problem's precision, not a float64 oracle, and a
# shift makes low-precision sums cancel: olmo3_post_norm's residual + RMSNorm(x) under
# shift:-100 adds two bfloat16 values near -100 and +100 (steps of 0.5) into a result of order
# 1, where the reference and an honest kernel differ by their intermediates' rounding alone, and
# the honest one fails (benchmarks/results/formats.md, "Why a problem's input contract does not
# shift").  A scale keeps every value's relative precision.
CONTRACT = ("scale:100", "scale:0.01")

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def is_problem_dir(path: Path) -> bool:
    return path.is_dir() and (path / DEFINITION).is_file()


def axis_expression(expr: str, values: dict[str, int], where: str) -> int:
    """An `expr` axis's value: arithmetic (+ - * / // % **) over numbers and other axes, nothing
    else (no calls, attributes or subscripts: the file is not trusted to run code here)."""
    def value(node: ast.AST) -> float | int:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise UsageError(f"{where}: expression {expr!r} names {node.id!r}, which is no const or var axis")
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](value(node.operand))
        raise UsageError(f"{where}: expression {expr!r} may use numbers, axis names and + - * / // % ** only")

    try:
        result = value(ast.parse(expr, mode="eval").body)
    except SyntaxError:
        raise UsageError(f"{where}: expression {expr!r} is not valid arithmetic") from None
    except ZeroDivisionError:
        raise UsageError(f"{where}: expression {expr!r} divides by zero") from None
    if isinstance(result, float) and result.is_integer():
        result = int(result)
    if not isinstance(result, int) or result < 0:
        raise UsageError(f"{where}: expression {expr!r} gives {result!r}, not a size")
    return result


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None


def _tensors(doc: dict, key: str, axes: dict, where: str) -> dict[str, dict]:
    table = doc.get(key)
    if not isinstance(table, dict) or not table:
        raise UsageError(f"{where}: `{key}` must be a non-empty object of name: {{shape, dtype}}")
    for name, t in table.items():
        at = f"{where}: {key}.{name}"
        if not isinstance(t, dict):
            raise UsageError(f"{at}: expected {{shape, dtype}}")
        dtype = t.get("dtype")
        if dtype in UNSUPPORTED_DTYPES:
            raise UsageError(f"{at}: dtype {dtype} (packed FP4) is not supported by perfbench")
        if dtype not in DTYPES:
            raise UsageError(f"{at}: unknown dtype {dtype!r} (known: {', '.join(DTYPES)})")
        shape = t.get("shape")
        if shape is not None and (not isinstance(shape, list)
                                  or not all(isinstance(a, str) and (a.isdigit() or a in axes) for a in shape)):
            raise UsageError(f"{at}: shape {shape!r} must list axis names of `axes` (or digits), or be null")
    return table


def _axes(doc: dict, where: str) -> dict[str, dict]:
    axes = doc.get("axes")
    if not isinstance(axes, dict):
        raise UsageError(f"{where}: `axes` must be an object of name: {{type, ...}}")
    for name, a in axes.items():
        kind = a.get("type") if isinstance(a, dict) else None
        if kind == "const" and not (isinstance(a.get("value"), int) and not isinstance(a["value"], bool)):
            raise UsageError(f"{where}: axes.{name}: a const axis needs an integer `value`")
        if kind == "expr" and not isinstance(a.get("expression"), str):
            raise UsageError(f"{where}: axes.{name}: an expr axis needs an `expression`")
        if kind not in ("const", "var", "expr"):
            raise UsageError(f"{where}: axes.{name}: type must be const, var or expr, got {kind!r}")
    return axes


def resolve_axes(axes: dict[str, dict], var_values: dict[str, int], consts: dict[str, int], where: str) -> dict[str, int]:
    """Every axis's value for one workload: consts (as overridden), the workload's vars, then
    the expressions, in the definition's order (an expression may name an earlier one)."""
    values = dict(consts)
    for name, a in axes.items():
        if a["type"] == "var":
            v = var_values.get(name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise UsageError(f"{where}: var axis {name!r} needs a size, got {v!r}")
            values[name] = v
    for name, a in axes.items():
        if a["type"] == "expr":
            values[name] = axis_expression(a["expression"], values, f"{where}: axes.{name}")
    return values


def _tolerance(line: dict, where: str) -> dict[str, Any]:
    tol = line.get("tolerance") or {}
    if not isinstance(tol, dict) or set(tol) - set(TOLERANCE_DEFAULTS):
        raise UsageError(f"{where}: tolerance takes {', '.join(TOLERANCE_DEFAULTS)}")
    out = dict(TOLERANCE_DEFAULTS, **tol)
    for key in ("max_atol", "max_rtol", "required_matched_ratio"):
        if not isinstance(out[key], (int, float)) or isinstance(out[key], bool) or out[key] < 0:
            raise UsageError(f"{where}: tolerance {key} must be a number >= 0, got {out[key]!r}")
    return out


def _workload_inputs(line: dict, inputs: dict[str, dict], custom_entry: str | None, root: Path,
                     where: str) -> dict[str, dict]:
    given = line.get("inputs", {})
    if not isinstance(given, dict) or set(given) - set(inputs):
        raise UsageError(f"{where}: `inputs` must be an object over the definition's inputs ({', '.join(inputs)})")
    given = {name: given.get(name, {"type": "random"}) for name in inputs}   # (unnamed: random, as upstream)
    kinds = {name: s.get("type") if isinstance(s, dict) else None for name, s in given.items()}
    for name, kind in kinds.items():
        if kind not in INPUT_KINDS:
            raise UsageError(f"{where}: inputs.{name}: type must be one of {', '.join(INPUT_KINDS)}, got {kind!r}")
        if kind == "scalar" and (inputs[name].get("shape") is not None
                                 or not isinstance(given[name].get("value"), (int, float, bool))):
            raise UsageError(f"{where}: inputs.{name}: a scalar input needs a `value` and a null shape")
        if kind == "safetensors":
            path, key = given[name].get("path"), given[name].get("tensor_key")
            if not isinstance(path, str) or not isinstance(key, str) or not (root / path).is_file():
                raise UsageError(f"{where}: inputs.{name}: safetensors needs a `path` (a file under {root}) "
                                 "and a `tensor_key`")
    if "custom" in kinds.values():
        if set(kinds.values()) != {"custom"}:
            raise UsageError(f"{where}: custom inputs cannot be mixed with other kinds")
        if not custom_entry:
            raise UsageError(f"{where}: custom inputs need the definition's custom_inputs_entrypoint")
    return {name: dict(s) for name, s in given.items()}


def _selected(lines: list[dict], overrides: dict[str, str]) -> list[int]:
    keep = overrides.get(SELECT_KEY)
    if keep is None:
        return list(range(len(lines)))
    try:
        picked = [int(i) for i in keep.split(",")]
        if any(not 0 <= i < len(lines) for i in picked):
            raise ValueError
    except ValueError:
        raise UsageError(f"--set {SELECT_KEY}={keep}: expected indices of {WORKLOADS}'s lines "
                         f"(0..{len(lines) - 1}), comma-separated") from None
    return picked


def _consts(axes: dict[str, dict], overrides: dict[str, str]) -> dict[str, int]:
    consts = {name: a["value"] for name, a in axes.items() if a["type"] == "const"}
    for key, raw in overrides.items():
        if key == SELECT_KEY:
            continue
        if key not in consts:
            names = ", ".join(sorted(consts)) or "none"
            raise UsageError(f"--set {key}: not a const axis of {DEFINITION} (const axes: {names})")
        try:
            consts[key] = int(raw)
        except ValueError:
            raise UsageError(f"--set {key}={raw}: a const axis takes an integer") from None
        if consts[key] < 1:
            raise UsageError(f"--set {key}={raw}: a size must be at least 1")
    return consts


def load(root: Path, overrides: dict[str, str]) -> dict[str, Any]:
    """A SOL-ExecBench problem directory as TaskSpec fields; one-line UsageError naming the file
    and field that is wrong.  The solution's fields (entry point, calling convention) are bound
    later, by solexec_solution.bind."""
    root = root.resolve()
    where = str(root / DEFINITION)
    doc = _read_json(root / DEFINITION)
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: expected an object with axes, inputs, outputs and reference")
    axes = _axes(doc, where)
    inputs = _tensors(doc, "inputs", axes, where)
    _tensors(doc, "outputs", axes, where)   # (validated: the problem run reads them)
    reference = doc.get("reference")
    if not isinstance(reference, str) or not _defines(reference, "run", where):
        raise UsageError(f"{where}: `reference` must be Python source that defines run(...)")
    custom_entry = doc.get("custom_inputs_entrypoint")
    if custom_entry is not None and not (isinstance(custom_entry, str) and _defines(reference, custom_entry, where)):
        raise UsageError(f"{where}: custom_inputs_entrypoint {custom_entry!r} is no function of `reference`")
    wpath = root / WORKLOADS
    if not wpath.is_file():
        raise UsageError(f"{root}: a SOL-ExecBench problem needs {WORKLOADS}")
    lines = read_jsonl(wpath, "a workload must be an object with axes and inputs")
    if not lines:
        raise UsageError(f"{wpath}: no workloads")
    consts = _consts(axes, overrides)
    cases = {}
    for i in _selected([line for _, line in lines], overrides):
        n, line = lines[i]
        at = f"{wpath}:{n}"
        axes_given = line.get("axes") or {}
        cases[f"workload{i}"] = {
            "uuid": str(line.get("uuid", "")),
            "vars": {k: v for k, v in axes_given.items() if axes.get(k, {}).get("type") == "var"},
            "axes": resolve_axes(axes, axes_given, consts, at),
            "inputs": _workload_inputs(line, inputs, custom_entry, root, at),
            "tolerance": _tolerance(line, at)}
    names = tuple(cases)
    contract_args = _contract_args(inputs, cases)
    description = str(doc.get("description", "")).strip().split(". ")[0]
    return dict(root=root, format=FORMAT_SOLEXEC, name=root.name, kind="perf", device="cuda",
                family="sol-execbench", entry_point="run", description=description or "SOL-ExecBench problem",
                sizes=names, timed_size=names[0], overrides=dict(overrides), cases=cases, benchmarks=names,
                contract=CONTRACT if contract_args else (), contract_args=contract_args or None)


def _contract_args(inputs: dict[str, dict], cases: dict[str, dict]) -> tuple[int, ...]:
    """The inputs the input contract transforms (task/contract.py): the floating tensors drawn
    unconstrained (no value range by name, solexec_values.domain) or made by the problem's own
    input maker, in every workload.  A mask, a probability or a cos table stays as drawn: the
    problem's reference need not be meaningful outside its range."""
    chosen = []
    for i, (name, t) in enumerate(inputs.items()):
        floating = t["dtype"] in ("float64", "float32", "float16", "bfloat16") and t.get("shape") is not None
        kinds = {c["inputs"][name]["type"] for c in cases.values()}
        shape = tuple(t.get("shape") or ())   # (axis names: `domain` reads only the rank and the last two)
        unconstrained = domain(name, shape, t.get("description"), floating) is None
        if floating and (kinds == {"custom"} or (kinds == {"random"} and unconstrained)):
            chosen.append(i)
    return tuple(chosen)


def _defines(source: str, name: str, where: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise UsageError(f"{where}: reference:{exc.lineno}: syntax error: {exc.msg}") from None
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


def definition(root: Path) -> dict[str, Any]:
    """definition.json, read (trusted: `load` has validated it in the scorer)."""
    return _read_json(root / DEFINITION)


def shrink_warning(name: str, root: Path, overrides: dict[str, str]) -> str | None:
    """The verdict's warning that `--set` changed const axes (the definition's value, the used
    one), or None."""
    axes = _axes(definition(root), str(root / DEFINITION))
    changed = [f"{k}={v} (defined {axes[k]['value']})" for k, v in overrides.items()
               if k != SELECT_KEY and k in axes and axes[k]["value"] != int(v)]
    return (f"{name} is scored at other shapes than its definition's (--set): {', '.join(changed)}; the speedups "
            "are those shapes'") if changed else None
