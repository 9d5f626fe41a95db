"""isolation/processes/log_tail.py: a worker's output is a pipe the scorer drains, keeping the
last 64 KiB in memory, never a file (#58 (5))."""
import os
import subprocess
import sys

from perfbench.isolation.processes.log_tail import LIMIT, LogTail


def test_only_the_last_64_kib_are_kept_of_whatever_is_written():
    log = LogTail("t")
    w = log.write_fd
    proc = subprocess.run([sys.executable, "-c", "import os\nfor _ in range(64):\n    os.write(1, b'a' * (1 << 20))\n"
                           "os.write(1, b'the end')"], stdout=w, stderr=subprocess.STDOUT, pass_fds=(w,))
    assert proc.returncode == 0
    log.started()
    assert log.tail(7) == "the end"                   # what the worker wrote up to now, in order
    log.close()
    assert log.total == 64 * (1 << 20) + 7 and len(log._buf) == LIMIT
    assert log.tail(10) == "aaathe end" and len(log.tail()) == 4000 and log.tail(0) == ""


def test_a_writer_that_outpaces_a_pipe_buffer_never_blocks():
    """More than a pipe's buffer (64 KiB) in one go, with nobody asking for the tail meanwhile:
    the reader thread drains it, so the writer finishes (a worker would otherwise time out)."""
    log = LogTail("t")
    proc = subprocess.Popen([sys.executable, "-c", "import sys\nsys.stdout.write('x' * (8 << 20) + 'done')"],
                            stdout=log.write_fd, pass_fds=(log.write_fd,))
    log.started()
    assert proc.wait(timeout=30) == 0
    log.close()
    assert log.tail(4) == "done"


def test_close_stops_the_reader_even_while_a_writer_holds_the_pipe():
    log = LogTail("t")
    keep = os.dup(log.write_fd)   # as a grandchild the kill missed would
    log.started()
    os.write(keep, b"hello")
    log.close()
    assert log.tail() == "hello" and not log._thread.is_alive()
    os.close(keep)


def test_a_lost_process_is_described_by_its_last_line_of_output():
    from perfbench.isolation.processes.launch import last_output

    assert last_output("starting\nTraceback ...\nValueError: bad\n\n") == "; last output: ValueError: bad"
    assert last_output("x" * 300) == "; last output: " + "x" * 200
    assert last_output(" \n") == ""
