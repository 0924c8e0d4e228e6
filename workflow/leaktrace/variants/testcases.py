"""SrDetection's test-case transformation (tau_t), offline: the examples in a
program's docstring are replaced by new examples of the same shape.

An example is a call of the entry point with literal arguments, either a
doctest (``>>> f(1, [2])`` followed by its output lines) or one line of prose
(``f(1, [2]) == 3``, with ``==``, ``➞``, ``=>`` or ``->``). New inputs come
from a type-directed generator seeded from the example's own arguments and
from the literal calls in the sample's test (ints near ints, strings of the
same length and character classes, lists of about the same length built
from their own elements, ...). Their outputs are never guessed: the original
program computes them in the sandbox, and an input is used only if the
original returns (an exact builtin value, ``None`` exactly where the old
example's was) and both the call and its output fit the docstring verbatim
(one line, no backslash, no quote that could end the string). The rewrite is
exact: only the example's lines change, the code outside docstrings stays
byte-identical (checked on the AST), and a program with no example the
generator can replace is left as it is.

A whole program run on standard input (APPS's stdin/stdout problems) has
no function to call: its examples are the input and output blocks of its
module docstring, as APPS's problem statements write them (a line
``Input`` / ``Sample Input`` / ``-----Sample Input 1-----``, the input's
lines, then ``Output`` and the output's lines; a plain ``-----Input-----``
heads the format's description, not an example). New inputs are the
sample's own test inputs first, then the example's with its integers moved
(`similar_value`); the original runs on each in the sandbox, and an input is
used only if the original ends with status 0 and prints an output that fits
the docstring, and only for an example whose shown output is what the
original prints on its shown input (APPS's strict comparison).
"""

from __future__ import annotations

import ast
import functools
import random
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, replace

from leaktrace.data.io_tests import IoTests
from leaktrace.sandbox import SandboxLimits, SandboxResult, run_python, run_stdio, steps
from leaktrace.sandbox.runner import in_parallel
from leaktrace.sandbox.stdio import outputs_match

_INLINE_SEPARATOR = re.compile(r"\s*(==|➞|=>|->)\s*")
_DOCTEST = re.compile(r"(?P<indent>\s*)>>> (?P<source>.*?)\s*$")
# Candidate inputs drawn per example to replace, from which the first usable one is taken.
CANDIDATES_PER_EXAMPLE = 3
_OK = "ok"  # the outcome of a call that returned (else "raised")
# An output may show as many decimals as the old example's or this many: a
# float the arithmetic left at 0.3789999999999907 is no example a person writes.
_DECIMALS = 4
_FRACTION = re.compile(r"\d\.(\d+)")
# A run makes about a hundred calls on inputs the size of the examples'; one
# that takes longer met an input too large for the program (the sample keeps its
# examples). The limit is a count of steps (function calls and loop iterations
# of the program's own code, `leaktrace.sandbox.steps`), so that which samples
# get new examples does not depend on how fast or loaded the machine is: 20 M.
# On HumanEval's ground truths, HumanEval/75's run is the largest that ends
# (12 to 14 M), HumanEval/39's and /76's take more than 40 M; a CPU second is
# 4.4 to 33 M steps (median 22 M, counted), so 20 M stay well inside the CPU
# time (10 s) and the sandbox's wall clock that remain as safety nets for work
# in C code, which no step counts: a run they stop is run once more at twice
# their limits.
STEPS = 20_000_000
CPU_S = 10
PROGRAM_CPU_S = 2  # a whole program's run on one input: CPU time (left a time limit, no steps counted)
RESULT = "__leaktrace_result"  # the variable the appended caller leaves the outcomes in
# Appended to the original program: calls the entry point on each input, catching what it raises.
# None when the run's steps ran out (a call may catch the counter's StopIteration: it is read after each).
_CALLER = """

def __leaktrace_outcomes(function, inputs, left):
    outcomes = []
    for args in inputs:
        try:
            outcomes.append(("ok", function(*args)))
        except BaseException as error:
            outcomes.append(("raised", type(error).__name__))
        if not left():
            return None
    return outcomes
"""


@dataclass(frozen=True)
class Example:
    """One example in a docstring: lines ``start``..``end`` (0-based, end
    exclusive) of the text; the call's literal arguments and the output shown; ``form`` is
    "doctest" or "inline" (``head`` the text before the call, ``separator``
    the text between the call and the output)."""

    start: int
    end: int
    args: tuple
    form: str
    indent: str
    shown: str  # the output as the docstring shows it ("" for a doctest without one)
    head: str = ""
    separator: str = ""


def find_examples(code: str, entry_point: str) -> list[Example]:
    """The examples of `entry_point` in the docstring of its module-level definition."""
    tree = ast.parse(code)
    definition = next(
        (
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point
        ),
        None,
    )
    docstring = _docstring_node(definition)
    if docstring is None:
        return []
    lines = code.splitlines(keepends=True)
    first, last = docstring.lineno - 1, docstring.end_lineno - 1  # the string's own lines
    examples, i = [], first + 1  # its opening line holds the quotes: examples start below
    while i < last:
        line = lines[i].rstrip("\n")
        doctest = _DOCTEST.fullmatch(line)
        if doctest:
            call = _call_args(doctest["source"], entry_point, whole=True)
            end = i + 1
            while end < last and lines[end].strip() and not _DOCTEST.fullmatch(lines[end].rstrip("\n")):
                end += 1
            if call is not None and end - i <= 2:  # an output of one line at most: one this module can write
                shown = lines[i + 1].strip() if end - i == 2 else ""
                examples.append(Example(i, end, call[0], "doctest", doctest["indent"], shown))
            i = end
            continue
        inline = _inline_example(line, entry_point)
        if inline is not None:
            examples.append(Example(i, i + 1, *inline))
        i += 1
    return examples


def _docstring_node(definition: ast.AST | None) -> ast.Constant | None:
    """The docstring of a module, function or class, if it has one."""
    if definition is None or not definition.body:
        return None
    first = definition.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first.value
    return None


def _call_args(source: str, name: str, *, whole: bool) -> tuple[tuple, int] | None:
    """(literal arguments, length of the call's text) when `source` starts with
    (or, if `whole`, is) a call of `name` with literal positional arguments."""
    if not source.startswith(name + "("):
        return None
    ends = [len(source)] if whole else [i + 1 for i, char in enumerate(source) if char == ")"]
    for end in ends:
        try:
            call = ast.parse(source[:end].strip(), mode="eval").body
        except SyntaxError:
            continue
        if (
            not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == name)
            or call.keywords
        ):
            return None
        try:
            return tuple(ast.literal_eval(arg) for arg in call.args), end
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return None


def _inline_example(line: str, name: str) -> tuple | None:
    """(args, "inline", indent, output, head, separator) of a prose line ``<head>name(args) <sep> output``."""
    for match in re.finditer(rf"(?<![\w.]){re.escape(name)}\(", line):
        found = _call_args(line[match.start() :], name, whole=False)
        if found is None:
            continue
        args, length = found
        separator = _INLINE_SEPARATOR.match(line, match.start() + length)
        if separator and line[separator.end() :].strip():
            indent = line[: len(line) - len(line.lstrip())]
            return (
                args,
                "inline",
                indent,
                line[separator.end() :].strip(),
                line[len(indent) : match.start()],
                separator.group(0),
            )
    return None


def literal_test_inputs(test: str) -> list[tuple]:
    """The literal positional arguments of every ``candidate(...)`` call in a sample's test."""
    inputs = []
    for node in ast.walk(ast.parse(test)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "candidate"
            and not node.keywords
        ):
            try:
                inputs.append(tuple(ast.literal_eval(arg) for arg in node.args))
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
    return inputs


def similar_value(value: object, rng: random.Random) -> object:
    """A value of the same type and about the same size as `value`."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        spread = max(3, abs(value) // 4)
        new = value + rng.randint(-spread, spread)
        return max(new, 0) if value >= 0 else new
    if isinstance(value, float):
        decimals = len(repr(value).split(".")[1]) if "." in repr(value) and "e" not in repr(value) else 2
        spread = max(1.0, abs(value) / 4)
        new = round(value + rng.uniform(-spread, spread), min(decimals, 4))
        return max(new, 0.0) if value >= 0 else new
    if isinstance(value, str):
        return "".join(_similar_char(char, rng) for char in value)
    if isinstance(value, list):
        if not value:
            return []
        length = max(1, len(value) + rng.choice((-1, 0, 0, 1)))
        return [similar_value(rng.choice(value), rng) for _ in range(length)]
    if isinstance(value, tuple):
        return tuple(similar_value(item, rng) for item in value)
    if isinstance(value, dict):
        return {key: similar_value(item, rng) for key, item in value.items()}
    return value


def _similar_char(char: str, rng: random.Random) -> str:
    """Half the letters and digits become another of their class; everything else stays."""
    for alphabet in (string.ascii_lowercase, string.ascii_uppercase, string.digits):
        if char in alphabet:
            return rng.choice(alphabet) if rng.random() < 0.5 else char
    return char


def _shape(value: object) -> object:
    """The type structure a seed must share with an example's argument."""
    if isinstance(value, list | tuple):
        return (type(value), len(value) if isinstance(value, tuple) else None)
    return type(value)


def candidate_inputs(example: Example, seeds: Sequence[tuple], rng: random.Random) -> list[tuple]:
    """New argument tuples for `example`, each built from the example's own
    arguments or a test input of the same shape; never equal to the example's."""
    shape = tuple(map(_shape, example.args))
    pool = [example.args, *(s for s in seeds if tuple(map(_shape, s)) == shape)]
    candidates = []
    for _ in range(4 * CANDIDATES_PER_EXAMPLE):
        new = tuple(similar_value(arg, rng) for arg in rng.choice(pool))
        if repr(new) != repr(example.args) and new not in candidates:
            candidates.append(new)
        if len(candidates) == CANDIDATES_PER_EXAMPLE:
            break
    return candidates


@dataclass(frozen=True)
class Replacement:
    """A new example for an `Example`: the call's arguments and the original's output."""

    args: tuple
    output: object


def choose_replacements(
    examples: Sequence[Example],
    candidates: Sequence[Sequence[tuple]],
    outcomes: dict[tuple, tuple],
    old_outcomes: Sequence[tuple],
) -> list[Replacement | None]:
    """For each example that shows the original's output, the first
    candidate that returned, whose output is None exactly where the old
    example's was, and whose text fits; None when none does (the example stays)."""
    chosen = []
    for example, options, old in zip(examples, candidates, old_outcomes, strict=True):
        pick = None
        if not _shows(example, old):
            chosen.append(None)  # not an example of what the original computes: prose to leave alone
            continue
        for args in options:
            kind, value = outcomes[repr(args)]
            if (
                kind == _OK
                and old[0] == _OK
                and (value is None) == (old[1] is None)
                and _fits(_call_text("f", args))
                and _fits(repr(value))
                and _decimals(repr(value)) <= max(_decimals(repr(old[1])), _DECIMALS)
            ):
                pick = Replacement(args, value)
                break
        chosen.append(pick)
    return chosen


def _shows(example: Example, outcome: tuple) -> bool:
    """Whether the example shows the original's own output (exactly, as a literal)."""
    if outcome[0] != _OK:
        return False
    if example.form == "doctest" and outcome[1] is None:
        return example.shown == ""
    try:
        return ast.literal_eval(example.shown) == outcome[1]
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _fits(text: str) -> bool:
    return "\n" not in text and "\\" not in text and '"""' not in text and "'''" not in text and len(text) <= 200


def _decimals(text: str) -> int:
    """The most decimals of any number written in `text`."""
    return max((len(digits) for digits in _FRACTION.findall(text)), default=0)


def _call_text(name: str, args: tuple) -> str:
    return f"{name}({', '.join(map(repr, args))})"


def rewrite_examples(
    code: str, entry_point: str, examples: Sequence[Example], replacements: Sequence[Replacement | None]
) -> str:
    """`code` with each example that has a replacement rewritten; raises
    ValueError if anything but docstring text would change."""
    lines = code.splitlines(keepends=True)
    for example, new in sorted(zip(examples, replacements, strict=True), key=lambda pair: -pair[0].start):
        if new is None:
            continue
        call = _call_text(entry_point, new.args)
        newline = "\n" if lines[example.end - 1].endswith("\n") else ""
        if example.form == "doctest":
            block = [f"{example.indent}>>> {call}\n"]
            if new.output is not None:
                block.append(f"{example.indent}{new.output!r}\n")
            block[-1] = block[-1][:-1] + newline
        else:
            block = [f"{example.indent}{example.head}{call}{example.separator}{new.output!r}{newline}"]
        lines[example.start : example.end] = block
    return _docstrings_only_changed(code, "".join(lines))


def _docstrings_only_changed(code: str, text: str) -> str:
    """`text`, the rewrite of `code`; ValueError if it changed anything but docstring text."""
    try:
        same = _without_docstrings(text) == _without_docstrings(code)
    except SyntaxError:
        same = False
    if not same:
        raise ValueError("rewriting the examples changed code outside the docstrings")
    return text


def _without_docstrings(code: str) -> str:
    tree = ast.parse(code)
    for node in ast.walk(tree):
        docstring = (
            _docstring_node(node)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            else None
        )
        if docstring is not None:
            docstring.value = ""
    return ast.dump(tree)


@dataclass(frozen=True)
class Transformed:
    """tau_t applied to a program's variants: `texts[j]` is variant j with new
    examples, or None where none of its examples could be replaced;
    `outcome` says why nothing changed ("no examples", the sandbox's failure,
    "no usable input") or "transformed"."""

    texts: list[str | None]
    outcome: str


@dataclass(frozen=True)
class Plan:
    """What tau_t needs computed for one function: its examples, the candidate
    inputs for each example of each variant, and the program that computes
    every input's outcome under the original (None when there is nothing to do)."""

    examples: list[Example]
    candidates: list[list[list[tuple]]]  # [variant][example] -> candidate inputs
    inputs: dict[str, tuple]  # repr -> input: the old examples' and every candidate
    program: str | None


def plan_test_cases(
    code: str, entry_point: str | None, test: str | IoTests, n_variants: int, rng: random.Random
) -> Plan | ProgramPlan:
    """Examples and candidate inputs for `n_variants` variants of the original `code`, each with inputs of
    its own: a function's (HumanEval-style `test`), or a whole program's (no entry point, `test` its
    standard inputs and outputs)."""
    if entry_point is None:
        return _plan_program(code, test, n_variants, rng)
    examples = find_examples(code, entry_point)
    if not examples or not n_variants:
        return Plan(examples, [], {}, None)
    seeds = literal_test_inputs(test)
    candidates = [[candidate_inputs(example, seeds, rng) for example in examples] for _ in range(n_variants)]
    inputs = {repr(args): args for args in (e.args for e in examples)}
    inputs |= {repr(args): args for per_variant in candidates for options in per_variant for args in options}
    program = (
        f"{_counted_source(code)}{_CALLER}\n"
        f"{RESULT} = __leaktrace_outcomes({entry_point}, {list(inputs.values())!r}, __leaktrace_left)\n"
    )
    return Plan(examples, candidates, inputs, program)


def _counted_source(code: str) -> str:
    """``code`` with its steps counted (`leaktrace.sandbox.steps`), ``STEPS`` of
    them for the whole run, and ``__leaktrace_left()`` saying whether any are
    left; ``code`` as it is where it does not parse (its run fails the same way)."""
    try:
        tree = steps.counted_tree(code)
    except (SyntaxError, ValueError):
        return code
    prelude = ast.parse(
        f"import itertools as __leaktrace_itertools, operator as __leaktrace_operator\n"
        f"__leaktrace_counter = __leaktrace_itertools.repeat(True, {STEPS} + 1)\n"
        f"{steps.STEP} = __leaktrace_counter.__next__\n"
        "__leaktrace_left = lambda: __leaktrace_operator.length_hint(__leaktrace_counter) > 0\n"
    ).body
    at = 0
    for node in tree.body:  # after the docstring and __future__ imports, which must come first
        is_docstring = at == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if not (is_docstring or (isinstance(node, ast.ImportFrom) and node.module == "__future__")):
            break
        at += 1
    tree.body[at:at] = prelude
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def run_plans(plans: Sequence[Plan | ProgramPlan], limits: SandboxLimits, *, workers: int) -> list:
    """What the sandbox computed for each plan, `workers` at a time: a function plan's run
    (a SandboxResult), a whole program's outputs by input (`_run_program_plan`), None for
    a plan with nothing to run. A function's run gets STEPS steps, with CPU_S of CPU
    time as its safety net, and the wall clock of `limits` (twice both on a second try,
    where one stopped it); each input of a whole program at most PROGRAM_CPU_S of CPU time."""
    program_limits = replace(limits, cpu_s=min(limits.cpu_s, PROGRAM_CPU_S))
    limits = replace(limits, cpu_s=min(limits.cpu_s, CPU_S))
    calls = [
        functools.partial(_run_program_plan, plan, program_limits)
        if isinstance(plan, ProgramPlan)
        else functools.partial(_run_function_plan, plan.program, limits)
        for plan in plans
        if plan.program is not None
    ]
    ran = iter(in_parallel(calls, workers))
    return [next(ran) if plan.program is not None else None for plan in plans]


def _run_function_plan(program: str, limits: SandboxLimits) -> SandboxResult:
    """The plan's run; once more at twice the time limits where one of them stopped it."""
    result = run_python(program, limits, result_expr=RESULT)
    if not _stopped_by_time(result):
        return result
    doubled = replace(limits, cpu_s=2 * limits.cpu_s, timeout_s=2 * limits.timeout_s)
    return run_python(program, doubled, result_expr=RESULT)


def _stopped_by_time(result: SandboxResult) -> bool:
    """Whether the wall clock or the CPU-time limit (SIGXCPU, then SIGKILL at the hard limit) ended the run."""
    return result.status == "timeout" or (
        result.status == "killed" and any(name in (result.error or "") for name in ("SIGXCPU", "SIGKILL"))
    )


def apply_plan(plan: Plan | ProgramPlan, result, variants: Sequence[tuple[str, str | None]]) -> Transformed:
    """tau_t on each (text, entry point) variant, with what `run_plans` computed for the plan."""
    if plan.program is None:
        return Transformed([None] * len(variants), "no examples")
    if isinstance(plan, ProgramPlan):
        return _apply_program_plan(plan, result, variants)
    if result.status != "ok":
        return Transformed([None] * len(variants), f"sandbox {result.status}")
    if result.return_value is None:
        return Transformed([None] * len(variants), f"past {STEPS:,} steps")
    by_input = dict(zip(plan.inputs, map(tuple, result.return_value), strict=True))
    old = [by_input[repr(e.args)] for e in plan.examples]
    texts = []
    for (text, name), per_variant in zip(variants, plan.candidates, strict=True):
        replacements = choose_replacements(plan.examples, per_variant, by_input, old)
        own = find_examples(text, name)
        if all(r is None for r in replacements) or [e.args for e in own] != [e.args for e in plan.examples]:
            texts.append(None)
            continue
        texts.append(rewrite_examples(text, name, own, replacements))
    return Transformed(texts, "transformed" if any(texts) else "no usable input")


# ---------------------------------------------------------------------------
# Whole programs: examples in the module docstring, run on standard input

# An example's header: "Input", "Sample Input 2", "Example Output:", "-----Sample Input-----"; a header
# between dashes names an example only with "sample" or "example" ("-----Input-----" heads the format).
_EXAMPLE_HEADER = re.compile(
    r"\s*(?P<dashes>-*)\s*(?P<label>(?:(?:sample|example)s?\s+)?(?P<kind>input|output)"
    r"(?:\s*#?\d+)?)\s*:?\s*-*\s*$",
    re.IGNORECASE,
)
_SECTION = re.compile(r"\s*-{3,}.*-{3,}\s*$")  # "-----Note-----": a block ends there
_MAX_BLOCK_LINES = 20
_INTEGER = re.compile(r"(?<![\w.])-?\d+(?![\w.])")
# At most this many sandbox runs per program: a run stops at the first input the program fails on.
_PROGRAM_RUNS = 4


@dataclass(frozen=True)
class ProgramExample:
    """An input block (lines ``input_start``..``input_end``, 0-based, end exclusive) and the
    output block after it in a whole program's docstring, with their texts."""

    input_start: int
    input_end: int
    output_start: int
    output_end: int
    input: str
    shown: str


@dataclass(frozen=True)
class ProgramPlan:
    """What tau_t needs computed for one whole program: the original's output on every input."""

    examples: list[ProgramExample]
    candidates: list[list[list[str]]]  # [variant][example] -> candidate inputs
    inputs: list[str]  # the old examples' and every candidate, distinct
    program: str | None


def _example_header(line: str) -> str | None:
    """ "input" or "output" if `line` heads an example's block."""
    match = _EXAMPLE_HEADER.fullmatch(line.rstrip("\n"))
    if match is None or (match["dashes"] and not re.match(r"(sample|example)", match["label"], re.IGNORECASE)):
        return None
    return match["kind"].lower()


def find_program_examples(code: str) -> list[ProgramExample]:
    """The input/output examples in the module docstring of a whole program."""
    docstring = _docstring_node(ast.parse(code))
    if docstring is None:
        return []
    lines = code.splitlines(keepends=True)
    last = docstring.end_lineno - 1  # the closing line holds the quotes: blocks end above it

    def block_end(start: int) -> int:
        end = start
        while end < last and _example_header(lines[end]) is None and not _SECTION.fullmatch(lines[end].rstrip("\n")):
            end += 1
        while end > start and not lines[end - 1].strip():
            end -= 1  # blank lines before the next header belong to no block
        return end

    examples, i = [], docstring.lineno  # the opening line holds the quotes: blocks start below
    while i < last:
        if _example_header(lines[i]) != "input":
            i += 1
            continue
        input_end = block_end(i + 1)
        output_header = input_end
        while output_header < last and not lines[output_header].strip():
            output_header += 1
        if output_header >= last or _example_header(lines[output_header]) != "output":
            i = max(input_end, i + 1)
            continue
        output_end = block_end(output_header + 1)
        block = lines[i + 1 : input_end], lines[output_header + 1 : output_end]
        if all(0 < len(part) <= _MAX_BLOCK_LINES and _fits_block("".join(part)) for part in block):
            examples.append(
                ProgramExample(i + 1, input_end, output_header + 1, output_end, "".join(block[0]), "".join(block[1]))
            )
        i = output_end
    return examples


def _fits_block(text: str) -> bool:
    """Whether `text` can stand verbatim in a docstring as a block of lines."""
    lines = text.splitlines()
    return (
        bool(text.strip())
        and len(lines) <= _MAX_BLOCK_LINES
        and "\\" not in text
        and '"""' not in text
        and "'''" not in text
        and all(len(line) <= 200 for line in lines)
    )


def program_candidate_inputs(example: ProgramExample, test_inputs: Sequence[str], rng: random.Random) -> list[str]:
    """New standard inputs for `example`: the sample's own test inputs of about its size first
    (drawn in random order), then the example's input with its integers moved; never the example's."""
    size = len(example.input.splitlines())
    own = [
        text
        for text in test_inputs
        if text != example.input and _fits_block(text) and len(text.splitlines()) <= 2 * size + 2
    ]
    candidates = rng.sample(own, min(len(own), CANDIDATES_PER_EXAMPLE))
    for _ in range(4 * CANDIDATES_PER_EXAMPLE):
        if len(candidates) >= CANDIDATES_PER_EXAMPLE:
            break
        moved = _INTEGER.sub(lambda m: str(similar_value(int(m.group()), rng)), example.input)
        if moved != example.input and moved not in candidates:
            candidates.append(moved)
    return candidates


def _plan_program(code: str, tests: IoTests, n_variants: int, rng: random.Random) -> ProgramPlan:
    examples = find_program_examples(code)
    if not examples or not n_variants:
        return ProgramPlan(examples, [], [], None)
    candidates = [
        [program_candidate_inputs(example, tests.inputs, rng) for example in examples] for _ in range(n_variants)
    ]
    inputs = [e.input for e in examples] + [
        text for per_variant in candidates for options in per_variant for text in options
    ]
    return ProgramPlan(examples, candidates, list(dict.fromkeys(inputs)), code)


def _run_program_plan(plan: ProgramPlan, limits: SandboxLimits) -> dict[str, str | None]:
    """The original's standard output on each input of the plan, None where it did not end
    with status 0 (or was not run: after `_PROGRAM_RUNS` runs the rest stays unknown)."""
    outputs: dict[str, str | None] = {}
    todo = list(plan.inputs)
    for _ in range(_PROGRAM_RUNS):
        if not todo:
            break
        result = run_stdio(plan.program, todo, limits)
        if result.status != "ok" or not result.return_value:
            break
        for text, outcome in zip(todo, result.return_value, strict=False):
            outputs[text] = outcome[2].decode("utf-8", "replace") if outcome[0] == "code" and outcome[1] == 0 else None
        todo = todo[len(result.return_value) :]
    return outputs


def _normalised(output: str) -> str:
    """An output as a docstring shows it: lines without trailing spaces, no blank lines at the end."""
    return "".join(line.rstrip() + "\n" for line in output.strip("\n").splitlines())


def _apply_program_plan(
    plan: ProgramPlan, outputs: dict[str, str | None], variants: Sequence[tuple[str, str | None]]
) -> Transformed:
    shows = [outputs.get(e.input) is not None and outputs_match(outputs[e.input], e.shown) for e in plan.examples]
    if not any(shows):
        return Transformed([None] * len(variants), "examples not the original's output")
    texts = []
    for (text, _), per_variant in zip(variants, plan.candidates, strict=True):
        own = find_program_examples(text)
        if [(e.input, e.shown) for e in own] != [(e.input, e.shown) for e in plan.examples]:
            texts.append(None)
            continue
        replacements = []
        for shown, options in zip(shows, per_variant, strict=True):
            pick = next(
                (
                    (new, _normalised(outputs[new]))
                    for new in options
                    if shown and outputs.get(new) and outputs[new].strip() and _fits_block(outputs[new])
                ),
                None,
            )
            replacements.append(pick)
        texts.append(
            None if all(r is None for r in replacements) else _rewrite_program_examples(text, own, replacements)
        )
    return Transformed(texts, "transformed" if any(texts) else "no usable input")


def _rewrite_program_examples(
    code: str, examples: Sequence[ProgramExample], replacements: Sequence[tuple[str, str] | None]
) -> str:
    """`code` with each example's input and output blocks replaced; raises ValueError if
    anything but docstring text would change."""
    lines = code.splitlines(keepends=True)
    for example, new in sorted(zip(examples, replacements, strict=True), key=lambda pair: -pair[0].input_start):
        if new is None:
            continue
        new_input, new_output = (part if part.endswith("\n") else part + "\n" for part in new)
        lines[example.output_start : example.output_end] = [new_output]
        lines[example.input_start : example.input_end] = [new_input]
    return _docstrings_only_changed(code, "".join(lines))
