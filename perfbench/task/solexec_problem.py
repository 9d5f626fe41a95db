"""A SOL-ExecBench problem's code and data, as the scorer and the workers run it (solexec.py
reads the format).

- Inputs: one tuple per (secret seed, workload), in the definition's order: `random` inputs
  drawn from the seed (solexec_values.py), scalars as given, safetensors read from the problem
  directory, `custom` ones made by the definition's custom_inputs_entrypoint under the seed.
  A destination-passing solution's outputs follow, pre-allocated and filled with poison (0xFF
  bytes, NaN in every float type), so an output left untouched fails its check.
- The baseline and the judge: the definition's `run`, on the inputs alone.
- The judge: upstream's rules (compute_error_stats) on each output: NaN or inf in either is
  wrong (matching -inf allowed where the tolerance says), an all-zero output where the
  reference is not, then the share of elements within max_atol + max_rtol * |ref| must reach
  required_matched_ratio and no error may pass max_error_cap; with perfbench's own rules of
  structure (shape, dtype, device, views), poison and unchanged inputs.
"""
from __future__ import annotations

import linecache
import traceback
import types
from pathlib import Path
from typing import Any, Callable

import torch

from ..core.errors import UsageError
from .correctness import POISON_PATTERNS, Failure, OutputRecord, holds_poison, inputs_unchanged, structure_failures
from .solexec import DEFINITION, SELECT_KEY, definition
from .solexec_values import draw
from .spec import TaskSpec
from .user_files import describe_exception



def _reference_module(root: Path, source: str) -> types.ModuleType:
    """definition.json's `reference` as a module; its source registered with linecache, so that
    tracebacks show it and a Triton reference's `@triton.jit` can read it."""
    filename = f"{root / DEFINITION}::reference"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType(f"perfbench_solexec_reference_{abs(hash(str(root)))}")
    module.__file__ = filename
    try:
        exec(compile(source, filename, "exec"), module.__dict__)   # noqa: S102 - the problem's trusted reference
    except Exception as exc:  # noqa: BLE001 - the problem's code
        raise UsageError(f"{root / DEFINITION}: reference: import failed: {describe_exception(exc)}") from None
    return module


def _dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


class SolExecProblem:
    """A problem's definition and reference loaded into this process, for one device."""

    def __init__(self, spec: TaskSpec, device: str):
        self.root, self.cases, self.device = spec.root, spec.cases, device
        self.destination_passing = spec.destination_passing
        doc = definition(spec.root)
        self.inputs_doc: dict[str, dict] = doc["inputs"]
        self.outputs_doc: dict[str, dict] = doc["outputs"]
        self.sampling = doc.get("op_type") == "sampling"
        self.n_inputs = len(self.inputs_doc)
        module = _reference_module(spec.root, doc["reference"])
        self.reference_file = module.__file__
        self.shrunk = any(k != SELECT_KEY for k in spec.overrides)
        self.run = module.run
        entry = doc.get("custom_inputs_entrypoint")
        self.custom = getattr(module, entry) if entry else None

    # -- inputs ----------------------------------------------------------------------------------
    def _shape(self, shape: list[str] | None, axes: dict[str, int]) -> tuple[int, ...] | None:
        return None if shape is None else tuple(int(a) if a.isdigit() else axes[a] for a in shape)

    def inputs(self, seed: int, size: str) -> tuple:
        case = self.cases[size]
        axes, given = case["axes"], case["inputs"]
        g = torch.Generator(device=self.device).manual_seed(seed)
        custom = self._custom(seed, axes, given) if self.custom is not None else {}
        values = []
        for name, t in self.inputs_doc.items():
            kind, dtype, shape = given[name]["type"], _dtype(t["dtype"]), self._shape(t.get("shape"), axes)
            if kind == "scalar":
                values.append(given[name]["value"])
            elif kind == "custom":
                values.append(custom[name])
            elif kind == "safetensors":
                values.append(self._safetensors(name, given[name], shape, dtype))
            elif shape is None:   # a random scalar
                values.append(draw(name, (), dtype, t.get("description"), g, self.device).item())
            else:
                x = draw(name, shape, dtype, t.get("description"), g, self.device)
                values.append(torch.softmax(x.float(), dim=-1).to(dtype) if self.sampling and name == "probs" else x)
        if self.destination_passing:
            values += self._poisoned_outputs(axes, g)
        return tuple(values)

    def _custom(self, seed: int, axes: dict[str, int], given: dict[str, dict]) -> dict[str, Any]:
        """The definition's input maker, which draws from torch's global generator: seeded here."""
        torch.manual_seed(seed)
        scalars = {k: s["value"] for k, s in given.items() if s["type"] == "scalar"}
        made = self.custom(dict(axes, **scalars), torch.device(self.device))
        missing = [n for n in self.inputs_doc if n not in made] if isinstance(made, dict) else list(self.inputs_doc)
        if missing:
            raise UsageError(f"{self.root / DEFINITION}: custom_inputs_entrypoint made no {', '.join(missing)}")
        return {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in made.items()}

    def _safetensors(self, name: str, given: dict, shape: tuple | None, dtype: torch.dtype) -> torch.Tensor:
        from safetensors.torch import load_file

        path = self.root / given["path"]
        tensors = load_file(str(path))
        t = tensors.get(given["tensor_key"])
        if t is None or tuple(t.shape) != shape or t.dtype != dtype:
            found = "nothing" if t is None else f"{list(t.shape)} {t.dtype}"
            raise UsageError(f"{path}: {given['tensor_key']!r} for input {name!r}: expected {list(shape or ())} "
                             f"{dtype}, found {found}")
        return t.contiguous().to(self.device)

    def _poisoned_outputs(self, axes: dict[str, int], g: torch.Generator) -> list[torch.Tensor]:
        outs = []
        for t in self.outputs_doc.values():
            dtype, shape = _dtype(t["dtype"]), self._shape(t.get("shape"), axes) or ()
            if dtype == torch.bool:   # (no bool byte is a poison: random values, wrong half the time)
                outs.append(torch.randint(0, 2, shape, generator=g, device=self.device, dtype=torch.bool))
            else:
                out = torch.empty(shape, dtype=dtype, device=self.device)
                # (the pattern holds_poison recognises; a view of the same memory)
                out.reshape(-1).view(torch.uint8).fill_(POISON_PATTERNS[0])
                outs.append(out)
        return outs

    # -- the callables ---------------------------------------------------------------------------
    def _ordered(self, result: Any) -> Any:
        """A `run`'s result as perfbench reads outputs: one tensor, or a tuple in the definition's
        order (a dict by output name; a number as a 0-d tensor of the output's dtype)."""
        names = list(self.outputs_doc)
        if isinstance(result, dict):
            result = tuple(result.get(n) for n in names)
        items = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        items = tuple(self._as_tensor(v, names[i]) if i < len(names) and isinstance(v, (int, float, bool)) else v
                      for i, v in enumerate(items))
        return items if len(items) != 1 else items[0]

    def _as_tensor(self, value: int | float | bool, output: str) -> torch.Tensor:
        return torch.tensor(value, dtype=_dtype(self.outputs_doc[output]["dtype"]), device=self.device)

    def wrap(self, fn: Callable[..., Any], destination_passing: bool) -> Callable[..., Any]:
        """`fn` as perfbench calls it, fn(*inputs) (the trailing poisoned outputs of a
        destination-passing solution included): a DPS solution's outputs are the buffers it was
        handed, whatever it returns; any other gets the inputs alone."""
        n, ordered = self.n_inputs, self._ordered
        if destination_passing:
            def call(*args: Any) -> Any:
                fn(*args)
                outs = args[n:]
                return outs if len(outs) != 1 else outs[0]
            return call
        return lambda *args: ordered(fn(*args[:n]))

    def reference(self, inputs: tuple) -> list[torch.Tensor]:
        try:
            out = self._ordered(self.run(*inputs[:self.n_inputs]))
        except Exception as exc:  # noqa: BLE001 - the problem's code
            raise UsageError(f"{self.root / DEFINITION}: reference run raised {describe_exception(exc)}"
                             f"{self._where(exc)}") from None
        return list(out) if isinstance(out, tuple) else [out]

    def _where(self, exc: BaseException) -> str:
        """' at reference line N: `source`', the deepest line of the reference's source the
        exception passed (an `assert hidden_size == 4096` that a --set broke, say)."""
        lines = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == self.reference_file]
        if not lines:
            return ""
        hint = " (a const axis changed with --set?)" if self.shrunk else ""
        return f" at reference line {lines[-1].lineno}: `{(lines[-1].line or '').strip()}`{hint}"

    # -- the judge -------------------------------------------------------------------------------
    def judge(self, inputs: tuple, outs: list[OutputRecord], ins: list[OutputRecord], size: str,
              atol_scale: float = 1.0) -> list[Failure]:
        """One call's outputs and inputs against the reference on the scorer's copy of `inputs`,
        made for workload `size`, whose tolerance applies."""
        expected = self.reference(inputs)
        if len(outs) != len(expected):
            return [Failure("output.structure", f"{len(outs)} outputs, the definition has {len(expected)} "
                                                f"({', '.join(self.outputs_doc)})")]
        tol = self.cases[size]["tolerance"]
        for name, rec, ref in zip(self.outputs_doc, outs, expected):
            fails = structure_failures(rec, ref, may_alias=self.destination_passing)
            if not fails and rec.tensor is not None and self.destination_passing and holds_poison(rec.tensor):
                fails = [Failure("correctness.uninitialised", "output still holds the poison written before the call: "
                                 "a destination-passing output the solution left (partly) unwritten")]
            if not fails and rec.tensor is not None:
                fails = tolerance_failures(rec.tensor, ref, tol, atol_scale)
            if fails:
                return [Failure(f.reason, f"output {name}: {f.message}") for f in fails]
        return inputs_unchanged(inputs[:self.n_inputs], ins[:self.n_inputs])


def tolerance_failures(got: torch.Tensor, ref: torch.Tensor, tol: dict, atol_scale: float = 1.0) -> list[Failure]:
    """Upstream's correctness rules for one output (module docstring); in float32, as theirs."""
    x, y = got.detach().cpu().to(torch.float32), ref.detach().cpu().to(torch.float32)
    bad_x, bad_y = ~torch.isfinite(x), ~torch.isfinite(y)
    if tol.get("allow_negative_inf"):
        both = (x == float("-inf")) & (y == float("-inf"))
        bad_x, bad_y = bad_x & ~both, bad_y & ~both
        x, y = x[~both], y[~both]
    if bool(bad_x.any()) or bool(bad_y.any()):
        whose = "the output's" if bool(bad_x.any()) else "the reference's"
        return [Failure("correctness.nan", f"NaN or inf in {whose} values ({int(bad_x.sum())} in the output, "
                                           f"{int(bad_y.sum())} in the reference): never correct here")]
    if x.numel() == 0:
        return []
    if float(torch.linalg.vector_norm(y)) > 0 and float(torch.linalg.vector_norm(x)) == 0:
        return [Failure("correctness.mismatch", "the output is all zeros and the reference is not")]
    atol, rtol = float(tol["max_atol"]) * atol_scale, float(tol["max_rtol"])
    err = (x - y).abs_()
    outside = int((err > atol + rtol * y.abs()).sum())
    matched = 1.0 - outside / err.numel()
    worst = float(err.max())
    if matched < float(tol["required_matched_ratio"]):
        return [Failure("correctness.mismatch", f"{outside} of {err.numel()} values outside atol={atol:g} "
                                                f"rtol={rtol:g}: {matched:.2%} matched, {tol['required_matched_ratio']:.2%} "
                                                f"required (max abs err {worst:.3g})")]
    cap = tol.get("max_error_cap")
    if cap is not None and worst > float(cap) * atol_scale:
        return [Failure("correctness.mismatch", f"max abs err {worst:.3g} above max_error_cap {cap:g}")]
    return []
