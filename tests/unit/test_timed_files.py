"""s_ref belongs to the task's files as they were measured (task/timed_files.py): an edit to what
is timed makes a bench_configs entry stale, an edit elsewhere does not."""
import datetime
import shutil
from pathlib import Path

from perfbench.core.verdict import S_REF_LIVE
from perfbench.pipeline.calibrate import Calibration, _comparable
from perfbench.pipeline.config import ScoreConfig
from perfbench.pipeline.s_ref_choice import choose_s_ref
from perfbench.task import bench_configs
from perfbench.task.spec import load_task
from perfbench.task.timed_files import timed_files_digest

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_task"
FP = {"host": {"cpu_model": "Test CPU"}}


def _copy(tmp_path: Path, name: str = "task") -> Path:
    dst = tmp_path / name
    shutil.copytree(TINY, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def _touch(path: Path) -> None:
    path.write_text(path.read_text() + "\n# edited\n")


def test_the_digest_is_of_the_timed_files_wherever_the_task_lies(tmp_path):
    a, b = _copy(tmp_path, "a"), _copy(tmp_path, "b")
    digest = timed_files_digest(load_task(a))
    assert len(digest) == 12 and digest == timed_files_digest(load_task(b))
    _touch(b / "reference.py")   # correctness, not speed
    _touch(b / "starter.py")     # where a candidate starts, not s_ref
    assert timed_files_digest(load_task(b)) == digest
    for name in ("task.toml", "inputs.py", "baseline.py", "solution.py"):
        c = _copy(tmp_path, f"c_{name}")
        _touch(c / name)
        assert timed_files_digest(load_task(c)) != digest, name


def test_the_shared_sources_a_solution_builds_from_are_timed_files(tmp_path):
    task = _copy(tmp_path)
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.cpp").write_text("int f() { return 1; }\n")
    (task / "task.toml").write_text((task / "task.toml").read_text() + '\n[sandbox]\nshared = ["../kernels"]\n')
    before = timed_files_digest(load_task(task))
    (tmp_path / "kernels" / "__pycache__").mkdir()
    (tmp_path / "kernels" / "__pycache__" / "k.pyc").write_bytes(b"\0")
    assert timed_files_digest(load_task(task)) == before
    _touch(tmp_path / "kernels" / "k.cpp")
    assert timed_files_digest(load_task(task)) != before


def test_an_s_ref_measured_on_other_timed_files_is_not_taken_as_this_tasks(tmp_path):
    """auto measures s_ref live instead, and says why; table uses it, and warns."""
    task, configs = _copy(tmp_path), tmp_path / "configs"
    spec = load_task(task)
    key = bench_configs.device_key("cpu", FP, spec.threads)
    bench_configs.write(key, [Calibration(spec.name, 3.0, 2.9, 3.1, 30, (3.0,),
                                          task_files=timed_files_digest(spec))], configs)
    found = bench_configs.lookup(spec.name, key, configs)
    assert found.task_files == timed_files_digest(spec)
    today = datetime.date.fromisoformat(found.measured)
    auto, table = (ScoreConfig(bench_configs_dir=configs, s_ref_policy=p) for p in ("auto", "table"))
    assert choose_s_ref(spec, "cpu", FP, auto, today)[:3] == (3.0, f"bench_configs/{key}.toml", [])

    _touch(task / "inputs.py")
    edited = load_task(task)
    value, source, warnings, _ = choose_s_ref(edited, "cpu", FP, auto, today)
    assert (value, source) == (None, S_REF_LIVE)
    assert warnings == [f"bench_configs/{key}.toml's s_ref for {spec.name} is not fresh: it was measured on other "
                        "versions of the task's timed files; s_ref is measured live instead (docs/verdict.md)"]
    value, source, warnings, _ = choose_s_ref(edited, "cpu", FP, table, today)
    assert (value, source) == (3.0, f"bench_configs/{key}.toml") and len(warnings) == 1
    assert f"digest {found.task_files}, now {timed_files_digest(edited)}" in warnings[0]
    assert "run `perfbench calibrate` again" in warnings[0]


def test_calibrate_neither_resumes_nor_compares_with_an_entry_of_other_timed_files():
    from perfbench.core.crossover import PROTOCOL_VERSION

    entry = {"s_ref": 3.0, "protocol": PROTOCOL_VERSION, "task_files": "aaaaaaaaaaaa"}
    assert _comparable(entry, "aaaaaaaaaaaa") is entry
    assert _comparable(entry, "bbbbbbbbbbbb") is None
    unrecorded = {"s_ref": 3.0, "protocol": PROTOCOL_VERSION}   # written before digests: taken as current
    assert _comparable(unrecorded, "bbbbbbbbbbbb") is unrecorded
    assert _comparable({"s_ref": 3.0}, "aaaaaaaaaaaa") is None   # protocol 1


def test_the_contract_and_the_work_tables_leave_the_digest_standing(tmp_path):
    # They check the candidate and report on the timing; they do not change what is timed.  A
    # [contract] added to every shipped task.toml (#58) read every calibration as stale until then.
    a = _copy(tmp_path, "a")
    digest = timed_files_digest(load_task(a))
    toml = a / "task.toml"
    toml.write_text(toml.read_text() + '\n[contract]\ntransforms = ["scale:100"]\n\n[work]\nflops = "none"\n')
    assert timed_files_digest(load_task(a)) == digest
    toml.write_text(toml.read_text().replace('"scale:100"', '"shift:1"'))
    assert timed_files_digest(load_task(a)) == digest
    toml.write_text(toml.read_text().replace("pairs = 6", "pairs = 7"))   # what the timing reads: a new version
    assert timed_files_digest(load_task(a)) != digest
