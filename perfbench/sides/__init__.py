"""A `Side`: how the scorer times one worker.  The CPU side (cpu_side.ArenaSide) clocks the
worker itself and writes inputs into its arena; the CUDA side (cuda_side.WorkerSide) asks the
worker to time itself with events.  build.py picks one per device, so callers never ask which."""
