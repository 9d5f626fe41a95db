"""Timers, cache flushers, the AB-BA schedule and the paired sampler."""
