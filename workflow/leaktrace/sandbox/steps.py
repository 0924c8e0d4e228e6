"""A program's steps, counted rather than timed, so that whether a call ran
past its limit is the same on any machine under any load.

A step is a function call or a loop iteration (comprehension clauses and
lambdas included) of the program's own code: `counted_tree` puts a call of
``STEP`` at the top of every function and loop body (after a docstring),
into every lambda and every comprehension clause. The caller binds ``STEP``
in the program's globals to the ``__next__`` of an ``itertools.repeat(True,
budget + 1)``: a C-level counter (about 15 ns a step; ``sys.settrace``'s
line events cost 8.5 times the untraced time, this 1.6 times) that raises
StopIteration once the budget is spent. Whatever the program then does with
that exception, the counter says afterwards that it ran past (nothing left
of it). Work inside C code or the standard library is not counted, so a
time limit stays behind it as a safety net.

Stdlib only, no ``from __future__``: the execution-similarity driver appends
this source to its own (`leaktrace.similarity.execution_driver`).
"""

import ast

STEP = "__leaktrace_step__"  # the counter's name in the program's globals (a dunder: never name-mangled)


class _Steps(ast.NodeTransformer):
    def _tick(self):
        return ast.Call(ast.Name(STEP, ast.Load()), [], [])

    def _body(self, node):
        self.generic_visit(node)
        docstring = (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
            and isinstance(node.body[0].value.value, str)
        )
        at = 1 if docstring else 0
        node.body.insert(at, ast.copy_location(ast.Expr(self._tick()), node.body[min(at, len(node.body) - 1)]))
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_For = visit_AsyncFor = visit_While = _body

    def visit_Lambda(self, node):
        self.generic_visit(node)
        node.body = ast.copy_location(ast.BoolOp(ast.And(), [self._tick(), node.body]), node.body)
        return node

    def visit_comprehension(self, node):
        self.generic_visit(node)
        node.ifs.append(self._tick())
        return node


def counted_tree(program):
    """The program's tree with its steps counted (raises SyntaxError as ``ast.parse``)."""
    return ast.fix_missing_locations(_Steps().visit(ast.parse(program, "program.py")))
