"""Device and host records; (later) NVML access, clock locking, monitoring."""
