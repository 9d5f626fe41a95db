"""Citations of the measurement diary name a file and a heading that exist.

Code and docs say why in the present tense; the figures are in benchmarks/results/<topic>.md,
cited as `benchmarks/results/<topic>.md, "<heading>"`: the heading's text, or for a dated
heading (`## 2026-12-06 (22:19-23:52): #59 measured first: ...`) a prefix of its title after the
date, so that no dated line enters perfbench/ or docs/.  The prefix must name one heading of
that file.  A citation may wrap across lines of a comment, a docstring or a paragraph.
"""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"

CITATION = re.compile(r'benchmarks/\s*results/([\w.-]+\.md)(?:,\s*"([^"]+)")?')
DATED = re.compile(r"^20\d\d-\d\d-\d\d(?: \.\. 20\d\d-\d\d-\d\d)?(?: \([^)]*\))?: ")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")
# The old single diary cited for its figures: `benchmarks/RESULTS.md has the figures`,
# `benchmarks/RESULTS.md, "<heading>"` or `benchmarks/RESULTS.md ("<heading>")`.
OLD_DIARY = re.compile(r'RESULTS\.md(?:\s+has\s+the\s+(?:figures|measurements)|,\s*"|\s*\(\s*")')


def python_text(source: str) -> str:
    """A Python file's comments (without their `#`) and string literals, in order, one text."""
    parts = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            parts.append(tok.string.lstrip("#"))
        elif tok.type == tokenize.STRING:
            parts.append(tok.string)
    return " ".join(parts)


def normalised(text: str) -> str:
    return " ".join(text.split())


def text_of(path: Path) -> str:
    source = path.read_text(encoding="utf-8")
    return normalised(python_text(source) if path.suffix == ".py" else source)


def headings(path: Path) -> list[str]:
    """The `##` and deeper headings of a Markdown file (its `#` title is not a figure's)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^(#{2,6}) (.+?)\s*$", line)
        if m:
            out.append(m.group(2))
    return out


def matches(cited: str, heading: str) -> bool:
    return heading.startswith(cited) or DATED.sub("", heading, count=1).startswith(cited)


def bad_citations(text: str, where: str, results: Path = RESULTS) -> list[str]:
    """What is wrong with each citation in `text` (already normalised), as readable lines."""
    bad = []
    for m in CITATION.finditer(text):
        name, cited = m.group(1), m.group(2)
        path = results / name
        if not path.is_file():
            bad.append(f"{where}: {m.group(0)!r}: no file benchmarks/results/{name}")
            continue
        if cited is None:
            continue   # the topic file alone
        found = [h for h in headings(path) if matches(cited, h)]
        if len(found) != 1:
            why = "no heading starts with it" if not found else f"{len(found)} headings start with it"
            bad.append(f"{where}: {m.group(0)!r}: {why} in benchmarks/results/{name}")
    return bad


def cited_files() -> list[Path]:
    files = sorted((ROOT / "perfbench").rglob("*.py")) + sorted((ROOT / "docs").rglob("*.md"))
    files += [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    files += sorted((ROOT / "benchmarks").glob("*.py"))
    return files


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_every_citation_names_a_file_and_a_heading_in_it():
    bad, seen = [], 0
    for path in cited_files():
        text = text_of(path)
        seen += len(CITATION.findall(text))
        bad += bad_citations(text, rel(path))
    assert seen > 0, "no citation of benchmarks/results/ found: the parser is broken"
    assert not bad, "citations of benchmarks/results/ that do not resolve:\n" + "\n".join(bad)


def test_no_dated_line_in_perfbench_or_docs():
    dated = []
    for path in sorted((ROOT / "perfbench").rglob("*.py")) + sorted((ROOT / "docs").rglob("*.md")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if DATE.search(line):
                dated.append(f"{rel(path)}:{n}: {line.strip()}")
    assert not dated, "dates belong in benchmarks/results/, not here:\n" + "\n".join(dated)


def test_nothing_cites_the_old_single_diary():
    old = []
    for path in cited_files():
        for m in OLD_DIARY.finditer(text_of(path)):
            old.append(f"{rel(path)}: {m.group(0)!r}")
    assert not old, "cite benchmarks/results/<topic>.md, \"<heading>\" instead:\n" + "\n".join(old)


def test_the_parser_finds_a_bad_citation(tmp_path):
    (tmp_path / "topic.md").write_text("# Topic\n\n## Figures the code and docs cite\n\n"
                                       "### A figure, measured\n\n"
                                       "## 2026-12-06 (22:19-23:52): #59 measured first: more (`host`)\n"
                                       "## 2026-12-05: #38, one\n## 2026-12-04: #38, two\n")
    source = ('x = 1  # a wrapped good one (benchmarks/results/topic.md, "A figure,\n'
              '# measured"), a dated one (benchmarks/results/topic.md, "#59 measured\n'
              '#   first"), and bad ones (benchmarks/results/topic.md, "No such\n'
              '# heading"; benchmarks/results/nope.md, "A figure"; benchmarks/results/topic.md,\n'
              '# "#38, "; benchmarks/results/topic.md, "Topic").\n'
              'def f():\n    """(benchmarks/\n    results/topic.md, "A figure, measured")."""\n')
    text = normalised(python_text(source))
    assert len(CITATION.findall(text)) == 7
    bad = bad_citations(text, "example.py", tmp_path)
    assert len(bad) == 4, bad
    assert "No such heading" in bad[0] and "no heading starts with it" in bad[0]
    assert "no file benchmarks/results/nope.md" in bad[1]
    assert "2 headings start with it" in bad[2]
    assert "'Topic'" in bad[3] or '"Topic"' in bad[3]
    assert OLD_DIARY.search(normalised("(benchmarks/RESULTS.md has\n  the figures)"))
    assert not OLD_DIARY.search("dated results by topic in benchmarks/results/, indexed in benchmarks/RESULTS.md")
