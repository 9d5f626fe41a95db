"""CUDA timing: the event timer (timer.py), over the `Gpu` Protocol (gpu.py) that torch
implements (torch_gpu.py) and the tests fake (perfbench/testing/fake_gpu.py); kernels.py are the helper kernels."""
