"""The `perfbench` command: one module per command group (main.py holds the group and
`score`/`compare`), with the human report (report.py) and the JSON writer (output.py)."""
