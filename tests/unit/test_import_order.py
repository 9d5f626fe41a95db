"""`perfbench score` spawns its zygotes before it imports torch (pipeline/score.py): the modules
on that path must not import torch, or the scorer's import runs before the zygotes' again."""
import subprocess
import sys

import pytest

import perfbench

TORCH_FREE = ("perfbench", "perfbench.cli.main", "perfbench.pipeline.score", "perfbench.pipeline.sandboxes",
              "perfbench.isolation.processes.fork_server", "perfbench.device.lease", "perfbench.cli.report",
              "perfbench.isolation.processes.worker", "perfbench.isolation.processes.zygote")


def test_the_path_that_spawns_the_zygotes_does_not_import_torch():
    code = f"import sys\nfor m in {TORCH_FREE!r}:\n    __import__(m)\n    assert 'torch' not in sys.modules, m\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_compare_is_imported_on_first_use():
    from perfbench.pipeline.compare import compare

    assert perfbench.compare is compare
    with pytest.raises(AttributeError, match="no attribute 'comapre'"):
        perfbench.comapre  # noqa: B018
