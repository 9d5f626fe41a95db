"""Test doubles: simulated timers, a simulated CUDA stream, a scriptable NVML and a simulated
score.  The product never imports this package (tests/unit/test_layers.py), with one exception:
`perfbench compare --fake-timer`, hidden, which makes the CLI's own tests exact."""
