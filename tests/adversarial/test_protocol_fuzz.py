"""The verdict contract under a hostile worker (#39): whatever a candidate's worker sends back,
the score ends scored or rejected, with a JSON verdict; never a traceback, a signal death or a
hang.  Each seed is one copy of candidates/hostile_replies.py: an honest kernel whose worker
sends one hostile reply, or scribbles over one timed block's output-table records.

scripts/protocol_fuzz.py runs many more seeds through the CLI (exit status, JSON on stdout)."""
import json
import time
from pathlib import Path

import pytest

from perfbench.pipeline.score import ScoreConfig, score
from perfbench.timing.sampler import SamplerConfig

HERE = Path(__file__).resolve().parent
TASK = HERE.parent / "fixtures" / "tiny_task"
CFG = ScoreConfig(sampler=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.05), call_timeout_s=20, check_seeds=3,
                  processes=1, s_ref_policy="table")   # as test_exploits.py's: the gate makes 12 calls, its contract 8

TEMPLATE = HERE / "candidates" / "hostile_replies.py"
SEEDS = range(12)


def hostile_candidate(directory: Path, seed: int, kind: str | None = None) -> Path:
    path = directory / f"hostile_{seed}_{kind}.py"
    path.write_text(TEMPLATE.read_text().replace("\nSEED = 0\n", f"\nSEED = {seed}\n", 1)
                    .replace("\nKIND = None ", f"\nKIND = {kind!r} ", 1))
    return path


@pytest.mark.parametrize("seed,kind", [(s, None) for s in SEEDS] + [
    # #58 (2): each class that crashed the scorer before replies were parsed within limits
    (s, kind) for kind in ("big_int", "deep", "non_finite", "blob_flood") for s in (1, 2)])
def test_a_hostile_worker_still_gets_a_verdict(seed, kind, tmp_path):
    t0 = time.monotonic()
    r = score(TASK, hostile_candidate(tmp_path, seed, kind), CFG)
    wall = time.monotonic() - t0
    said = r.worker_logs.get("candidate", "")
    assert r.verdict in ("scored", "rejected"), r
    if r.verdict == "rejected":
        assert r.reasons and all("." in x.code for x in r.reasons), r.reasons
    json.loads(json.dumps(r.to_dict()))           # a verdict that serialises
    assert wall < 2 * CFG.call_timeout_s + 30, (wall, said[-500:])   # no hang
