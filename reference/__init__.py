"""Trusted oracles for perfbench tasks, one module per operation family.

Imported as ``perfbench_reference`` (this directory is installed under that name so that a task's
own ``reference.py``, which sits on ``sys.path`` while it loads, can never shadow it).

Rules every oracle keeps:
- written for clarity, not speed: one formula, no fused tricks, no in-place writes to inputs;
- dtype-preserving: it computes in the dtype of its floating inputs, so the scorer can run it on
  the inputs as made (the expected shape/dtype/device) and on float64 copies (the precise oracle);
- plain PyTorch on any device.

Each oracle is tested against an independent formulation in tests/unit/test_reference.py.
"""
