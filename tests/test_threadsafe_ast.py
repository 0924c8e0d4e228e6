"""threadsafe_ast.parse: threads parsing while finalisers run (which lets the
interpreter switch threads inside the AST constructor) raise no SystemError.
With plain `ast.parse` in its place this fails within a few hundred parses on
CPython 3.11 (python/cpython#106905)."""

import gc
import sys
import threading

from leaktrace import threadsafe_ast

SOURCE = "def f(a):\n    return [[[a + 1 for _ in range(3)] for _ in range(3)]]\n" * 10


class _Cyclic:
    """Garbage only the cycle collector frees, with a finaliser to run."""

    def __init__(self):
        self.me = self

    def __del__(self):
        pass


def test_threads_parse_without_a_recursion_depth_mismatch():
    errors = []

    def work():
        for _ in range(100):
            [_Cyclic() for _ in range(5)]
            try:
                threadsafe_ast.parse(SOURCE)
            except SystemError as error:
                errors.append(error)

    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(50)
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)
    assert errors == []
