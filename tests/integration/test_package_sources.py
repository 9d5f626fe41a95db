"""--cand-package / --base-package: a side imports a package from a checkout instead of the
installed copy (two revisions of a compiler), and the candidate's sandbox shows that checkout."""
import dataclasses
from pathlib import Path

import pytest

from perfbench.pipeline.config import PackageSource
from perfbench.pipeline.score import ScoreConfig, score
from perfbench.timing.sampler import SamplerConfig

FIX = Path(__file__).resolve().parents[1] / "fixtures"
QUICK = ScoreConfig(sampler=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.05), call_timeout_s=20,
                    check_seeds=1, processes=1, s_ref_policy="table")


@pytest.fixture
def checkout(tmp_path):
    """A package `fakeaxpy` that is not installed, in a src/ layout like Scorch's."""
    root = tmp_path / "fakeaxpy-checkout"
    (root / "src" / "fakeaxpy").mkdir(parents=True)
    (root / "setup.py").write_text("")
    (root / "src" / "fakeaxpy" / "__init__.py").write_text(
        "import torch\n\n\ndef axpy(x, y):\n    return torch.add(y, x, alpha=2)\n")
    cand = tmp_path / "candidate.py"
    cand.write_text("from fakeaxpy import axpy\n\n\ndef kernel(x, y):\n    return axpy(x, y)\n")
    return root, cand


def test_the_candidate_imports_a_package_from_the_checkout_it_is_given(checkout):
    root, cand = checkout
    r = score(FIX / "tiny_task", cand, dataclasses.replace(QUICK, cand_packages=(PackageSource.parse(f"fakeaxpy={root}"),)))
    assert r.verdict == "scored", r.reasons
    assert r.comparison.extra["package_sources"] == {"candidate": {"fakeaxpy": str(root.resolve())}}
    assert str(root.resolve()) in r.isolation["details"]["exposed"]


def test_without_the_checkout_the_candidate_cannot_import_it(checkout):
    _, cand = checkout
    r = score(FIX / "tiny_task", cand, QUICK)
    assert [x.code for x in r.reasons] == ["candidate.import_error"] and "fakeaxpy" in r.reasons[0].message


@pytest.mark.parametrize("text,message", [("fakeaxpy", "expected NAME=PATH"), ("=x", "expected NAME=PATH"),
                                          ("other=CHECKOUT", "no package 'other' there")])
def test_a_bad_package_source_says_what_is_wrong(checkout, text, message):
    with pytest.raises(ValueError, match=message):
        PackageSource.parse(text.replace("CHECKOUT", str(checkout[0])))


def test_the_cli_flag_is_a_one_line_usage_error(tmp_path):
    from click.testing import CliRunner

    from perfbench.cli.main import main
    result = CliRunner().invoke(main, ["score", str(FIX / "tiny_task"), str(FIX / "tiny_task" / "solution.py"),
                                       "--cand-package", f"scorch={tmp_path}"])
    assert result.exit_code == 2 and "--cand-package" in result.output and "no package 'scorch' there" in result.output


WRITES_INTO_ITS_PACKAGE = '''
import os

import fakeaxpy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(fakeaxpy.__file__)))


def _try(fn):
    try:
        fn()
    except OSError:
        pass


# The checkout the candidate was shown is also what the next run (or a trusted baseline given
# the same --base-package) imports: poison its module, drop a module beside it, rewrite setup.py.
_try(lambda: open(fakeaxpy.__file__, "a").write("\\naxpy = lambda x, y: y\\n"))
_try(lambda: open(os.path.join(ROOT, "src", "planted.py"), "w").write("x = 1\\n"))
_try(lambda: open(os.path.join(ROOT, "setup.py"), "w").write("import os\\n"))


def kernel(x, y):
    return fakeaxpy.axpy(x, y)
'''


def test_a_candidate_cannot_write_into_the_checkout_it_is_shown(checkout, tmp_path):
    root, _ = checkout
    cand = tmp_path / "writes.py"
    cand.write_text(WRITES_INTO_ITS_PACKAGE)
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    r = score(FIX / "tiny_task", cand, dataclasses.replace(QUICK, cand_packages=(PackageSource.parse(f"fakeaxpy={root}"),)))
    assert r.verdict == "scored", r.reasons   # its writes failed (read-only), so it is still correct
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
