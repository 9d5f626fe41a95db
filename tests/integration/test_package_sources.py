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
                    check_seeds=1, processes=1)


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

    from perfbench.cli import main
    result = CliRunner().invoke(main, ["score", str(FIX / "tiny_task"), str(FIX / "tiny_task" / "solution.py"),
                                       "--cand-package", f"scorch={tmp_path}"])
    assert result.exit_code == 2 and "--cand-package" in result.output and "no package 'scorch' there" in result.output
