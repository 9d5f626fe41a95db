"""#58 (6): a row softmax that subtracts the generator's bound (every logit row_softmax draws
lies in [-4 sqrt 3, 4 sqrt 3]) instead of each row's max: one pass fewer, right on every input
the generator draws, and NaN (exp overflows to inf, inf / inf) for ordinary logits such as
100 * randn or x - 200.  Before the input contract it passed the gate and scored 3.21x."""
import torch

BOUND = 4.0 * 3.0 ** 0.5


def kernel(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x - BOUND)
    return e / e.sum(dim=1, keepdim=True)
