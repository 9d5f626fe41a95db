"""`perfbench peaks` from the command line: its JSON and its one-line errors."""
import json


def test_the_command_prints_json_and_refuses_a_bad_thread_count(run_cli):
    ok = run_cli("peaks", "--quick", "--json")
    assert ok.returncode == 0, ok.stderr
    assert set(json.loads(ok.stdout)) == {"device", "threads", "caches", "bandwidth", "gemm", "seconds", "datasheet"}
    bad = run_cli("peaks", "--threads", "0")
    assert bad.returncode == 2 and bad.stderr.strip() == "perfbench: error: --threads 0: at least 1"
