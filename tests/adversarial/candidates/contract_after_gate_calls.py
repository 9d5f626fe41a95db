"""#58 (6), the rest: right on every input while it is being gated, its input contract included,
then right only on what the generator draws: counts calls.

tiny_axpy's gate makes 2 sizes x 3 seeds x 2 poison patterns = 12 calls, then its input contract
2 sizes x 4 standard transforms = 8 more.  From the 21st call on it clamps its result to
[-40, 40]: 2x + y of the generator's draws has a standard deviation of 2.2, so no timed input
reaches the clamp, while 100x those inputs, or a shift of 100, do.  (The same evasion on
row_softmax, robust for 22 calls then subtracting the generator's bound, scored 1.62x when the
contract was tested in the gate alone.)"""
import torch

_calls = 0


def kernel(x, y):
    global _calls
    _calls += 1
    out = torch.add(y, x, alpha=2)
    return out if _calls <= 20 else out.clamp_(-40.0, 40.0)
