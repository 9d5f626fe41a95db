"""The pure bottom layer: errors, statistics, the reward, tamper checks, result records, the
crossover design, the stopping rule, every secret a score derives (score_key.py) and its
deadline (deadline.py); with the few host facts they rest on (host.py: the C library calls;
procfs.py: /proc; heap.py: the scorer's allocator).  Imports nothing above itself
and never torch (tests/unit/test_layers.py)."""
