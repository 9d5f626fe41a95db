"""`perfbench clocks show|lock|reset`, and the --clocks policy every timing command parses.
Parsing and printing only: device/clocks.py does the work."""
from __future__ import annotations

import sys

import click

from ..core.errors import EXIT_USAGE


def clock_request(policy: str, *, require: bool = False, dry_run: bool = False, mem_mhz: int | None = None):
    from ..core.errors import UsageError
    from ..device.clocks import ClockRequest

    try:
        if policy.isdigit():
            return ClockRequest("mhz", sm_mhz=int(policy), mem_mhz=mem_mhz, require=require, dry_run=dry_run)
        return ClockRequest(policy, mem_mhz=mem_mhz, require=require, dry_run=dry_run)
    except ValueError as exc:
        raise UsageError(f"--clocks: {exc}") from None


@click.group("clocks")
def clocks_group():
    """Show, lock or reset GPU clocks (NVML)."""


@clocks_group.command("show")
@click.option("--device", default="cuda", show_default=True)
def clocks_show(device):
    """Current, base and max clocks and throttle reasons (read-only)."""
    from ..device.device_session import describe

    for k, v in describe(device).items():
        click.echo(f"{k:<14} {v}")


@clocks_group.command("lock")
@click.option("--device", default="cuda", show_default=True)
@click.option("--policy", default="base", show_default=True, help="base | max | a number of MHz.")
@click.option("--mem-mhz", type=int, default=None, help="Also lock the memory clock.")
@click.option("--dry-run", is_flag=True, help="Verify mode: check what would happen, change nothing.")
def clocks_lock(device, policy, mem_mhz, dry_run):
    """Lock the GPU clocks until `perfbench clocks reset` (verify first with --dry-run)."""
    from ..device.check import check_device
    from ..device.clocks import ClockLock
    from ..device.device_session import connect, gpu_warmup

    nvml, bus, why = connect(check_device(device))
    lock = ClockLock(nvml, bus, clock_request(policy, dry_run=dry_run, mem_mhz=mem_mhz),
                     warmup=None if dry_run else gpu_warmup(device), unavailable_reason=why, persistent=True)
    with lock:
        c = lock.control
    click.echo(f"{c.status}: target {c.target_sm_mhz} MHz, measured {c.measured_sm_mhz} MHz {c.reason}".rstrip())
    sys.exit(0 if c.status in ("locked", "dry_run") else EXIT_USAGE)


@clocks_group.command("reset")
@click.option("--device", default="cuda", show_default=True)
def clocks_reset(device):
    """Undo a lock perfbench made whose owner is gone (never a lock someone else made)."""
    from ..core.errors import EnvironmentUnavailable
    from ..device.check import check_device
    from ..device.clocks import reset_stale
    from ..device.device_session import connect

    nvml, bus, why = connect(check_device(device))
    if nvml is None:
        raise EnvironmentUnavailable(f"cannot reset clocks: {why}")
    click.echo(reset_stale(nvml, bus))
