"""SOL-ExecBench problems (#62): the format, the solution, the inputs and the judge, in process."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from perfbench.core.errors import CandidateRejected, EnvironmentUnavailable, UsageError
from perfbench.task import solexec_solution
from perfbench.task.correctness import record_of
from perfbench.task.program import TaskProgram
from perfbench.task.solexec_problem import tolerance_failures
from perfbench.task.solexec_values import domain, draw
from perfbench.task.spec import FORMAT_SOLEXEC, TaskSpec, load_task

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sol_execbench"
PROBLEM = FIX / "own" / "axpy_head"
UPSTREAM = FIX / "upstream"


def bound(tmp_path: Path, solution: str, problem: Path = PROBLEM, overrides: dict | None = None,
          **source) -> tuple[TaskSpec, solexec_solution.Solution]:
    spec = load_task(problem, overrides or {})
    into = tmp_path / "sources"
    into.mkdir(parents=True, exist_ok=True)
    sol = solexec_solution.read(problem / solution, source.get("entry_point"), source.get("dps", False), into)
    return solexec_solution.bind(spec, sol), sol


def call(program: TaskProgram, fn, x: tuple) -> tuple[list, list]:
    out = fn(*x)
    outs = out if isinstance(out, tuple) else (out,)
    return [record_of(o, x) for o in outs], [record_of(i) for i in x]


# -- the format --------------------------------------------------------------------------------
def test_a_problem_loads_with_its_axes_resolved_and_its_workloads_as_benchmarks():
    spec = load_task(PROBLEM)
    assert (spec.format, spec.name, spec.device, spec.family) == (FORMAT_SOLEXEC, "axpy_head", "cuda", "sol-execbench")
    assert spec.sizes == spec.benchmarks == ("workload0", "workload1")
    assert spec.cases["workload0"]["axes"] == {"cols": 64, "rows": 3, "half": 32}
    assert spec.cases["workload1"]["tolerance"] == {"max_atol": 1e-2, "max_rtol": 1e-2, "required_matched_ratio": 0.99,
                                                    "max_error_cap": None, "allow_negative_inf": False}
    assert spec.cases["workload0"]["tolerance"]["required_matched_ratio"] == 1.0
    assert spec.shown_case("workload1") == {"uuid": "axpy-40", "rows": 40}
    assert (spec.contract, spec.contract_args) == (("scale:100", "scale:0.01"), (0, 1))   # x, y; alpha: a scalar
    assert TaskSpec.from_dict(spec.to_dict()) == spec


def test_set_shrinks_a_const_axis_and_selects_workloads():
    spec = load_task(PROBLEM, {"cols": "8", "workloads": "1"})
    assert spec.benchmarks == ("workload1",)
    assert spec.cases["workload1"]["axes"] == {"cols": 8, "rows": 40, "half": 4}


@pytest.mark.parametrize("overrides,needle", [
    ({"rows": "2"}, "--set rows: not a const axis of definition.json (const axes: cols)"),
    ({"cols": "x"}, "--set cols=x: a const axis takes an integer"),
    ({"workloads": "0,2"}, "--set workloads=0,2: expected indices of workload.jsonl's lines (0..1)"),
])
def test_set_errors(overrides, needle):
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        load_task(PROBLEM, overrides)



@pytest.mark.parametrize("edit,needle", [
    (lambda p: (p / "workload.jsonl").unlink(), "a SOL-ExecBench problem needs workload.jsonl"),
    (lambda p: _rewrite(p, lambda d: d["inputs"]["x"].update(dtype="float12")), "inputs.x: unknown dtype 'float12'"),
    (lambda p: _rewrite(p, lambda d: d["outputs"]["out"].update(dtype="float4_e2m1fn_x2")),
     "outputs.out: dtype float4_e2m1fn_x2 (packed FP4) is not supported"),
    (lambda p: _rewrite(p, lambda d: d["axes"]["half"].update(expression="__import__('os').getpid()")),
     "may use numbers, axis names and"),
    (lambda p: _rewrite(p, lambda d: d["axes"]["half"].update(expression="cols // nope")), "names 'nope'"),
    (lambda p: _rewrite(p, lambda d: d["inputs"]["x"].update(shape=["rows", "depth"])), "inputs.x: shape"),
    (lambda p: _rewrite(p, lambda d: d.update(reference="def go(x):\n    return x\n")), "defines run(...)"),
    (lambda p: (p / "definition.json").write_text("{"), "definition.json:1: invalid JSON"),
    (lambda p: (p / "workload.jsonl").write_text('{"axes": {"rows": 2}, "inputs": {"z": {"type": "random"}}}\n'),
     "`inputs` must be an object over the definition's inputs (x, y, alpha)"),
    (lambda p: (p / "workload.jsonl").write_text('{"axes": {"rows": 2}, "inputs": {"x": {"type": "scalar", "value": 1}}}\n'),
     "inputs.x: a scalar input needs a `value` and a null shape"),
    (lambda p: (p / "workload.jsonl").write_text(
        '{"axes": {}, "inputs": {"x": {"type": "random"}, "y": {"type": "random"}, "alpha": {"type": "scalar", "value": 1}}}\n'),
     "var axis 'rows' needs a size, got None"),
])
def test_format_errors_name_the_file_and_field(tmp_path, edit, needle):
    problem = tmp_path / "axpy_head"
    shutil.copytree(PROBLEM, problem)
    edit(problem)
    with pytest.raises(UsageError) as err:
        load_task(problem)
    assert needle in str(err.value) and "\n" not in str(err.value)


def _rewrite(problem: Path, change) -> None:
    d = json.loads((problem / "definition.json").read_text())
    change(d)
    (problem / "definition.json").write_text(json.dumps(d))


# -- the solution --------------------------------------------------------------------------------
def test_a_solution_json_is_written_out_and_bound(tmp_path):
    spec, sol = bound(tmp_path, "solution_dps.json")
    assert (sol.function, sol.languages, sol.destination_passing) == ("fused", ("pytorch",), True)
    assert sol.file == tmp_path / "sources" / "kernel.py" and (tmp_path / "sources" / "helpers.py").is_file()
    assert (spec.entry_point, spec.destination_passing, spec.shared) == ("fused", True, (str(tmp_path / "sources"),))


@pytest.mark.parametrize("change,needle", [
    (lambda d: d["spec"].update(entry_point="other.py::fused"), "names no file of `sources` (kernel.py)"),
    (lambda d: d["sources"][0].update(path="../kernel.py"), "sources[0] needs a relative `path`"),
    (lambda d: d["spec"].update(languages=["fortran"]), "spec.languages must list some of"),
    (lambda d: d["spec"].update(entry_point="kernel.py::"), "is not a function name"),
    (lambda d: d.pop("sources"), "a solution needs `spec` and a non-empty list of `sources`"),
])
def test_solution_errors(tmp_path, change, needle):
    d = json.loads((PROBLEM / "solution_return.json").read_text())
    change(d)
    (tmp_path / "solution.json").write_text(json.dumps(d))
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        solexec_solution.read(tmp_path / "solution.json", None, False, tmp_path)


def test_source_file_entry_point_and_its_errors(tmp_path):
    sol = solexec_solution.read(PROBLEM / "kernel.py", "kernel.py::fused", False, tmp_path)
    assert (sol.file, sol.function, sol.sources_dir) == (PROBLEM / "kernel.py", "fused", None)
    with pytest.raises(UsageError, match="names other.py, but the candidate is kernel.py"):
        solexec_solution.read(PROBLEM / "kernel.py", "other.py::fused", False, tmp_path)
    with pytest.raises(UsageError, match="--entry-point and --dps are for a source file"):
        solexec_solution.read(PROBLEM / "solution_dps.json", "kernel.py::fused", False, tmp_path)
    spec, _ = bound(tmp_path, "kernel.py", entry_point="nowhere")
    with pytest.raises(CandidateRejected) as err:
        TaskProgram(spec, "cpu").load_callable(PROBLEM / "kernel.py", untrusted=True)
    assert err.value.reason == "candidate.missing_entry_point" and "'nowhere'" in err.value.message


def test_a_compiled_language_is_unsupported_in_one_line(tmp_path):
    problem = UPSTREAM / "cuda_cpp" / "rmsnorm"
    sol = solexec_solution.read(problem / "solution_cuda.json", None, False, tmp_path)
    with pytest.raises(EnvironmentUnavailable) as err:
        sol.check_runs(problem / "solution_cuda.json")
    assert str(err.value).startswith("candidate.unsupported: ") and err.value.exit_code == 2
    assert "a cuda_cpp solution" in str(err.value)


# -- inputs ----------------------------------------------------------------------------------------
def test_inputs_follow_the_definition_from_the_secret_seed(tmp_path):
    spec, _ = bound(tmp_path, "solution_dps.json")
    program = TaskProgram(spec, "cpu")
    x, y, alpha, out, head = program.make_inputs(7, "workload0")
    assert (x.shape, x.dtype, y.dtype, alpha) == ((3, 64), torch.float32, torch.bfloat16, 0.5)
    assert (out.shape, out.dtype, head.shape, head.dtype) == ((3, 64), torch.float32, (3, 32), torch.bfloat16)
    assert bool((out.view(torch.int32) == -1).all()) and bool((head.view(torch.int16) == -1).all())   # 0xFF bytes
    again = program.make_inputs(7, "workload0")
    other = program.make_inputs(8, "workload0")
    assert torch.equal(x, again[0]) and not torch.equal(x, other[0])


def test_a_norm_weight_is_drawn_around_one_never_constant():
    g = torch.Generator().manual_seed(0)
    w = draw("input_layernorm_weight", (4096,), torch.float32, None, g, "cpu")
    assert domain("input_layernorm_weight", (4096,), None, True) == "norm_weight"
    assert abs(float(w.mean()) - 1.0) < 0.01 and 0.05 < float(w.std()) < 0.2
    m = draw("o_proj_weight", (256, 1024), torch.float32, None, g, "cpu")
    assert abs(float(m.std()) - 1024 ** -0.5) < 0.002
    assert domain("hidden_states", (8, 4096), None, True) is None and domain("eps", None, None, True) is None


# -- the judge ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("solution,reason", [
    ("solution_return.json", None), ("solution_dps.json", None),
    ("solution_wrong.json", "correctness.mismatch"), ("solution_untouched.json", "correctness.uninitialised")])
def test_the_judge_on_each_solution(tmp_path, solution, reason):
    spec, sol = bound(tmp_path, solution)
    program = TaskProgram(spec, "cpu")
    fn = program.load_callable(sol.file, untrusted=True)
    for size in spec.sizes:
        x = program.make_inputs(11, size)
        fails = program.judge(x, *call(program, fn, x), size=size)
        assert [f.reason for f in fails][:1] == ([reason] if reason else []), fails
    if reason:
        assert "output head: " in fails[0].message


def test_the_judge_refuses_a_written_input_a_wrong_dtype_and_a_missing_output(tmp_path):
    spec, sol = bound(tmp_path, "solution_return.json")
    program = TaskProgram(spec, "cpu")
    x = program.make_inputs(3, "workload1")
    ref = program.reference(x)
    ins = [record_of(i) for i in x]

    def judge(outs, ins=ins):
        return [f.reason for f in program.judge(x, [record_of(o, x) for o in outs], ins, size="workload1")]

    assert judge(ref) == []
    assert judge([ref[0]]) == ["output.structure"]
    assert judge([ref[0].double(), ref[1]]) == ["correctness.dtype"]
    assert judge([torch.zeros_like(ref[0]), ref[1]]) == ["correctness.mismatch"]
    assert judge([torch.full_like(ref[0], float("nan")), ref[1]]) == ["correctness.nan"]
    changed = x[0].clone()
    changed[0, 0] += 1
    assert judge(ref, [record_of(changed)] + ins[1:]) == ["correctness.input_mutated"]


def test_tolerance_rules_as_upstream_has_them():
    ref = torch.ones(1000)
    tol = {"max_atol": 1e-2, "max_rtol": 1e-2, "required_matched_ratio": 0.99, "max_error_cap": None,
           "allow_negative_inf": False}
    ten_off, twenty_off = ref.clone(), ref.clone()
    ten_off[:10] += 1.0
    twenty_off[:20] += 1.0
    assert tolerance_failures(ten_off, ref, tol) == []          # 99.0% matched
    assert "98.00% matched, 99.00% required" in tolerance_failures(twenty_off, ref, tol)[0].message
    assert "above max_error_cap 0.5" in tolerance_failures(ten_off, ref, dict(tol, max_error_cap=0.5))[0].message
    neg = torch.tensor([float("-inf"), 1.0])
    assert tolerance_failures(neg, neg, tol)[0].reason == "correctness.nan"
    assert tolerance_failures(neg, neg, dict(tol, allow_negative_inf=True)) == []


# -- upstream's examples -------------------------------------------------------------------------------
@pytest.mark.parametrize("example,overrides", [
    ("pytorch/gemma3_swiglu", {"hidden_size": "64", "intermediate_size": "128"}),
    ("pytorch/linear_backward", {})])
def test_upstream_python_solutions_pass_every_workload(tmp_path, example, overrides):
    problem = UPSTREAM / example
    spec, sol = bound(tmp_path, "solution_python.json", problem, overrides)
    program = TaskProgram(spec, "cpu")
    fn = program.load_callable(sol.file, untrusted=True)
    for size in spec.sizes:
        x = program.make_inputs(5, size)
        assert program.judge(x, *call(program, fn, x), size=size) == [], size


def test_the_candidate_sandbox_shows_the_problem_files_and_the_solution_sources_only(tmp_path):
    from perfbench.pipeline.sandboxes import candidate_files

    spec, sol = bound(tmp_path, "solution_dps.json")
    expose, hide = candidate_files(spec, sol.file)
    assert expose == (str(sol.file), str(PROBLEM / "definition.json"), str(PROBLEM / "workload.jsonl"),
                      str(tmp_path / "sources"))
    assert hide == () and str(PROBLEM / "kernel.py") not in expose


def test_safetensors_inputs_are_read_from_the_problem_directory(tmp_path):
    from safetensors.torch import save_file

    problem = tmp_path / "axpy_head"
    shutil.copytree(PROBLEM, problem)
    stored = torch.arange(3 * 64, dtype=torch.float32).reshape(3, 64)
    (problem / "blobs").mkdir()
    save_file({"x0": stored, "bad": torch.zeros(2)}, str(problem / "blobs" / "x.safetensors"))
    line = json.loads((problem / "workload.jsonl").read_text().splitlines()[0])
    line["inputs"]["x"] = {"type": "safetensors", "path": "blobs/x.safetensors", "tensor_key": "x0"}
    (problem / "workload.jsonl").write_text(json.dumps(line) + "\n")
    program = TaskProgram(load_task(problem), "cpu")
    assert torch.equal(program.make_inputs(1, "workload0")[0], stored)
    line["inputs"]["x"]["tensor_key"] = "bad"
    (problem / "workload.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(UsageError, match=r"'bad' for input 'x': expected \[3, 64\] torch.float32, found \[2\]"):
        TaskProgram(load_task(problem), "cpu").make_inputs(1, "workload0")


def test_a_destination_passing_output_counts_once_in_the_work(tmp_path):
    from perfbench.task.work import count_work

    sizes = {}
    for solution in ("solution_return.json", "solution_dps.json"):
        spec, _ = bound(tmp_path / solution, solution)
        sizes[solution] = count_work(TaskProgram(spec, "cpu"), "workload1").bytes
    # x (f32) and y (bf16) in, out (f32) and head (bf16, half the columns) out: 40 rows x 64
    assert sizes["solution_return.json"] == sizes["solution_dps.json"] == 40 * 64 * (4 + 2 + 4) + 40 * 32 * 2


def test_an_input_a_workload_does_not_name_is_drawn_at_random(tmp_path):
    problem = tmp_path / "axpy_head"
    shutil.copytree(PROBLEM, problem)
    (problem / "workload.jsonl").write_text('{"axes": {"rows": 2}, "inputs": {"x": {"type": "random"}}}\n')
    spec = load_task(problem)
    assert {k: v["type"] for k, v in spec.cases["workload0"]["inputs"].items()} == {
        "x": "random", "y": "random", "alpha": "random"}
    x, y, alpha = TaskProgram(spec, "cpu").make_inputs(4, "workload0")
    assert y.shape == (2, 64) and isinstance(alpha, float)


@pytest.mark.parametrize("problem", [PROBLEM, FIX.parents[0] / "gpumode" / "axpb_py"])
def test_validate_and_calibrate_refuse_a_problem_in_one_line(problem):
    from perfbench.pipeline.calibrate import calibrate
    from perfbench.pipeline.validate import validate

    for run, command in ((lambda: validate(problem), "validate"), (lambda: calibrate([problem]), "calibrate")):
        with pytest.raises(UsageError, match=f"{command} times a task's solution.py; a .* problem has none"):
            run()


def test_a_reference_that_refuses_a_shrunk_axis_says_where_in_one_line():
    spec = load_task(UPSTREAM / "triton" / "rmsnorm", {"hidden_size": "512", "workloads": "1"})
    program = TaskProgram(spec, "cpu")
    with pytest.raises(UsageError) as err:
        program.reference(program.make_inputs(1, "workload1"))
    assert str(err.value).endswith("definition.json: reference run raised AssertionError at reference line 7: "
                                   "`assert hidden_size == 4096` (a const axis changed with --set?)")


@pytest.mark.parametrize("same_inputs", [False, True])
def test_each_workload_is_judged_with_its_own_tolerance(tmp_path, same_inputs):
    """By the workload the inputs were made for, not by what they look like: two workloads with
    inputs alike (`same_inputs`: the second given the first's axes and scalar) keep their own
    tolerances."""
    problem = tmp_path / "problem"
    shutil.copytree(PROBLEM, problem)
    if same_inputs:
        lines = [json.loads(x) for x in (problem / "workload.jsonl").read_text().splitlines()]
        lines[1]["axes"], lines[1]["inputs"] = lines[0]["axes"], lines[0]["inputs"]
        (problem / "workload.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    spec, sol = bound(tmp_path, "solution_wrong.json", problem)
    program = TaskProgram(spec, "cpu")
    fn = program.load_callable(sol.file, untrusted=True)
    required = {}
    for size in spec.sizes:
        x = program.make_inputs(2, size)
        fails = program.judge(x, *call(program, fn, x), size=size)
        required[size] = fails[0].message.split("matched, ")[1].split(" ")[0]
    assert required == {"workload0": "100.00%", "workload1": "99.00%"}


def test_one_unwritten_element_of_a_dps_output_is_caught(tmp_path):
    spec, sol = bound(tmp_path, "solution_dps.json")
    program = TaskProgram(spec, "cpu")
    x = program.make_inputs(6, "workload1")
    ref = program.reference(x)
    out, head = x[3], x[4]
    out.copy_(ref[0])
    head.view(-1)[:-1].copy_(ref[1].view(-1)[:-1])   # the last element keeps its poison
    fails = program.judge(x, [record_of(out, x), record_of(head, x)], [record_of(i) for i in x], size="workload1")
    assert [f.reason for f in fails] == ["correctness.uninitialised"] and fails[0].message.startswith("output head: ")
