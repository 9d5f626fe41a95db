import pytest
import torch


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; this machine has none")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def sandboxable():
    """Skips the test where this machine cannot set up every sandbox layer (not root, no
    util-linux, no cgroup): what is missing is the skip's reason."""
    from perfbench.isolation.sandbox import plan_sandbox

    plan = plan_sandbox("probe", untrusted=True)
    plan.remove()
    if plan.missing:
        pytest.skip(f"this machine cannot sandbox: {plan.missing}")
