"""Correctness rules on records built directly (no workers): each rule and its reason code."""
import pytest
import torch

from perfbench.isolation.wire.protocol import ProtocolError, decode_record, encode_record
from perfbench.task import correctness
from perfbench.task.correctness import Tolerance, check_output, default_tolerance, inputs_unchanged, judge_repeated_call, outputs_differ, record_of

REF = torch.tensor([1.0, -2.0, 3.0, float("nan")])


def _codes(got, expected=REF, inputs=()):
    rec = record_of(got, inputs)
    return [f.reason for f in check_output(rec, expected, expected.double(), default_tolerance(expected.dtype))]


def test_exact_match_passes():
    assert _codes(REF.clone()) == []


@pytest.mark.parametrize("got,code", [
    (torch.tensor([1.0, -2.0, 3.0]), "correctness.shape"),
    (torch.empty(0), "correctness.empty"),
    (REF.double(), "correctness.dtype"),
    (torch.tensor([1.0, -2.0, 3.0, 0.0]), "correctness.nan"),
    (torch.tensor([1.0, -2.0, float("inf"), float("nan")]), "correctness.nan"),
    (torch.tensor([1.0, -2.0, 3.01, float("nan")]), "correctness.mismatch"),
    (REF.tolist(), "output.not_tensor"),
    (torch.tensor([1.0]).expand(4), "correctness.broadcast"),
    (REF.to("meta"), "correctness.device"),
])
def test_each_rule(got, code):
    assert _codes(got) == [code]


FINITE = torch.tensor([1.0, -2.0, 3.0, 4.0])


@pytest.mark.parametrize("ref,got,codes", [
    # the one-comparison fast path (finite reference) and the element-wise path agree
    (FINITE, FINITE.clone(), []),
    (FINITE, torch.tensor([1.0, -2.0, 3.0, float("nan")]), ["correctness.nan"]),
    (FINITE, torch.tensor([1.0, -2.0, 3.0, float("inf")]), ["correctness.nan"]),
    (FINITE, torch.tensor([1.0, -2.0, 3.0, 4.5]), ["correctness.mismatch"]),
    # an infinite reference: a finite answer there is wrong even though |inf - x| <= inf * rtol
    (torch.tensor([1.0, float("inf"), 3.0, 4.0]), torch.tensor([1.0, 1e30, 3.0, 4.0]), ["correctness.nan"]),
    (torch.tensor([1.0, float("inf"), 3.0, 4.0]), torch.tensor([1.0, float("inf"), 3.0, 4.0]), []),
    (torch.tensor([1.0, float("-inf"), 3.0, 4.0]), torch.tensor([1.0, float("inf"), 3.0, 4.0]), ["correctness.nan"]),
    (torch.tensor([1.0, float("inf"), 3.0, 4.0]), torch.tensor([1.0, float("inf"), 3.5, 4.0]), ["correctness.mismatch"]),
    # finite values whose sum overflows take the element-wise path and still pass
    (torch.tensor([1e308, 1e308], dtype=torch.float64), torch.tensor([1e308, 1e308], dtype=torch.float64), []),
])
def test_value_rules_with_and_without_non_finite_references(ref, got, codes):
    assert _codes(got, ref) == codes


def test_a_small_error_everywhere_fails_the_norm_check():
    ref = torch.ones(1000)
    tol = Tolerance(1e-3, 1e-3)   # each element may be off by 2e-3; the norm by only 1e-3
    got = ref + 1.5e-3
    assert [f.reason for f in check_output(record_of(got), ref, ref.double(), tol)] == ["correctness.norm"]


@pytest.mark.parametrize("got,codes", [
    (torch.tensor([1 + 2j, 3 - 1j]), []),
    (torch.tensor([1 - 5j, 3 + 7j]), ["correctness.mismatch"]),            # only the imaginary parts wrong
    (torch.tensor([1 + 2j, complex(3, float("nan"))]), ["correctness.nan"]),
    (torch.tensor([1 + 2.00001j, 3 - 1j]), []),                            # within float32's tolerance
])
def test_complex_outputs_are_checked_in_both_parts(got, codes):
    ref = torch.tensor([1 + 2j, 3 - 1j])
    assert [f.reason for f in check_output(record_of(got), ref, ref.to(torch.complex128),
                                           default_tolerance(ref.dtype))] == codes


# The common case is checked piece by piece (correctness._CHECK_CHUNK elements at a time): a
# fault in any piece, and an error spread thinly over all of them, is still found.
PIECE = correctness._CHECK_CHUNK
BIG = 3 * PIECE + 5


@pytest.mark.parametrize("at", [0, PIECE - 1, PIECE, BIG - 1])
@pytest.mark.parametrize("bad,code", [(float("nan"), "correctness.nan"), (float("inf"), "correctness.nan"),
                                      (0.5, "correctness.mismatch")])
def test_a_fault_in_any_piece_of_a_large_output_is_found(at, bad, code):
    ref = torch.linspace(1.0, 2.0, BIG)
    got = ref.clone()
    got[at] += bad
    assert _codes(got, ref) == [code]
    assert _codes(ref.clone(), ref) == []


def test_the_norm_over_pieces_is_the_whole_outputs():
    ref = torch.ones(BIG, dtype=torch.float64)
    tol = Tolerance(1e-3, 1e-3)
    for err, codes in ((0.99e-3, []), (1.01e-3, ["correctness.norm"])):   # rel. norm error = err
        got = ref + err
        assert [f.reason for f in check_output(record_of(got), ref, ref, tol)] == codes


def test_checking_a_float64_output_leaves_it_as_it_was():
    ref = torch.linspace(1.0, 2.0, BIG, dtype=torch.float64)
    rec = record_of(ref + 1e-9)
    before = rec.tensor.clone()   # a record's values are compared again later (judge_repeated_call)
    assert check_output(rec, ref, ref, Tolerance(1e-6, 1e-6)) == []
    assert torch.equal(rec.tensor, before)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.int8,
                                   torch.complex128])
def test_poison_is_found_in_every_element_size(dtype):
    from perfbench.task.correctness import holds_poison
    t = torch.zeros(5, dtype=dtype)
    assert not holds_poison(t)
    t.view(torch.uint8)[t.element_size():2 * t.element_size()] = 255   # element 1: every byte 0xFF
    assert holds_poison(t)
    t = torch.zeros(5, dtype=dtype)
    t.view(torch.uint8)[:t.element_size() - 1] = 255                    # all but one byte: not poison
    assert not holds_poison(t)


def test_poison_is_named():
    got = REF.clone()
    got.view(torch.int32)[1] = -1  # 0xFFFFFFFF
    assert _codes(got) == ["correctness.uninitialised"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
                                   torch.complex128, torch.float8_e4m3fn, torch.float8_e5m2])
def test_a_poisoned_element_fails_however_loose_the_tolerance(dtype):
    """The value check scans for poison only after the fast path failed: that is sound only if an
    all-0xFF element never passes it, i.e. is a NaN in every floating dtype."""
    ref = torch.linspace(1.0, 2.0, 64, dtype=torch.float64)
    got = ref.to(dtype)
    got.view(torch.uint8)[got.element_size():2 * got.element_size()] = 255
    expected = ref.to(dtype)
    fails = check_output(record_of(got), expected, ref.to(torch.complex128 if dtype.is_complex else torch.float64),
                         Tolerance(1.0, 1e6))
    assert [f.reason for f in fails] == ["correctness.uninitialised"]


def test_alias_and_mutation():
    x = REF.clone()
    assert _codes(x, inputs=(x,)) == ["correctness.aliases_input"]
    before = (torch.ones(3),)
    assert inputs_unchanged(before, [record_of(torch.ones(3))]) == []
    assert [f.reason for f in inputs_unchanged(before, [record_of(torch.tensor([1.0, 0.0, 1.0]))])] == \
        ["correctness.input_mutated"]


def test_tolerances_scale_with_dtype():
    assert default_tolerance(torch.float16).rtol > default_tolerance(torch.float32).rtol
    assert default_tolerance(torch.int64) == Tolerance(0.0, 0.0)
    # computing in half and casting back fails float32's tolerance
    x = torch.randn(1000, generator=torch.Generator().manual_seed(0))
    assert _codes(x.half().float() * 3, x * 3) == ["correctness.mismatch"]


@pytest.mark.parametrize("dtype,lower", [(torch.float16, torch.float8_e4m3fn), (torch.bfloat16, torch.float8_e4m3fn),
                                         (torch.float32, torch.bfloat16)])
def test_each_tolerance_passes_its_own_rounding_and_fails_a_lower_precision(dtype, lower):
    """The tolerance of each dtype, by its width rather than its order: a result computed exactly
    and rounded once to the output dtype passes; the same computed in the next lower precision
    (float8 for the 16-bit types: ~6% per element) and cast back fails.  A tolerance loosened
    tenfold passes the second (#63: bfloat16's)."""
    x = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    oracle = x * 3
    rounded_once = oracle.to(dtype)
    in_lower = (x.to(lower).to(torch.float64) * 3).to(lower).to(dtype)
    tol = default_tolerance(dtype)
    assert check_output(record_of(rounded_once), rounded_once, oracle, tol) == []
    fails = check_output(record_of(in_lower), rounded_once, oracle, tol)
    assert [f.reason for f in fails] == ["correctness.mismatch"], fails


def test_record_round_trip_and_bad_bytes():
    t = torch.arange(6, dtype=torch.float16).reshape(2, 3)
    meta, blob = encode_record(record_of(t))
    back = decode_record(meta, blob)
    assert torch.equal(back.tensor, t) and back.shape == (2, 3)
    with pytest.raises(ProtocolError):
        decode_record(meta, blob[:-1])
    with pytest.raises(ProtocolError):
        decode_record(dict(meta, dtype="evil"), blob)
    assert decode_record({"type": "list", "shape": [], "strides": [], "device": "",
                          "aliases_input": False}, b"").tensor is None


def _fails(got, expected=REF):
    return check_output(record_of(got), expected, expected.double(), default_tolerance(expected.dtype))


def test_repeated_call_that_differs_and_is_wrong_reads_unwritten_memory():
    """The rule for the gate's two calls per input set (poison 0xFF, then 0xA5)."""
    wrong_a, wrong_b = torch.tensor([1.0, -2.0, 7.0, float("nan")]), torch.tensor([1.0, -2.0, 9.0, float("nan")])
    differ = outputs_differ([record_of(wrong_a)], [record_of(wrong_b)])
    assert differ
    got = judge_repeated_call([_fails(wrong_a), _fails(wrong_b)], differ)
    assert [f.reason for f in got] == ["correctness.uninitialised"]
    # wrong in one run only (the other landed on correct stale memory): still unwritten memory
    got = judge_repeated_call([[], _fails(wrong_b)], outputs_differ([record_of(REF)], [record_of(wrong_b)]))
    assert [f.reason for f in got] == ["correctness.uninitialised"]


def test_repeated_call_nondeterministic_but_within_tolerance_passes():
    """Atomics reorder sums: the runs differ in the last bits, both are within tolerance."""
    a = REF.clone()
    b = REF.clone()
    b[0] = torch.nextafter(b[0], torch.tensor(2.0))
    differ = outputs_differ([record_of(a)], [record_of(b)])
    assert differ
    assert judge_repeated_call([_fails(a), _fails(b)], differ) == []


def test_repeated_call_deterministic_and_wrong_keeps_its_reason():
    wrong = torch.tensor([1.0, -2.0, 7.0, float("nan")])
    differ = outputs_differ([record_of(wrong)], [record_of(wrong.clone())])
    assert not differ
    assert [f.reason for f in judge_repeated_call([_fails(wrong), _fails(wrong)], differ)] == ["correctness.mismatch"]
    # a structural failure is never relabelled, even if the bytes differ
    short = torch.tensor([1.0, 2.0])
    fails = judge_repeated_call([_fails(short), _fails(short + 1)], True)
    assert [f.reason for f in fails] == ["correctness.shape"]


def test_poison_patterns_differ():
    """The rule rests on the two calls seeing *different* poison: with one pattern twice, memory
    that was never written could read the same both times and pass for deterministic output."""
    from perfbench.task.correctness import POISON_PATTERNS

    assert len(POISON_PATTERNS) >= 2 and len(set(POISON_PATTERNS)) == len(POISON_PATTERNS)
    assert 0xFF in POISON_PATTERNS          # NaN in every float type: named even in a single run


@pytest.mark.parametrize("n", [8, 5, 3])   # bytes a multiple of 8 (compared as words) or not
def test_bitwise_equal_compares_bytes_not_values(n):
    x = torch.linspace(-1.0, 1.0, n, dtype=torch.float16 if n == 3 else torch.float32)
    assert correctness.bitwise_equal(x, x.clone())
    nan = x.clone()
    nan[0] = float("nan")
    assert correctness.bitwise_equal(nan, nan.clone())          # NaN is its own bytes
    zero, negzero = x.clone(), x.clone()
    zero[-1], negzero[-1] = 0.0, -0.0
    assert not correctness.bitwise_equal(zero, negzero)         # equal values, different bytes
    assert not correctness.bitwise_equal(x, x[:-1])
    assert correctness.bitwise_equal(x[1:], x.clone()[1:])      # a view that starts mid-storage
