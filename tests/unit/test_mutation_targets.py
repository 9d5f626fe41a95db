"""scripts/mutation_check.py names each mutation by the text it replaces: when the code moves on,
a mutation whose text is gone silently stops testing anything (eight had, by #40).  This keeps
every one applicable: its text stands exactly once in its file."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _mutations():
    spec = importlib.util.spec_from_file_location("mutation_check", ROOT / "scripts" / "mutation_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutation_check", module)   # (its dataclass looks its module up)
    spec.loader.exec_module(module)
    return module.MUTATIONS


def test_every_mutation_applies_to_the_code_as_it_is():
    stale = [f"{m.name}: found {(ROOT / m.file).read_text().count(m.old) if (ROOT / m.file).exists() else 'no file'}"
             f" times in {m.file}" for m in _mutations()
             if not (ROOT / m.file).exists() or (ROOT / m.file).read_text().count(m.old) != 1]
    assert stale == []


def test_every_mutation_names_tests_that_exist():
    missing = [f"{m.name}: {t}" for m in _mutations() for t in m.tests if not (ROOT / t.split("::")[0]).exists()]
    assert missing == []
