"""What a timed check compares against (pipeline/worker_side.expected_outputs): the float32
reference is skipped only where nothing of it but its structure would be read."""
import torch

from perfbench.sides.output_checks import expected_outputs
from perfbench.task.correctness import Tolerance, check_outputs, record_of


class Program:
    """A task's reference as TaskProgram runs it: `reference` on the inputs, `oracle` in float64."""

    judges_itself = False   # (a GPU MODE problem's TaskProgram judges with check_implementation)

    def __init__(self, fn, oracle_runs=True):
        self.fn, self.oracle_runs, self.reference_calls = fn, oracle_runs, 0

    def reference(self, inputs):
        self.reference_calls += 1
        return list(self.fn(*inputs))

    def oracle(self, inputs):
        return list(self.fn(*(x.double() if x.is_floating_point() else x for x in inputs))) if self.oracle_runs else None


X = (torch.linspace(-3, 3, 12).reshape(3, 4),)
SOFTMAX = lambda x: (torch.softmax(x, -1),)                      # noqa: E731
SOFTMAX_AND_ARGMAX = lambda x: (torch.softmax(x, -1), x.argmax(-1))   # noqa: E731
TOL = Tolerance(1e-5, 1e-6)


def test_floating_outputs_skip_the_reference_and_judge_alike():
    program = Program(SOFTMAX)
    structure = list(SOFTMAX(X[0]))
    ref, oracle = expected_outputs(program, X, structure)
    assert program.reference_calls == 0
    assert ref[0].shape == structure[0].shape and ref[0].dtype == torch.float32 and oracle[0].dtype == torch.float64
    full = (program.reference(X), program.oracle(X))
    for got, codes in ((SOFTMAX(X[0])[0], []), (SOFTMAX(X[0])[0] + 1e-3, ["correctness.mismatch"]),
                       (SOFTMAX(X[0])[0].double(), ["correctness.dtype"]), (SOFTMAX(X[0])[0][:2], ["correctness.shape"])):
        verdicts = [[f.reason for f in check_outputs([record_of(got)], r, o, TOL)] for r, o in ((ref, oracle), full)]
        assert verdicts == [codes, codes]


def test_an_integer_output_or_no_oracle_runs_the_reference():
    program = Program(SOFTMAX_AND_ARGMAX)
    ref, _ = expected_outputs(program, X, list(SOFTMAX_AND_ARGMAX(X[0])))
    assert program.reference_calls == 1 and torch.equal(ref[1], X[0].argmax(-1))
    program = Program(SOFTMAX, oracle_runs=False)
    ref, oracle = expected_outputs(program, X, list(SOFTMAX(X[0])))
    assert program.reference_calls == 1 and oracle is None and torch.equal(ref[0], SOFTMAX(X[0])[0])


def test_a_task_that_judges_itself_has_nothing_computed_for_a_check():
    program = Program(lambda x: (x * 2,))
    program.judges_itself = True
    assert expected_outputs(program, (torch.ones(4),), [torch.ones(4)]) is None and program.reference_calls == 0
