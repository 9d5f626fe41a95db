"""pytest plugin for implementation tasks: gives a task's tests the candidate's function.

A task's tests/ use the `impl` fixture::

    def test_empty(impl):
        assert impl(torch.empty(0)).numel() == 0

`perfbench score` runs those tests in a separate pytest process with this plugin
(``-p perfbench.task.impl_plugin``) and PERFBENCH_IMPL_FILE / PERFBENCH_IMPL_ENTRY naming the file
and function under test.
"""
from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def impl():
    from perfbench.task.user_files import get_callable, load_module

    path = os.environ["PERFBENCH_IMPL_FILE"]
    return get_callable(load_module(path), os.environ.get("PERFBENCH_IMPL_ENTRY", "kernel"), path)
