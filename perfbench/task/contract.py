"""A task's input contract: the values its kernel must handle beyond what its generator draws
(#58 (6)).

The gate used to test only the generator's draws, so a softmax that subtracted the generator's
bound instead of each row's max passed and was scored, while it returned NaN for ordinary
logits such as 100 * randn.  A task states its contract in task.toml:

    [contract]
    transforms = ["scale:100", "scale:0.01", "shift:100", "shift:-100", "constant_rows"]
    args = [0]          # optional: the arguments transformed (default: every floating tensor)

and the gate also calls the candidate on the generator's inputs so transformed, wherever the
task's reference stays defined and finite there (in float64 too).  A task that declares nothing
gets STANDARD; `transforms = []` declares that the kernel need handle only the generator's
draws.  Timed inputs are always the task's own.

The transforms (each applied to every floating tensor argument, or to `args`):
- `scale:K`: every value times K (K finite, not 0): large and small magnitudes.
- `shift:C`: every value plus C: an offset the kernel must not assume away.
- `constant_rows`: every row (the last dimension) holds its first value: zero variance.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from ..core.errors import UsageError

if TYPE_CHECKING:   # (spec.py parses contracts without torch: `perfbench tasks list` never imports it)
    import torch

STANDARD = ("scale:100", "scale:0.01", "shift:100", "shift:-100")
KINDS = ("scale", "shift", "constant_rows")


@dataclass(frozen=True)
class Transform:
    """One transform of a contract, parsed from its text (`scale:100`)."""
    kind: str
    value: float | None = None

    @classmethod
    def parse(cls, text: str, where: str = "[contract]") -> "Transform":
        kind, _, arg = str(text).partition(":")
        if kind == "constant_rows" and not arg:
            return cls(kind)
        if kind in ("scale", "shift") and arg:
            try:
                value = float(arg)
            except ValueError:
                value = math.nan
            if math.isfinite(value) and (kind == "shift" or value != 0):
                return cls(kind, value)
        raise UsageError(f"{where}: transform {text!r} is not one of scale:K (K finite, not 0), shift:C "
                         "(C finite) or constant_rows")

    def __str__(self) -> str:
        return self.kind if self.value is None else f"{self.kind}:{self.value:g}"

    def tensor(self, x: "torch.Tensor") -> "torch.Tensor":
        if self.kind == "scale":
            return x * self.value
        if self.kind == "shift":
            return x + self.value
        if x.dim() == 0 or x.shape[-1] == 0:
            return x.clone()
        return x[..., :1].expand(x.shape).contiguous()


def parse_contract(table: dict[str, Any] | None, where: str) -> tuple[tuple[str, ...] | None, tuple[int, ...] | None]:
    """task.toml's [contract]: (its transforms, normalised; None when the task declares none),
    and the argument indices they apply to (None: every floating tensor)."""
    if table is None:
        return None, None
    transforms = table.get("transforms", list(STANDARD))
    if not isinstance(transforms, list):
        raise UsageError(f"{where} [contract]: transforms must be a list, e.g. [\"scale:100\", \"shift:-100\"]")
    parsed = tuple(str(Transform.parse(t, f"{where} [contract]")) for t in transforms)
    args = table.get("args")
    if args is not None and (not isinstance(args, list) or not all(isinstance(i, int) and not isinstance(i, bool)
                                                                   and i >= 0 for i in args)):
        raise UsageError(f"{where} [contract]: args must be a list of argument indices (0, 1, ...)")
    unknown = set(table) - {"transforms", "args"}
    if unknown:
        raise UsageError(f"{where} [contract]: unknown field {sorted(unknown)[0]!r} (it takes transforms and args)")
    return parsed, tuple(args) if args is not None else None


def transformed(inputs: tuple, transform: str, args: Iterable[int] | None = None) -> tuple:
    """`inputs` with `transform` applied to each floating tensor argument (of `args`, if given)."""
    import torch

    t = Transform.parse(transform)
    chosen = set(range(len(inputs)) if args is None else args)
    return tuple(t.tensor(x) if i in chosen and isinstance(x, torch.Tensor) and x.is_floating_point() else x
                 for i, x in enumerate(inputs))


def output_scale(transformed_outputs: Iterable[Any], usual_outputs: Iterable[Any]) -> float:
    """How many times larger a contract call's outputs are than the same inputs' untransformed
    ones (the largest magnitude of each floating output, the largest ratio; at least 1).  The
    gate widens the absolute tolerance by it: `scale:100` on both of a matmul's arguments makes
    every output 1e4 times larger, and its rounding with it, while an atol of 1e-5 was set for
    outputs of order 1.  The relative tolerance is unchanged."""
    import torch

    ratio = 1.0
    for t, u in zip(transformed_outputs, usual_outputs):
        if isinstance(t, torch.Tensor) and isinstance(u, torch.Tensor) and t.is_floating_point() \
                and u.is_floating_point() and t.numel() and u.numel():
            big, usual = float(t.detach().abs().max()), float(u.detach().abs().max())
            if usual > 0 and math.isfinite(big / usual):
                ratio = max(ratio, big / usual)
    return ratio


def all_finite(values: Iterable[Any]) -> bool:
    """Whether every floating tensor among `values` holds finite values only."""
    import torch

    return all(bool(torch.isfinite(v).all()) for v in values
               if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()))


@dataclass(frozen=True)
class ContractCall:
    """One call of the gate's input contract: `inputs` (the generator's for one seed and size,
    transformed) and what they should give (reference, float64 oracle), judged with the absolute
    tolerance times `atol_scale`; or, `skipped`, why the transform is not tested (then nothing
    else of it follows).  `last`: the transform's last size (it has passed once this one has)."""
    transform: str
    size: str
    inputs: tuple = ()
    expected: tuple = ((), None)
    atol_scale: float = 1.0
    last: bool = False
    skipped: str | None = None


def contract_calls(program: Any, seed: int) -> Iterator[ContractCall]:
    """The contract's calls for a TaskProgram: every declared transform (STANDARD if the task
    declares none) on every size's inputs of `seed`, where the task's reference is defined and
    finite (in float64 too) and the transformed inputs are finite."""
    spec = program.spec
    usual: dict[str, tuple] = {}
    for transform in spec.contract if spec.contract is not None else STANDARD:
        for i, size in enumerate(spec.sizes):
            if size not in usual:
                x0 = program.make_inputs(seed, size)
                usual[size] = (x0, program.reference(x0))
            call = contract_call(program, transform, size, *usual[size], last=i == len(spec.sizes) - 1)
            yield call
            if call.skipped is not None:
                break


def contract_call(program: Any, transform: str, size: str, x0: tuple, expected0: Any,
                  last: bool = False) -> ContractCall:
    """One contract call: the generator's inputs `x0` of `size` (whose reference gave
    `expected0`: only its magnitude is read, for `output_scale`, so not the float64 oracle,
    several times dearer) under `transform`; skipped where the
    transformed inputs or the task's reference on them (float64 too) are not finite, or the
    reference raises."""
    x = transformed(x0, transform, program.spec.contract_args)
    try:
        expected = (program.reference(x), program.oracle(x))
    except Exception as exc:  # noqa: BLE001 - the task's reference, outside its own draws
        return ContractCall(transform, size, skipped=f"the reference raised {type(exc).__name__} (size {size!r})")
    if not (all_finite(x) and all_finite(expected[0]) and all_finite(expected[1] or ())):
        return ContractCall(transform, size, skipped=f"not finite there (size {size!r})")
    return ContractCall(transform, size, x, expected, output_scale(expected[1] or expected[0], expected0), last=last)


def contract_failures(transform: str, where: str, fails: Iterable[Any]) -> list[Any]:
    """A contract call's failures (correctness.Failure) as the verdict gives them: a wrong value
    is `correctness.contract`, naming the transform and `where` (the size, or the timed block's
    iteration), then what was wrong."""
    from .correctness import Failure

    return [Failure("correctness.contract" if f.reason.startswith("correctness.") else f.reason,
                    f"input contract {transform}, {where}: {f.reason}: {f.message}") for f in fails]
