"""The CUDA timer's end-of-window digests (timing/cuda/checksum.py), on the simulated stream: an
output written after the end event is `tamper.side_stream`; an honest one passes."""
import pytest
import torch

from perfbench.core.errors import CandidateRejected
from perfbench.isolation.wire.protocol import decode_values, encode_values
from perfbench.sides.cuda_side import check_end_digests
from perfbench.timing.cuda import checksum
from perfbench.timing.cuda.checksum import digest_pair
from perfbench.testing.fake_gpu import FakeGpu
from perfbench.timing.cuda.timer import CudaEventTimer

KERNEL_NS = 5_000.0


def _fetched(outputs: list) -> list:
    """What the scorer holds after a fetch: the outputs through the worker's wire format."""
    metas, blobs = encode_values(outputs)
    return decode_values(metas, blobs)


def test_digest_sees_changed_moved_and_swapped_bytes_and_not_the_layout():
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    assert digest_pair(x) == digest_pair(x.clone())
    assert digest_pair(x.t()) == digest_pair(x.t().contiguous())   # logical order, not storage
    swapped = x.clone()
    swapped[0, 0], swapped[0, 1] = x[0, 1], x[0, 0]
    shifted = torch.roll(x, 1)
    changed = x.clone()
    changed[3, 5] += 1
    assert len({digest_pair(t) for t in (x, swapped, shifted, changed)}) == 4
    for t in (torch.ones((), dtype=torch.bfloat16), torch.zeros(3, dtype=torch.bool), torch.empty(0)):
        assert len(digest_pair(t)) == 2


def test_a_large_output_is_digested_in_steps_as_if_whole(monkeypatch):
    """Steps bound the temporaries; the sums are the ones over the whole byte string."""
    x = torch.randn(40_000, generator=torch.Generator().manual_seed(1))   # 160 kB: 3 steps of one period
    b = x.view(torch.uint8).to(torch.int64)
    w = torch.arange(b.numel()) % checksum.WEIGHT_PERIOD + 1
    whole = (int(b.sum()), int((b * w).sum()))
    monkeypatch.setattr(checksum, "CHUNK", checksum.WEIGHT_PERIOD)
    monkeypatch.setattr(checksum, "_weights", {})
    assert digest_pair(x) == whole


def test_each_call_s_outputs_are_digested_after_its_window():
    gpu = FakeGpu()

    def kernel(x):
        gpu.launch(KERNEL_NS)
        return 2 * x, x.sum()

    inputs = [(torch.full((8,), float(i)),) for i in range(3)]
    block = CudaEventTimer(gpu=gpu).time_block(kernel, inputs, None)
    assert block.digests == tuple(tuple(digest_pair(t) for t in out) for out in block.outputs)
    for k, out in enumerate(block.outputs):   # what the scorer does with a fetched iteration
        check_end_digests("candidate", k, [list(d) for d in block.digests[k]], _fetched(list(out)))


def test_an_output_written_on_a_side_stream_after_the_window_is_refused():
    """The side stream's write lands after the end event (it finishes when the host next
    synchronises): the events never saw it, the digest on the timed stream did not either."""
    gpu = FakeGpu()

    def late_writer(x):
        out = torch.empty_like(x)
        gpu.launch(KERNEL_NS)   # a token kernel in the window
        gpu.launch_side(50 * KERNEL_NS, write=lambda: out.copy_(2 * x))
        return out

    x = torch.arange(16, dtype=torch.float32)
    block = CudaEventTimer(gpu=gpu).time_block(late_writer, [(x,)], None)
    assert torch.equal(block.outputs[0], 2 * x)    # the fetched values are right ...
    with pytest.raises(CandidateRejected) as exc:   # ... but they were not there at the end event
        check_end_digests("candidate", 0, [list(d) for d in block.digests[0]], _fetched([block.outputs[0]]))
    assert exc.value.reason == "tamper.side_stream"
    assert "changed after its timed window closed" in exc.value.message


def test_graph_mode_digests_every_call_after_the_replay():
    gpu = FakeGpu()
    inputs = [(torch.full((4,), float(i)),) for i in range(2)]
    block = CudaEventTimer(mode="graph", gpu=gpu).time_block(lambda x: gpu.launch(KERNEL_NS) or x + 1, inputs, None)
    assert block.mode == "graph"
    assert block.digests == tuple((digest_pair(out),) for out in block.outputs)


def test_no_digests_in_the_profiled_call():
    """Their kernels run after the window, where the side-stream check looks for hidden work."""
    gpu = FakeGpu()
    timer = CudaEventTimer(gpu=gpu)
    with timer.marking_windows():
        assert timer.time_block(lambda: torch.ones(2), [()], None).digests is None
    assert timer.digests and timer.time_block(lambda: torch.ones(2), [()], None).digests is not None


def test_no_digests_when_turned_off_and_none_for_what_has_no_bytes():
    gpu = FakeGpu()
    assert CudaEventTimer(gpu=gpu, digests=False).time_block(lambda: torch.ones(2), [()], None).digests is None
    block = CudaEventTimer(gpu=gpu).time_block(lambda: (torch.ones(2), 3), [()], None)
    assert block.digests[0][1] is None and block.digests[0][0] == digest_pair(torch.ones(2))


@pytest.mark.parametrize("digests,message", [
    (None, "no end-of-window digest for each of its 1 outputs"),
    ([], "no end-of-window digest for each of its 1 outputs"),
    ([None], "output 0's end-of-window digest is None"),
    ([[1, 2.5]], "output 0's end-of-window digest is [1, 2.5]"),
    ([[True, 2]], "output 0's end-of-window digest is [True, 2]"),
])
def test_a_missing_or_malformed_digest_is_a_protocol_breach(digests, message):
    with pytest.raises(CandidateRejected) as exc:
        check_end_digests("candidate", 2, digests, _fetched([torch.ones(3)]))
    assert exc.value.reason == "tamper.protocol" and message in exc.value.message
