"""GPU MODE problem directories (#41): the format read as GPU MODE's runner reads it, its errors
named, and the problem's own code run on the CPU (--device cpu).  The problem under
tests/fixtures/gpumode was written for these tests (y = 2x + 1, into the output handed in);
its utils.py sits in the parent folder, as in reference-kernels."""
import math
import shutil
import sys
from pathlib import Path

import pytest
import torch

from perfbench.core import stats
from perfbench.core.errors import UsageError
from perfbench.task.correctness import record_of
from perfbench.core.score_key import ScoreKey
from perfbench.task.gpumode import GpuModeProblem, cuda_on_cpu, seed_bound
from perfbench.task.program import TaskProgram
from perfbench.task.spec import FORMAT_GPUMODE, load_task

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode"
PROBLEM = FIX / "axpb_py"


def test_a_problem_directory_is_read_as_gpu_mode_reads_it():
    spec = load_task(PROBLEM)
    assert (spec.format, spec.kind, spec.device, spec.entry_point, spec.family) == (
        FORMAT_GPUMODE, "perf", "cuda", "custom_kernel", "gpu-mode")
    assert spec.sizes == ("test0", "test1") and spec.benchmarks == ("benchmark0", "benchmark1")
    assert spec.cases["test1"] == {"size": 1000, "seed": 12} and spec.cases["benchmark1"] == {"size": 16384, "seed": 22}
    assert spec.file("reference") == PROBLEM / "reference.py"
    assert type(spec).from_dict(spec.to_dict()) == spec   # (what the workers are sent)


def test_set_cuts_the_benchmarks_for_a_cpu_check():
    spec = load_task(PROBLEM, {"size": "512", "benchmarks": "1"})
    assert spec.benchmarks == ("benchmark0",) and spec.cases["benchmark0"] == {"size": 512, "seed": 22}
    assert spec.cases["test0"] == {"size": 64, "seed": 11}   # the gate keeps its tests
    with pytest.raises(UsageError, match="--set sise: generate_input takes no 'sise' \\(it takes seed, size\\)"):
        load_task(PROBLEM, {"sise": "8"})
    with pytest.raises(UsageError, match="--set benchmarks=5: expected indices"):
        load_task(PROBLEM, {"benchmarks": "5"})


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(FIX, tmp_path / "set")
    return tmp_path / "set" / "axpb_py"


@pytest.mark.parametrize("edit,message", [
    (lambda p: (p / "reference.py").unlink(), "a GPU MODE problem needs reference.py"),
    (lambda p: (p / "task.yml").write_text((p / "task.yml").read_text().replace('{"size": 64', '{"sise": 64')),
     "tests[0]: generate_input takes no 'sise' (it takes seed, size)"),
    (lambda p: (p / "reference.py").write_text((p / "reference.py").read_text().replace("def check_implementation",
                                                                                      "def check")),
     "defines no check_implementation"),
    (lambda p: (p / "task.yml").write_text("tests: [1, 2]\nbenchmarks: []\n"), "`tests:` must be a non-empty list"),
    (lambda p: (p / "task.yml").unlink(), "not a perfbench task (no task.toml), a GPU MODE problem (no task.yml) nor a SOL-ExecBench problem (no definition.json)"),
])
def test_a_malformed_problem_names_what_is_wrong(tmp_path, edit, message):
    p = _copy(tmp_path)
    edit(p)
    with pytest.raises(UsageError) as exc:
        load_task(p)
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_the_problem_runs_on_the_cpu_with_its_own_judge():
    problem = GpuModeProblem(PROBLEM, load_task(PROBLEM).cases, on_cpu=True)
    x, out = problem.inputs(1234, "test1")
    assert x.device.type == "cpu" and x.shape == (1000,) and problem.tuple_data
    again, other = problem.inputs(1234, "test1"), problem.inputs(99, "test1")
    assert torch.equal(again[0], x) and not torch.equal(other[0], x)   # the seed is the one passed, not task.yml's
    before = out.clone()
    expected = problem.reference((x, out))
    assert torch.equal(out.view(torch.int32), before.view(torch.int32))   # the reference wrote into a copy
    assert torch.allclose(expected, 2 * x + 1)
    assert problem.check((x, out), 2 * x + 1) is None
    assert problem.check((x, out), torch.zeros(1000)) == "mismatch: 1000 elements differ"
    assert problem.check((x, out), torch.zeros(999)) == "mismatch: shape (999,), expected (1000,)"


def test_cuda_on_cpu_maps_devices_and_restores_torch():
    real_gen, real_sync = torch.Generator, torch.cuda.synchronize
    with cuda_on_cpu(True):
        g = torch.Generator(device="cuda")
        t = torch.randn(3, device="cuda", generator=g)
        assert t.device.type == "cpu" and torch.ones(2).to("cuda").device.type == "cpu"
        torch.cuda.synchronize()
        # a class, as torch's modules imported meanwhile annotate with it (torch.distributed did)
        assert str(torch.Generator | None).endswith("Generator | None")
    assert torch.Generator is real_gen and torch.cuda.synchronize is real_sync


def test_the_task_program_judges_with_check_implementation_and_lets_the_output_be_written():
    program = TaskProgram(load_task(PROBLEM), "cpu")
    inputs = program.make_inputs(7, "test0")
    right = [record_of(2 * inputs[0] + 1)]
    assert program.judges_itself and program.oracle(inputs) is None
    assert program.judge(inputs, right, [], size="test0") == []
    wrong = program.judge(inputs, [record_of(inputs[0])], [], size="test0")
    assert [f.reason for f in wrong] == ["correctness.mismatch"] and "check_implementation" in wrong[0].message
    baseline = program.load_callable(PROBLEM / "reference.py", untrusted=False)
    cand = program.load_callable(PROBLEM / "solutions" / "correct" / "fused.py", untrusted=True)
    assert torch.equal(baseline(*inputs), cand(*program.make_inputs(7, "test0")))


def test_utils_in_the_problem_directory_itself_is_found(tmp_path):
    root = tmp_path / "solo_py"
    shutil.copytree(PROBLEM, root)
    shutil.copy(FIX / "utils.py", root / "utils.py")
    for name in ("task", "utils", "reference"):
        sys.modules.pop(name, None)
    problem = GpuModeProblem(root, load_task(root).cases, on_cpu=True)
    assert Path(sys.modules["utils"].__file__).parent == root
    assert problem.check(problem.inputs(1, "test0"), torch.zeros(64)) is not None


def test_v1_problems_return_a_message():
    problem = GpuModeProblem(PROBLEM, load_task(PROBLEM).cases, on_cpu=True)
    problem.check_implementation = lambda data, output: ""
    assert problem.check(problem.inputs(1, "test0"), torch.zeros(64)) is None
    problem.check_implementation = lambda data, output: "mismatch found!"
    assert problem.check(problem.inputs(1, "test0"), torch.zeros(64)) == "mismatch found!"


def test_the_geometric_mean_of_benchmarks_carries_a_ci():
    g = stats.geometric_mean([stats.Estimate(2.0, 1.8, 2.2, 0.95), stats.Estimate(8.0, 7.0, 9.0, 0.95)])
    assert g.value == pytest.approx(4.0)
    assert math.log(g.value / g.low) == pytest.approx(math.hypot(math.log(2 / 1.8), math.log(8 / 7)) / 2)
    with pytest.raises(ValueError):
        stats.geometric_mean([])


SORT_REFERENCE = '''import torch
from utils import close_enough


def ref_kernel(data):
    return torch.sort(data)[0]


def generate_input(size: int, seed: int):
    # as pmpp sort_py: row i drawn around seed + i (the data depend on the seed's value)
    rows = int(size ** 0.5)
    cols = (size + rows - 1) // rows
    gen = torch.Generator(device="cuda")
    out = torch.empty((rows, cols), device="cuda", dtype=torch.float32)
    for i in range(rows):
        gen.manual_seed(seed + i)
        out[i, :] = torch.randn(cols, device="cuda", dtype=torch.float32, generator=gen) + seed + i
    return out.flatten()[:size].contiguous()


def check_implementation(data, output):
    return close_enough(output, ref_kernel(data), rtol=1e-5, atol=1e-8)
'''


def test_secret_seeds_stay_in_the_range_the_problem_uses_where_its_data_depend_on_their_value(tmp_path):
    """#58 (7): a sort problem whose row i is drawn around seed + i (pmpp sort_py).  With the
    secret seed taken below 2**31, every element was ~2.1e9, where float32's step is 256: all
    equal, so a descending sort and `sort + 1.0` both passed.  Seeds are drawn below the
    smallest power of two above the problem's own (93246 here: 2**17), and both are caught."""
    root = tmp_path / "sort_py"
    shutil.copytree(PROBLEM, root)
    (root / "reference.py").write_text(SORT_REFERENCE)
    yml = (root / "task.yml").read_text().split("\ntests:")[0] + "\n"
    (root / "task.yml").write_text(yml + "tests:\n  - {\"size\": 1023, \"seed\": 4242}\n"
                                   "benchmarks:\n  - {\"size\": 4096, \"seed\": 93246}\n")
    for name in ("task", "utils", "reference"):
        sys.modules.pop(name, None)
    program = TaskProgram(load_task(root), "cpu")
    assert program._gpumode.seed_bound == 1 << 17
    caught = {"descending": 0, "plus_one": 0}
    for seed in ScoreKey(timing=5, worker=6).check_seeds(12):   # the secret draws, as the gate makes them
        (data,) = program.make_inputs(seed, "test0")
        assert float(data.min()) > -10 and float(data.max()) < (1 << 17) + 40
        assert program.judge((data,), [record_of(torch.sort(data)[0])], [], size="test0") == []
        for name, cheat in (("descending", torch.sort(data, descending=True)[0]),
                            ("plus_one", torch.sort(data)[0] + 1.0)):
            caught[name] += bool(program.judge((data,), [record_of(cheat)], [], size="test0"))
    # the descending sort always; `+ 1.0` wherever rtol * value < 1 (values below 1e5: most draws,
    # and one is enough for the gate, which draws several per test)
    assert caught["descending"] == 12 and caught["plus_one"] >= 6
    # what the full 31 bits gave: nothing distinguishes the cheats from the sort
    with cuda_on_cpu(True):
        old = program._gpumode.generate_input(size=1023, seed=(1 << 31) - 5)
    assert torch.unique(old).numel() <= 2


@pytest.mark.parametrize("seeds, bound", [((), 1 << 16), ((11, 22), 1 << 16), ((4242, 93246), 1 << 17),
                                          ((65536,), 1 << 17), ((2**40,), 1 << 31)])
def test_the_seed_bound_is_a_power_of_two_above_the_problems_own_seeds(seeds, bound):
    cases = {f"test{i}": {"size": 8, "seed": s} for i, s in enumerate(seeds)} or {"test0": {"size": 8}}
    assert seed_bound(cases) == bound
