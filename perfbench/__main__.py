"""`python -m perfbench`: the same as the `perfbench` command."""
from .cli.main import entry

entry()
