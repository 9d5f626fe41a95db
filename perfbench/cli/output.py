"""How every command writes JSON: `--json` prints it to stdout, `--out PATH` writes it to a file
(atomically: a failed run never leaves half a file).  Its own module so that each command group
(main.py, scorch.py, ...) uses it without importing another."""
from __future__ import annotations

import json
from pathlib import Path

import click


def write_json(doc: dict, out: Path | None, to_stdout: bool) -> None:
    """`doc` to `out` (temp file + rename), and to stdout when `to_stdout`."""
    text = json.dumps(doc, indent=2, sort_keys=True)
    if out is not None:
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(text + "\n")
        tmp.replace(out)
    if to_stdout:
        click.echo(text)
