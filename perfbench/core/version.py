"""perfbench's version: in the verdicts it writes (results.py), the device fingerprint and the
bench_configs it calibrates.  Its own module, at the bottom, so that none of them imports the
package's API to read it (pyproject.toml reads it from here too)."""
__version__ = "0.2.0"
