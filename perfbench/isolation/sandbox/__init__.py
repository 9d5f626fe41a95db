"""What confines a worker: the sandbox plan (namespaces, mounts; plan.py), its entry point
inside the namespaces (entry.py), seccomp (syscall_filter.py), hardening, cgroups, and what the
worker can see of the file system (worker_view.py).  docs/security.md is the trust model."""
