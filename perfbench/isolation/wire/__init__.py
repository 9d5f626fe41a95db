"""What passes between the scorer and a worker: the request protocol with its `Op` enum, used
by both ends (protocol.py), and the shared-memory arena format (arena.py)."""
