"""The correctness rules at their edges and in their words (task/correctness.py): each rule's
message, each bound exactly, the byte comparison on every alignment, records as snapshots.
Written against the mutants mutmut found alive (#63, benchmarks/mutation_score.py)."""
import pytest
import torch

from perfbench.task import correctness
from perfbench.task.correctness import Tolerance, check_output, default_tolerance, inputs_unchanged, judge_repeated_call, outputs_differ, record_of

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
