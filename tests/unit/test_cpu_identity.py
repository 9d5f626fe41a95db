"""A CPU's identity beyond its name: what tells host classes apart in bench_configs."""
import platform

from perfbench.device.fingerprint import cpu_identity, describe_cpu
from perfbench.task import bench_configs

ZEN5_VM = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu sse2 avx avx2 avx512f avx512_bf16 sha_ni

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
"""

NEOVERSE = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm sve
CPU implementer\t: 0x41
CPU architecture: 8
CPU part\t: 0xd40
"""


def test_x86_family_model_stepping_and_isa_of_the_first_processor(tmp_path):
    (tmp_path / "cpuinfo").write_text(ZEN5_VM)
    assert cpu_identity(tmp_path / "cpuinfo") == {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD",
                                                  "cpu_family": 26, "cpu_model_number": 2, "cpu_stepping": 1,
                                                  "cpu_isa": ["avx2", "avx512f", "avx512_bf16"]}


def test_arm_implementer_and_part(tmp_path):
    (tmp_path / "cpuinfo").write_text(NEOVERSE)
    identity = cpu_identity(tmp_path / "cpuinfo")
    assert identity.pop("cpu_model") == (platform.processor() or "unknown")   # ARM's cpuinfo names no model
    assert identity == {"cpu_vendor": "0x41", "cpu_family": None, "cpu_model_number": 0xd40,
                        "cpu_stepping": None, "cpu_isa": ["sve", "asimd"]}


def test_no_cpuinfo_gives_unknowns(tmp_path):
    identity = cpu_identity(tmp_path / "missing")
    assert identity.pop("cpu_model") == (platform.processor() or "unknown")
    assert identity == {"cpu_vendor": None, "cpu_family": None, "cpu_model_number": None,
                        "cpu_stepping": None, "cpu_isa": []}


def test_a_generic_cpu_name_is_keyed_by_its_generation_and_a_part_number_is_kept_as_is():
    zen5 = {"cpu_model": "AMD EPYC", "cpu_family": 26, "cpu_model_number": 2}
    zen3 = dict(zen5, cpu_family=25, cpu_model_number=1)
    assert bench_configs.device_key("cpu", {"host": zen5}, threads=1) == "cpu-amd-epyc-f26m2-1t"
    assert bench_configs.device_key("cpu", {"host": zen3}, threads=1) == "cpu-amd-epyc-f25m1-1t"
    named = dict(zen5, cpu_model="AMD EPYC 9554 64-Core Processor")
    assert bench_configs.device_key("cpu", {"host": named}, threads=1) == "cpu-amd-epyc-9554-64-core-1t"
    arm = {"cpu_model": "unknown", "cpu_family": None, "cpu_model_number": 0xd40}
    assert bench_configs.device_key("cpu", {"host": arm}) == "cpu-unknown-pd40"


def test_describe_cpu_names_the_generation():
    host = {"cpu_model": "AMD EPYC", "cpu_vendor": "AuthenticAMD", "cpu_family": 26, "cpu_model_number": 2,
            "cpu_stepping": 1, "cpu_isa": ["avx2", "avx512f"]}
    assert describe_cpu(host) == "AMD EPYC (AuthenticAMD family 26 model 2 stepping 1; avx2 avx512f)"
    assert describe_cpu({"cpu_model": "Apple M2"}) == "Apple M2"
