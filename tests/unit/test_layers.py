"""The layer contract (#40; docs/architecture.md): perfbench's folders are its layers, and a
module imports only from its own layer or those below, never in a cycle.  Every import counts,
those inside functions too (a lazy import defers a dependency; it does not remove it).

The layers, bottom to top (one folder each, or a few of equal rank):

    0 core       core/: errors, stats, scoring, tamper, results, crossover, stopping, version,
                 score_key, deadline.  Pure: no torch, no I/O (test_core_is_pure);
      system     system/: host (the C library), procfs, heap: the host facilities, beside it.
    1 task       task/
    2 timing     timing/ (timing/cuda/)
    3 device     device/
    4 isolation  isolation/ (processes/, sandbox/, wire/)
    5 sides      sides/
    6 pipeline   pipeline/, selfcheck/, batch/, sparse/, adapters/; testing/ (the test doubles,
                 which no product module imports: test_the_product_never_imports_its_test_doubles)
    7 entry      perfbench (the API), __main__, cli/, pytest_plugin/

KNOWN lists the edges that break the contract (none today).  The test fails on any other, and on a
KNOWN edge that is gone (take it off the list), so the list only shrinks.  Edges the restructuring
removed are in docs/architecture.md.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "perfbench"
LAYERS = {
    0: ("core", "system"),
    1: ("task",),
    2: ("timing",),
    3: ("device",),
    4: ("isolation",),
    5: ("sides",),
    6: ("pipeline", "selfcheck", "batch", "sparse", "adapters", "testing"),
    7: ("", "__main__", "cli", "pytest_plugin"),
}
# (importer, imported) pairs that break the contract today; each one is a thing to fix.
KNOWN: set[tuple[str, str]] = set()


def modules() -> dict[str, Path]:
    """'stats', 'timing.cuda', '' (the package itself), ... -> file."""
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def imports(mods: dict[str, Path]) -> set[tuple[str, str]]:
    """Every (importer, imported) pair of perfbench modules, relative and absolute imports."""
    edges = set()
    for name, f in mods.items():
        package = name if f.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".") if package else []
                    base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                    target = ".".join(base + ([node.module] if node.module else []))
                elif (node.module or "").split(".")[0] == "perfbench":
                    target = node.module.partition(".")[2]
                else:
                    continue
                for alias in node.names:   # `from . import stats` imports the module stats
                    sub = f"{target}.{alias.name}" if target else alias.name
                    edges.add((name, sub if sub in mods else target))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "perfbench":
                        edges.add((name, alias.name.partition(".")[2]))
    return {(a, b) for a, b in edges if a != b and b in mods}


def layer(module: str) -> int:
    best = None
    for rank, prefixes in LAYERS.items():
        for p in prefixes:
            if module == p or (p and module.startswith(p + ".")):
                if best is None or len(p) > len(best[1]):
                    best = (rank, p)
    if best is None:
        raise AssertionError(f"perfbench/{module.replace('.', '/')}: in no layer of tests/unit/test_layers.py")
    return best[0]


def cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """The import cycles: strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_is_in_a_layer():
    for m in modules():
        layer(m)


def test_no_import_cycles():
    found = cycles(imports(modules()))
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_no_module_imports_from_a_layer_above_its_own():
    upward = {(a, b) for a, b in imports(modules()) if layer(a) < layer(b)}
    new = sorted(upward - KNOWN)
    assert not new, "imports from a layer above: " + ", ".join(f"{a} -> {b}" for a, b in new)
    gone = sorted(KNOWN - upward)
    assert not gone, "fixed, take off KNOWN: " + ", ".join(f"{a} -> {b}" for a, b in gone)


def test_the_contract_sees_a_cycle_and_an_upward_import():
    """The checker itself: a made-up cycle and a made-up upward edge are found."""
    assert cycles({("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")}) == [["a", "b", "c"]]
    assert layer("core.stats") == 0 and layer("isolation.processes.worker") == 4 and layer("") == 7
    assert layer("core.stopping") == 0 and layer("timing.cuda.timer") == 2 and layer("sides.cpu_side") == 5


def test_every_module_lives_in_a_layer_folder():
    """The package root holds only the API and `python -m perfbench`: a new module goes into the
    folder of its layer."""
    root = sorted(f.name for f in PACKAGE.glob("*.py"))
    assert root == ["__init__.py", "__main__.py"], root


# What a pure module may not touch: the device, the operating system, files, other processes.
IMPURE_MODULES = {"torch", "os", "ctypes", "subprocess", "socket", "shutil", "signal", "fcntl", "mmap",
                  "pathlib", "tempfile", "io"}


def impurities(name: str, source: str) -> list[str]:
    """What in one module's source breaks the pure-core rule: an import of IMPURE_MODULES or of
    perfbench.system, or a call of open()."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if not node.level else (
                ["perfbench.system"] if (node.module or "").split(".")[0] == "system" and node.level == 2 else [])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            found.append(f"{name} calls open()")
            continue
        else:
            continue
        found += [f"{name} imports {n}" for n in names
                  if n.split(".")[0] in IMPURE_MODULES or n.startswith("perfbench.system")]
    return found


def test_core_is_pure():
    """core/ is what the numbers rest on: it must load (and be tested) without torch, and reads
    nothing of the host.  The host facilities are system/'s."""
    found = [msg for name, f in modules().items() if name.split(".")[0] == "core"
             for msg in impurities(name, f.read_text())]
    assert not found, "; ".join(found)


def test_the_purity_check_sees_each_kind_of_impurity():
    assert impurities("core.x", "import os\nimport torch.nn\nfrom ctypes import CDLL\n") == [
        "core.x imports os", "core.x imports torch.nn", "core.x imports ctypes"]
    assert impurities("core.x", "from ..system import host\nwith open('f') as f: pass\n") == [
        "core.x imports perfbench.system", "core.x calls open()"]
    assert impurities("core.x", "import math\nfrom . import stats\n") == []


def test_no_module_imports_another_modules_private_names():
    """A `_name` is its module's own: a caller that needs it names a public one instead (the
    report once read results._median)."""
    found = []
    for name, f in modules().items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("perfbench")):
                found += [f"{name}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not found, "; ".join(found)


# The one product module that imports perfbench.testing: `compare --fake-timer` (hidden), which
# makes the CLI's own tests exact, hyperfine's mock executor through the real command line.
FAKE_TIMER_FLAG = {("cli.main", "testing.timers")}


def test_the_product_never_imports_its_test_doubles():
    """FakeTimer, FakeGpu, FakeNvml and the simulated score live in perfbench/testing/; nothing
    outside it imports them but the hidden --fake-timer flag."""
    found = {(a, b) for a, b in imports(modules())
             if layer(b) == 6 and b.split(".")[0] == "testing" and a.split(".")[0] != "testing"}
    assert found == FAKE_TIMER_FLAG, sorted(found)
