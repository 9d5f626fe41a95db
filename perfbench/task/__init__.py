"""What a task is: the formats (task.toml, KernelBench files, GPU MODE problems), loading user
files, the correctness gate and its tolerances, bench_configs (s_ref per host class), and the
native builds task solutions call into."""
