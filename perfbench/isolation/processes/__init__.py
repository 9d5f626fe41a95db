"""The worker processes and their handles, named alike: worker.py runs in the worker and
worker_client.py is the scorer's handle on it; zygote.py / fork_server.py; warm_parent.py /
warm_parent_handle.py.  launch.py starts any of them; cpu_threads.py says on which cores."""
