"""Package layout only (metadata lives in pyproject.toml).

reference/ (the trusted oracles) is installed as `perfbench_reference`: a task's own
reference.py sits on sys.path while it loads, so a package named `reference` could be shadowed
by it.  pyproject.toml alone cannot both discover perfbench's subpackages and rename one folder.
"""
from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["perfbench", "perfbench.*"]) + ["perfbench_reference"],
    package_dir={"perfbench_reference": "reference"},
)
