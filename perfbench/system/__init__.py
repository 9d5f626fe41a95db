"""What perfbench asks of the host operating system: the C library's calls (host.py: prctl,
mallopt, process_vm_readv, with named constants), what /proc says of a process (procfs.py) and
the scorer's allocator (heap.py).  Beside core/ at the bottom of the layers; core/ itself stays
pure (tests/unit/test_layers.py)."""
