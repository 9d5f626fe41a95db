# Class 4 through the warm parent: scored right after warm_parent_leaver.py by the same warm
# parent, whose memory every zygote inherits.  What of that candidate, of the warm parent or of
# the zygote's waiting parent (both root, outside its namespaces) can it reach?  Raises with its
# findings, so they reach the verdict's message.
import json, os, re

PID_MAX = int(open('/proc/sys/kernel/pid_max').read())
found = {}
# 1. other candidates' private directories in memory inherited from the warm parent
paths = set()
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        a, b = (int(x, 16) for x in line.split()[0].split("-"))
        if "rw" not in line.split()[1] or b - a > 512 << 20:
            continue
        try:
            mem.seek(a); data = mem.read(b - a)
        except OSError:
            continue
        paths |= {m.decode() for m in re.findall(rb"/tmp/perfbench-sandbox-candidate-zygote-[\w-]+", data)}
mine = os.environ.get("TMPDIR", "")
others = sorted(p for p in paths if p != mine)
found["other_private_dirs_in_memory"] = len(others)
found["other_dirs_readable"] = [p for p in others if os.path.exists(os.path.join(p, "SECRET_FROM_A"))]
found["other_dirs_exist"] = [p for p in others if os.path.exists(p)]
# 2. any process outside this namespace it can signal or see
visible = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
found["visible_pids"] = visible[:20]
found["visible_others"] = [p for p in visible if p not in (1, os.getpid())][:20]   # itself and its zygote only
signalable = []
for pid in range(1, PID_MAX):
    if pid in visible:
        continue
    try:
        os.kill(pid, 0); signalable.append(pid)
    except (ProcessLookupError, PermissionError):
        pass
found["signalable_outside"] = signalable[:10]
pidfds = []
for pid in range(1, PID_MAX):
    if pid in visible:
        continue
    try:
        fd = os.pidfd_open(pid); pidfds.append(pid); os.close(fd)
    except OSError:
        pass
found["pidfd_outside"] = pidfds[:10]
# 3. the zygote (PID 1): memory, signals
try:
    open("/proc/1/mem", "rb").read(1); found["zygote_mem"] = "READ"
except OSError as e:
    found["zygote_mem"] = e.strerror
# 4. the warm parent's socket: any unix socket reachable?
try:
    found["unix_sockets"] = len(open("/proc/net/unix").read().splitlines()) - 1
except OSError as e:
    found["unix_sockets"] = e.strerror
found["uid"] = os.getuid()
raise RuntimeError("FINDINGS " + json.dumps(found))
