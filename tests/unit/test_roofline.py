"""The roofline `score --plot` draws (cli/roofline.py): a PNG for either kind of bound."""
from perfbench.cli.roofline import write_roofline

SIDE = {"median_ns": 2e5, "fraction_of_sol": 0.5, "fraction_ci": [0.45, 0.55]}


def _sol(flops):
    return {"work": {"bytes": 4_000_000, "flops": flops}, "t_sol_ns": 1e5, "bound": "memory", "headroom": 10.0,
            "peaks": {"bandwidth_bytes_s": 40e9, "bandwidth_kind": "copy", "working_set_bytes": 1 << 22,
                      "flop_s": 1e11 if flops else None},
            "baseline": dict(SIDE, fraction_of_sol=0.1, fraction_ci=[0.09, 0.11]), "candidate": SIDE, "solution": None}


def test_a_memory_only_and_a_flops_roofline_are_drawn(tmp_path):
    for flops in (None, 8_000_000):
        path = write_roofline(_sol(flops), tmp_path / f"r{flops}.png", "t")
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
