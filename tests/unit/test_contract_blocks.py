"""sides/contract_blocks.py: when contract blocks run, on what, and that every side runs them
(#58 (6): a candidate that counts its calls can be robust through the gate's contract)."""
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from perfbench.core.score_key import ScoreKey
from perfbench.sides.contract_blocks import ContractBlocks, pair_end
from perfbench.task.program import TaskProgram
from perfbench.task.spec import load_task

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_task"
TRANSFORMS = ("scale:100", "shift:-100")


def plan(share: float, transforms=TRANSFORMS, seed: int = 7) -> ContractBlocks:
    spec = load_task(TASK)
    return ContractBlocks(TaskProgram(spec, "cpu", init_seed=1), transforms, seed, share)


def draws(p: ContractBlocks, n: int) -> list:
    return [p.due() for _ in range(n)]


def test_blocks_are_drawn_at_the_share_asked_and_never_without_transforms():
    assert draws(plan(0.0), 200) == [None] * 200
    assert None not in draws(plan(1.0), 50)
    assert draws(plan(1.0, transforms=()), 50) == [None] * 50
    drawn = [d for d in draws(plan(0.15), 4000) if d is not None]
    assert 0.12 < len(drawn) / 4000 < 0.18
    assert {t for t, _ in drawn} == set(TRANSFORMS)
    # each block its own inputs: no seed twice
    assert len({s for _, s in drawn}) == len(drawn)


def test_the_draws_follow_the_timing_key_alone():
    """Reproducible from the verdict's seed (`--seed`), and another process's key draws anew."""
    key = ScoreKey.from_seed(11)
    assert draws(plan(0.5, seed=key.contract_blocks_seed(0)), 40) == draws(plan(0.5, seed=key.contract_blocks_seed(0)), 40)
    assert draws(plan(0.5, seed=key.contract_blocks_seed(0)), 40) != draws(plan(0.5, seed=key.contract_blocks_seed(1)), 40)
    assert key.contract_blocks_seed(0) not in {key.timing, key.contract_seed(), *key.check_seeds(3)}


@pytest.mark.parametrize("share", [-0.1, 1.5, float("nan")])
def test_a_share_outside_0_1_is_refused(share):
    with pytest.raises(ValueError, match="share must be in"):
        plan(share)


def test_a_checked_call_is_the_generators_inputs_transformed_with_what_they_give():
    p = plan(1.0)
    x0 = p.program.make_inputs(5, "medium")
    call = p.call("scale:100", "medium", x0)
    assert call.skipped is None and call.transform == "scale:100"
    assert all(bool((a == 100 * b).all()) for a, b in zip(call.inputs, x0))
    assert bool((call.expected[1][0] - (2 * call.inputs[0].double() + call.inputs[1].double())).abs().max() < 1e-9)
    assert 50 < call.atol_scale < 200   # outputs ~100x larger: the absolute tolerance with them


@dataclass
class _Block:
    iters: int


@dataclass
class RecordingSide:
    name: str
    log: list
    blocks: list = field(default_factory=lambda: [_Block(8)])

    def end_pair(self) -> None:
        self.log.append((self.name, "end_pair"))

    def contract_block(self, transform, iters, seed, plan) -> None:
        self.log.append((self.name, transform, iters, seed))


def test_at_a_drawn_pair_end_every_side_runs_the_same_block_in_a_drawn_order():
    """The candidate's timed-output check first, then one block per side: same transform, same
    size as the pair's blocks, same inputs (seed), so no side does between pairs what another does
    not (#38); which side runs last before the next pair is drawn, not fixed."""
    log: list = []
    cand, base = RecordingSide("candidate", log), RecordingSide("baseline", log)
    end = pair_end(cand, [base, cand], plan(1.0))
    lasts = set()
    for _ in range(20):
        log.clear()
        end()
        assert log[0] == ("candidate", "end_pair") and len(log) == 3
        (s1, *rest1), (s2, *rest2) = log[1:]
        assert {s1, s2} == {"candidate", "baseline"} and rest1 == rest2 and rest1[1] == 8
        lasts.add(s2)
    assert lasts == {"candidate", "baseline"}


def test_without_a_plan_or_before_any_block_a_pair_end_is_the_check_alone():
    log: list = []
    cand = RecordingSide("candidate", log)
    pair_end(cand, [cand], None)()
    cand.blocks = []
    pair_end(cand, [cand], plan(1.0))()
    assert log == [("candidate", "end_pair")] * 2
