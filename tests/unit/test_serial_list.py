"""tests/conftest.py's SERIAL names tests that exist: a renamed test would otherwise leave the
list unnoticed and run beside another test, on the core it needs to itself."""
import importlib.util
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _conftest():
    spec = importlib.util.spec_from_file_location("_perfbench_tests_conftest", TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_serial_entry_names_a_test_that_exists():
    missing = []
    for entry in _conftest().SERIAL:
        path, _, name = entry.partition("::")
        file = TESTS / path
        if not file.is_file() or (name and not re.search(rf"^def {re.escape(name)}\(", file.read_text(), re.M)):
            missing.append(entry)
    assert missing == []


def test_a_serial_entry_marks_its_module_or_its_one_test_and_its_parameters():
    is_serial = _conftest()._is_serial
    assert is_serial("tests/plugin/test_plugin_against.py::test_coexists_with_pytest_benchmark")
    assert is_serial("tests/integration/test_score_batch.py::test_a_candidate_cannot_forge_its_batch_record[True-x]")
    assert not is_serial("tests/integration/test_score_batch.py::test_batch_usage_error_is_one_line")
    assert is_serial("tests/integration/test_cli_golden.py::test_score_batch_exit_codes_and_json")
    assert is_serial("tests/adversarial/test_exploits.py::test_extra_threads_rejected_with_the_sandbox_off")
    assert not is_serial("tests/integration/test_cli_golden.py::test_score_json_keys_and_exit_codes")
    assert not is_serial("tests/integration/test_score_batch_more.py::test_x")
