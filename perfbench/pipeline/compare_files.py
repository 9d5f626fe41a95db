"""`perfbench compare A.py B.py`: load two files and hand their functions to `compare()`."""
from __future__ import annotations

from pathlib import Path

from ..core.errors import UsageError
from ..core.results import ComparisonResult
from ..task.user_files import get_callable, load_module
from ..timing.sampler import ProgressFn, SamplerConfig
from ..timing.timers import Timer
from .compare import compare


def compare_files(baseline_file: Path, candidate_file: Path, *, fn_name: str, inputs_name: str,
                  device: str, config: SamplerConfig, seed: int | None,
                  progress: ProgressFn | None = None, timer: Timer | None = None) -> ComparisonResult:
    mod_a = load_module(baseline_file)
    mod_b = load_module(candidate_file)
    fn_a = get_callable(mod_a, fn_name, baseline_file)
    fn_b = get_callable(mod_b, fn_name, candidate_file)
    if hasattr(mod_a, inputs_name):
        make_inputs = get_callable(mod_a, inputs_name, baseline_file)
    elif hasattr(mod_b, inputs_name):
        make_inputs = get_callable(mod_b, inputs_name, candidate_file)
    else:
        raise UsageError(f"{baseline_file}: defines no input maker {inputs_name!r} "
                         f"(nor does {candidate_file})")
    labels = (f"{baseline_file}:{fn_name}", f"{candidate_file}:{fn_name}")
    return compare(fn_a, fn_b, make_inputs, device=device, config=config, seed=seed,
                   labels=labels, progress=progress, timer=timer)
