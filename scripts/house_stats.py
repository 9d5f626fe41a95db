"""The package's shape, for a before-and-after of a restructuring (#60): modules, lines, the
largest module, the functions over 60 lines, and the modules over 400 lines.

    python scripts/house_stats.py [CHECKOUT ...]     (default: this checkout)
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

LONG_FUNCTION = 60
LONG_MODULE = 400


def shape(root: Path) -> dict:
    files = sorted((root / "perfbench").rglob("*.py"))
    lines = {f.relative_to(root).as_posix(): len(f.read_text().splitlines()) for f in files}
    long_functions = []
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > LONG_FUNCTION:
                    long_functions.append((n, f"{f.relative_to(root).as_posix()}:{node.lineno} {node.name}"))
    largest = max(lines, key=lines.get)
    return {"modules": len(files), "lines": sum(lines.values()), "largest": (largest, lines[largest]),
            "long_modules": sorted(((n, m) for m, n in lines.items() if n > LONG_MODULE), reverse=True),
            "long_functions": sorted(long_functions, reverse=True)}


def main() -> None:
    for root in map(Path, sys.argv[1:] or ["."]):
        s = shape(root)
        print(f"{root}: {s['modules']} modules, {s['lines']} lines; largest {s['largest'][0]} ({s['largest'][1]})")
        print(f"  modules over {LONG_MODULE} lines: " + (", ".join(f"{m} ({n})" for n, m in s["long_modules"]) or "none"))
        print(f"  functions over {LONG_FUNCTION} lines ({len(s['long_functions'])}): "
              + ", ".join(f"{name} ({n})" for n, name in s["long_functions"]))


if __name__ == "__main__":
    main()
