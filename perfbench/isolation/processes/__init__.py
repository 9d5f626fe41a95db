"""The worker processes and their handles, named alike: worker.py runs in the worker (its
requests: worker_state.py, arena_requests.py on the CPU, own_input_requests.py on CUDA) and
worker_client.py is the scorer's handle on it; zygote.py / fork_server.py; warm_parent.py /
warm_parent_handle.py.  launch.py starts any of them; cpu_threads.py says on which cores."""
