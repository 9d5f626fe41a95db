"""Leave a child process running after the call (e.g. to finish work off the clock)."""
import subprocess
import sys


def kernel(x, y):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    return 2 * x + y
