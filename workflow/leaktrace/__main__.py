import sys

from leaktrace.forkserver import run_in_server

# A local run's jobs go to the fork server when one is listening (leaktrace/forkserver.py).
status = run_in_server(sys.argv[1:])
if status is None:
    from leaktrace.cli import main

    status = main()
sys.exit(status)
