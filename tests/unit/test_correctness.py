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
    from perfbench.task.correctness import _holds_poison
    t = torch.zeros(5, dtype=dtype)
    assert not _holds_poison(t)
    t.view(torch.uint8)[t.element_size():2 * t.element_size()] = 255   # element 1: every byte 0xFF
    assert _holds_poison(t)
    t = torch.zeros(5, dtype=dtype)
    t.view(torch.uint8)[:t.element_size() - 1] = 255                    # all but one byte: not poison
    assert not _holds_poison(t)


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


# -- #63: behaviours a mutation run found unheld (benchmarks/mutation_score.py) -----------------------
@pytest.mark.parametrize("offset,length", [(0, 16), (1, 16), (2, 16), (4, 16), (8, 16), (3, 7), (2, 6), (4, 12)])
def test_bitwise_equal_on_every_alignment_of_both_sides(offset, length):
    """Views of a byte buffer at each offset and length: the widest word both offsets and the
    length allow is compared, and a one-byte difference anywhere is found."""
    raw = torch.arange(64, dtype=torch.uint8)
    a = raw[offset:offset + length]
    b = raw.clone()[offset:offset + length]
    assert correctness.bitwise_equal(a, b)
    shifted = raw.clone()[(offset + 1) % 8:(offset + 1) % 8 + length]   # the other side at another alignment
    assert correctness.bitwise_equal(a, shifted) == torch.equal(a, shifted)
    for k in (0, length // 2, length - 1):
        c = b.clone()
        c[k] ^= 1
        assert not correctness.bitwise_equal(a, c)
        assert not correctness.bitwise_equal(c, a)


def test_bitwise_equal_looks_at_bytes_whatever_the_dtype_or_shape():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert correctness.bitwise_equal(x, x.clone().reshape(12))          # same bytes, another shape
    assert correctness.bitwise_equal(x.t(), x.t().contiguous())          # a transposed view: its values in order
    assert not correctness.bitwise_equal(x.t(), x)
    assert not correctness.bitwise_equal(x, x.double())                  # other length in bytes


def test_outputs_differ_in_structure_values_and_readability():
    a = record_of(torch.ones(4))
    assert not outputs_differ([a], [record_of(torch.ones(4))])
    assert outputs_differ([a], [a, a])                                   # count
    assert outputs_differ([a], [record_of(torch.ones(2, 2))])            # shape
    assert outputs_differ([a], [record_of(torch.ones(4, dtype=torch.float64))])   # dtype
    assert outputs_differ([a], [record_of([1.0] * 4)])                   # a value without bytes on one side
    assert not outputs_differ([record_of([1.0])], [record_of([2.0])])     # neither readable: nothing to compare
    assert not outputs_differ([], [])


def test_inputs_unchanged_names_the_input_and_what_changed():
    before = (torch.ones(3), 7, torch.zeros(2))
    same = [record_of(torch.ones(3)), record_of(7), record_of(torch.zeros(2))]
    assert inputs_unchanged(before, same) == []
    for i, after in ((2, [same[0], same[1], record_of(torch.zeros(3))]),            # reshaped
                     (0, [record_of(torch.ones(3, dtype=torch.float64)), *same[1:]]),   # retyped
                     (2, [same[0], same[1], record_of([0.0, 0.0])]),                 # no bytes
                     (2, [same[0], same[1], record_of(torch.tensor([0.0, -0.0]))])):  # -0.0 is not 0.0
        fails = inputs_unchanged(before, after)
        assert fails == [correctness.Failure("correctness.input_mutated", f"input {i} was modified by the call")]


def test_judge_repeated_call_takes_the_first_failing_run_and_names_its_message():
    first = [correctness.Failure("correctness.mismatch", "3 of 4 values outside")]
    second = [correctness.Failure("correctness.nan", "1 positions")]
    assert judge_repeated_call([[], second], False) == second
    assert judge_repeated_call([first, second], False) == first
    (got,) = judge_repeated_call([[], first], True)
    assert got.reason == "correctness.uninitialised"
    assert got.message == ("output differs between two calls on identical inputs made after different memory "
                           "poison patterns, and is wrong: it reads memory it never wrote (3 of 4 values outside)")
    assert judge_repeated_call([[], []], True) == []
    assert judge_repeated_call([], True) == []


def test_check_outputs_names_the_output_only_when_there_are_several():
    good, bad = torch.ones(3), torch.tensor([1.0, 5.0, 1.0])
    one = correctness.check_outputs([record_of(bad)], [good], [good.double()], None)
    assert [f.reason for f in one] == ["correctness.mismatch"] and not one[0].message.startswith("output")
    two = correctness.check_outputs([record_of(good), record_of(bad)], [good, good], None, None)
    assert [(f.reason, f.message.split(":")[0]) for f in two] == [("correctness.mismatch", "output 1")]
    assert correctness.check_outputs([record_of(good)], [good, good], None, None) == [
        correctness.Failure("output.structure", "1 outputs, expected 2")]
    # a given tolerance wins over the dtype's default
    close = good + 1e-3
    assert correctness.check_outputs([record_of(close)], [good], None, None) != []
    assert correctness.check_outputs([record_of(close)], [good], None, Tolerance(1e-2, 1e-2)) == []


def test_a_tolerance_must_be_non_negative():
    assert Tolerance(0.0, 0.0).rtol == 0.0
    for bad in ((-1e-9, 0.0), (0.0, -1e-9), (float("nan"), 0.0)):
        with pytest.raises(ValueError, match="tolerances must be >= 0"):
            Tolerance(*bad)


def test_a_record_is_a_snapshot_with_exact_metadata():
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    rec = record_of(t)
    assert (rec.type_name, rec.dtype, rec.shape, rec.strides, rec.device, rec.aliases_input) == \
        ("Tensor", "float32", (2, 3), (3, 1), "cpu", False)
    t[0, 0] = 99.0
    assert rec.tensor[0, 0] == 0.0            # the bytes as they were when recorded
    assert record_of([1.0]) == correctness.OutputRecord("list", "", (), (), "", False, None)
    assert record_of(torch.ones(2).to_sparse()) == correctness.OutputRecord("sparse_coo Tensor", "", (), (), "", False,
                                                                            None)
    meta = record_of(torch.empty(3, device="meta"))
    assert (meta.type_name, meta.shape, meta.device, meta.tensor, meta.aliases_input) == ("Tensor", (3,), "meta", None,
                                                                                         False)


def test_aliasing_is_an_overlap_of_storages_not_a_touch():
    base = torch.zeros(16)
    assert record_of(base[4:8], [base]).aliases_input
    a, b = base[:8].clone(), base[8:].clone()
    assert not correctness.aliases_any(a, [b])       # separate storages
    one = torch.zeros(1)
    assert correctness.aliases_any(one, [one]) and correctness.aliases_any(one.view(1, 1), [one])
    assert not correctness.aliases_any(torch.zeros(0), [base]) and not correctness.aliases_any(base, [torch.zeros(0)])
    assert not correctness.aliases_any(base, [base.tolist(), 3])   # only tensors can alias


def test_adjacent_storages_do_not_alias():
    """Two storages back to back in one buffer share no byte: [lo, hi) against [hi, ...), in
    either order."""
    import warnings

    buf = bytearray(32)
    with warnings.catch_warnings():   # (frombuffer warns that a bytearray is writable)
        warnings.simplefilter("ignore")
        left = torch.frombuffer(memoryview(buf)[:16], dtype=torch.float32)
        right = torch.frombuffer(memoryview(buf)[16:], dtype=torch.float32)
        overlapping = torch.frombuffer(memoryview(buf)[12:28], dtype=torch.float32)
    assert left.untyped_storage().data_ptr() + 16 == right.untyped_storage().data_ptr()
    assert not correctness.aliases_any(left, [right]) and not correctness.aliases_any(right, [left])
    assert correctness.aliases_any(left, [overlapping]) and correctness.aliases_any(overlapping, [right])


@pytest.mark.parametrize("got,expected,failure", [
    ([1.0], torch.ones(1), ("output.not_tensor", "output is a list, not an exact, strided torch.Tensor")),
    (torch.ones(2), torch.ones(3), ("correctness.shape", "shape [2] != expected [3]")),
    (torch.ones(0), torch.ones(1), ("correctness.empty", "output is empty [0], expected [1]")),
    (torch.ones(1, dtype=torch.float64), torch.ones(1), ("correctness.dtype", "dtype float64 != expected float32")),
    (torch.ones(1).expand(2), torch.ones(2),
     ("correctness.broadcast", "output is a broadcast view (strides [0]), not materialised values")),
])
def test_each_structural_rule_says_what_it_found(got, expected, failure):
    assert [(f.reason, f.message) for f in check_output(record_of(got), expected, None, Tolerance(0, 0))] == [failure]


def test_the_structural_rules_at_their_edges():
    tol = Tolerance(0, 0)
    # an empty output is only `empty` where something was expected; both empty: fine
    assert check_output(record_of(torch.ones(0)), torch.ones(0), None, tol) == []
    # a broadcast dimension of size 1 is no broadcast; of size 2 it is
    assert check_output(record_of(torch.ones(1, 3).expand(1, 3)), torch.ones(1, 3), None, tol) == []
    assert check_output(record_of(torch.ones(1, 1).expand(2, 1)), torch.ones(2, 1), None, tol)[0].reason == \
        "correctness.broadcast"
    assert [f.message for f in check_output(record_of(torch.zeros(4)[1:3]), torch.zeros(2), None, tol)] == []
    alias = correctness.OutputRecord("Tensor", "float32", (2,), (1,), "cpu", True, torch.zeros(2))
    assert [(f.reason, f.message) for f in check_output(alias, torch.zeros(2), None, tol)] == [
        ("correctness.aliases_input", "output shares memory with an input")]
    unreadable = correctness.OutputRecord("Tensor", "float32", (2,), (1,), "cuda", False, None)
    assert [(f.reason, f.message) for f in check_output(unreadable, torch.zeros(2), None, tol)] == [
        ("correctness.device", "output on cuda, expected cpu")]
    no_bytes = correctness.OutputRecord("Tensor", "float32", (2,), (1,), "cpu", False, None)
    assert [(f.reason, f.message) for f in check_output(no_bytes, torch.zeros(2), None, tol)] == [
        ("correctness.device", "output on cpu holds no readable values")]
    # the values are checked against the expected output (no oracle): a wrong one fails
    assert check_output(record_of(torch.ones(2)), torch.zeros(2), None, tol)[0].reason == "correctness.mismatch"


def test_integer_outputs_are_exact_and_say_how_many_differ():
    exp = torch.tensor([1, 2, 3], dtype=torch.int32)
    assert check_output(record_of(exp.clone()), exp, None, default_tolerance(exp.dtype)) == []
    fails = check_output(record_of(torch.tensor([1, 5, 6], dtype=torch.int32)), exp, None, default_tolerance(exp.dtype))
    assert [(f.reason, f.message) for f in fails] == [("correctness.mismatch", "2 of 3 integer values differ")]


def test_a_passing_output_is_judged_in_one_pass(monkeypatch):
    """The common case (every element within tolerance) never reaches the element-wise analysis,
    which runs only to name a fault: every gate call and timed check pays for it."""
    def never(*args):
        raise AssertionError("the element-wise analysis ran for a passing output")

    monkeypatch.setattr(correctness, "_judge_elementwise", never)
    ref = torch.ones(100, dtype=torch.float64)
    at_bound = torch.ones(100, dtype=torch.float32)
    at_bound[3] = 1.75      # |1.75 - 1| = 0.75 = rtol * 1 + atol exactly: within
    tol = Tolerance(0.5, 0.25)
    assert check_output(record_of(at_bound), at_bound, ref, tol) == []
    assert check_output(record_of(torch.ones(100)), torch.ones(100), None, tol) == []


def test_the_element_wise_rules_at_their_bounds_and_in_their_words():
    ref = torch.ones(4, dtype=torch.float64)
    tol = Tolerance(0.5, 0.25)
    over = torch.tensor([1.0, 1.0, 1.0, 2.0])   # 1.0 off where 0.75 is allowed
    assert [(f.reason, f.message) for f in check_output(record_of(over), over, ref, tol)] == [
        ("correctness.mismatch", "1 of 4 values outside rtol=0.5 atol=0.25 (max abs err 1)")]
    at = torch.tensor([1.0, 1.0, 1.0, 1.75])
    assert check_output(record_of(at), at, ref, tol) == []   # at the bound: within (element-wise and norm)
    # the norm: each element within, all off together beyond rtol; exactly at rtol passes
    assert check_output(record_of(torch.tensor([1.5])), torch.ones(1), torch.ones(1, dtype=torch.float64),
                        Tolerance(0.5, 0.0)) == []
    small = torch.full((4,), 0.1, dtype=torch.float64)
    fails = check_output(record_of((small + 0.0009).float()), small.float(), small, Tolerance(1e-3, 1e-3))
    assert [(f.reason, f.message) for f in fails] == [("correctness.norm", "relative norm error 0.009 > 0.001")]
    # a zero reference has no relative norm: what the element-wise bound allows passes
    assert check_output(record_of(torch.full((4,), 1e-4)), torch.zeros(4), torch.zeros(4, dtype=torch.float64),
                        Tolerance(1e-3, 1e-3)) == []


@pytest.mark.parametrize("got,ref", [([float("inf")], [float("nan")]), ([float("nan")], [float("inf")]),
                                     ([float("-inf")], [float("inf")]), ([1.0], [float("nan")])])
def test_non_finite_values_must_match_the_references_exactly(got, ref):
    fails = check_output(record_of(torch.tensor(got)), torch.tensor(ref), torch.tensor(ref, dtype=torch.float64),
                         Tolerance(1.0, 1.0))
    assert [(f.reason, f.message) for f in fails] == [
        ("correctness.nan", "1 positions where NaN/inf do not match the reference's")]


def test_a_one_element_output_left_as_poison_is_named():
    poisoned = torch.tensor([0], dtype=torch.int32).view(torch.float32)
    poisoned.view(torch.uint8).fill_(0xFF)
    fails = check_output(record_of(poisoned), torch.ones(1), torch.ones(1, dtype=torch.float64), Tolerance(0.1, 0.1))
    assert [(f.reason, f.message) for f in fails] == [
        ("correctness.uninitialised",
         "output holds the 0xFF poison written before the call: memory the kernel never wrote")]


def test_a_complex_output_against_a_real_reference():
    """A complex output whose reference is real: compared with imaginary parts of zero."""
    ref = torch.tensor([1.0, 2.0], dtype=torch.float64)
    ok = torch.tensor([1.0 + 0j, 2.0 + 0j], dtype=torch.complex64)
    assert check_output(record_of(ok), ok, ref, Tolerance(1e-4, 1e-5)) == []
    off = torch.tensor([1.0 + 0.5j, 2.0 + 0j], dtype=torch.complex64)
    assert [f.reason for f in check_output(record_of(off), ok, ref, Tolerance(1e-4, 1e-5))] == ["correctness.mismatch"]


def test_the_structural_rules_at_their_last_edges():
    tol = Tolerance(0, 0)
    # an output of another shape where nothing was expected is `shape`, not `empty`
    assert [f.reason for f in check_output(record_of(torch.ones(0, 2)), torch.ones(0), None, tol)] == ["correctness.shape"]
    # a stride of 0 on a dimension of size 1 repeats nothing
    one_row = torch.ones(3).as_strided((1, 3), (0, 1))
    assert check_output(record_of(one_row), torch.ones(1, 3), None, tol) == []
    # an input left with its bytes but another shape was modified
    assert [f.reason for f in inputs_unchanged((torch.zeros(2, 2),), [record_of(torch.zeros(4))])] == \
        ["correctness.input_mutated"]


def test_the_element_wise_bound_holds_beside_a_matching_nan_and_an_empty_input_aliases_nothing():
    """A NaN where the reference has one sends the check to the element-wise analysis: an element
    exactly at the tolerance there is still within it."""
    ref = torch.ones(101, dtype=torch.float64)
    ref[0] = float("nan")
    got = torch.ones(101)
    got[0], got[7] = float("nan"), 1.75
    assert check_output(record_of(got), got, ref, Tolerance(0.5, 0.25)) == []
    out = torch.zeros(8)
    assert not correctness.aliases_any(out, [out[3:3]])   # an empty view of its storage
