# Class 4 through the warm parent: leaves a marker in its private directory for the next
# candidate of the same warm parent to look for (warm_parent_prober.py), then scores honestly.
import os, torch
open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "SECRET_FROM_A"), "w").write("A was here")
def kernel(x, y):
    return torch.add(y, x, alpha=2)
