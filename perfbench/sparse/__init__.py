"""Sparse kernel comparisons (`perfbench scorch compare`): cases, variants, the dense gate."""
