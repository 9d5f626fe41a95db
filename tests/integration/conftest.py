import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_cli(tmp_path):
    """Run `perfbench ARGS` in a subprocess from tmp_path; returns CompletedProcess."""
    def run(*args, timeout=300, env=None):
        env = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
        return subprocess.run([sys.executable, "-m", "perfbench.cli.main", *map(str, args)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=timeout, env=env)
    return run


@pytest.fixture
def write(tmp_path):
    def w(name, text):
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
        return p
    return w
