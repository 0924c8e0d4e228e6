"""No result depends on where or when it was made: no seed in the tests, the
workflow, the rules or the scripts comes from a path, a hash() (a string's
changes with PYTHONHASHSEED), the time or a process id, and no generator is
left to seed itself. A seed from the length of pytest's temporary path once
made a stage test pass or fail by the folder pytest chose."""

import ast
import re
from pathlib import Path

import pytest
from helpers import REPO

# Calls that seed a generator or make one: the seed is their first argument or a seed keyword.
SEEDERS = {
    "default_rng",
    "RandomState",
    "Random",
    "seed",
    "manual_seed",
    "manual_seed_all",
    "set_seed",
    "SeedSequence",
    "PCG64",
    "PCG64DXSM",
    "MT19937",
    "Philox",
    "SFC64",
}
# Seeders that, called with nothing, seed themselves from the operating system or the clock.
SELF_SEEDING = SEEDERS - {"manual_seed", "manual_seed_all", "set_seed"}
SEED_KEYWORDS = {"seed", "random_seed", "random_state", "rng_seed"}
# Calls whose value differs from run to run, machine to machine or process to process.
VOLATILE_CALLS = {
    "hash",
    "id",
    "time",
    "time_ns",
    "perf_counter",
    "perf_counter_ns",
    "monotonic",
    "monotonic_ns",
    "process_time",
    "now",
    "utcnow",
    "today",
    "getpid",
    "getppid",
    "get_ident",
    "urandom",
    "getrandbits",
    "randbits",
    "token_bytes",
    "token_hex",
    "uuid1",
    "uuid4",
    "getcwd",
    "cwd",
    "gettempdir",
    "mkdtemp",
}
# Names that hold where something lies; a file's own name (`.name`, `.stem`, `.suffix`) does not move with it.
PATH_NAME = re.compile(r"(^|_)(tmp_?path|tmpdir|tmp_path_factory|path|paths|dir|directory|file|filename)$|^__file__$")
OWN_NAME = {"name", "stem", "suffix"}
SEED_NAME = re.compile(r"(^|_)seed$", re.IGNORECASE)


def _called(node: ast.Call) -> str:
    function = node.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def _volatile(expression: ast.AST) -> str | None:
    """What in a seed expression differs with the run or the place, if anything."""
    pending = [expression]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Attribute) and node.attr in OWN_NAME:
            continue
        if isinstance(node, ast.Call):
            if _called(node) in VOLATILE_CALLS:
                return f"{_called(node)}()"
            # its arguments and what a method is called on, not the function's name: `aggregate_file` is no path
            pending += [*node.args, *(k.value for k in node.keywords)]
            if isinstance(node.func, ast.Attribute):
                pending.append(node.func.value)
            continue
        if isinstance(node, ast.Name) and PATH_NAME.search(node.id):
            return f"the path {node.id}"
        pending.extend(ast.iter_child_nodes(node))
    return None


def unstable_seeds_in_tree(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, why) for every seed in the tree that comes from a path, hash(), the time or a
    process id, and every generator made or seeded with no seed at all."""
    found = []
    for node in ast.walk(tree):
        seeds: list[ast.AST] = []
        if isinstance(node, ast.Call):
            name = _called(node)
            seeds += [k.value for k in node.keywords if k.arg in SEED_KEYWORDS]
            if name in SEEDERS:
                seeds += node.args[:1]
                if name in SELF_SEEDING and not node.args and not node.keywords:
                    found.append((node.lineno, f"{name}() with no seed"))
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(isinstance(t, ast.Name) and SEED_NAME.search(t.id) for t in targets):
                seeds.append(node.value)
        for seed in seeds:
            why = _volatile(seed)
            if why is not None:
                found.append((seed.lineno, f"a seed from {why}"))
    return sorted(found)


def unstable_seeds(source: str, snakemake: bool = False) -> list[tuple[int, str]]:
    """The unstable seeds of a Python file, or of a Snakemake file line by line: its rules
    are not Python, and a line that parses alone (a statement, or a keyword such as a
    rule's `seed=...,` param) is checked as Python."""
    if not snakemake:
        return unstable_seeds_in_tree(ast.parse(source))
    found = []
    for number, line in enumerate(source.splitlines(), 1):
        text = line.strip().rstrip(",")
        for candidate in (text, f"_({text})"):
            try:
                tree = ast.parse(candidate)
            except SyntaxError:
                continue
            found += [(number, why) for _, why in unstable_seeds_in_tree(tree)]
            break
    return found


def _sources() -> list[Path]:
    python = [p for folder in ("tests", "workflow", "benchmarks", "scripts") for p in (REPO / folder).rglob("*.py")]
    return sorted(python) + [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]


def test_no_seed_comes_from_a_path_a_hash_the_time_or_a_process():
    found = [
        f"{path.relative_to(REPO)}:{line}: {why}"
        for path in _sources()
        for line, why in unstable_seeds(path.read_text(), snakemake=path.suffix != ".py")
    ]
    assert found == []
    assert len(_sources()) > 100  # the folders are where they were


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("rng = np.random.default_rng(len(str(path)))", "a seed from the path path"),
        ("rng = np.random.default_rng(len(str(tmp_path / 'x')))", "a seed from the path tmp_path"),
        ("random.seed(hash(name))", "a seed from hash()"),
        ("rng = random.Random(hash('benchmark'))", "a seed from hash()"),
        ("torch.manual_seed(int(time.time()))", "a seed from time()"),
        ("np.random.seed(time.time_ns() % 2**32)", "a seed from time_ns()"),
        ("rng = np.random.default_rng(os.getpid())", "a seed from getpid()"),
        ("fit(x, random_state=os.getpid())", "a seed from getpid()"),
        ("seed = int(datetime.now().timestamp())", "a seed from now()"),
        ("random.seed()", "seed() with no seed"),
        ("rng = np.random.default_rng()", "default_rng() with no seed"),
        ("order = random.Random().sample(items, 3)", "Random() with no seed"),
    ],
)
def test_the_check_finds_a_planted_seed(line, why):
    assert unstable_seeds(f"import os\n{line}\n") == [(2, why)]


@pytest.mark.parametrize(
    "line",
    [
        "rng = np.random.default_rng(derive_seed(seed, 'bootstrap', path.name))",
        "rng = random.Random(f'{seed}-{k}')",
        "torch.manual_seed(settings.seed)",
        "splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed % 2**32)",
        "rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0])",
        "n = len(str(path))",  # a length, but no seed
    ],
)
def test_the_check_passes_a_fixed_seed(line):
    assert unstable_seeds(f"{line}\n") == []


def test_a_rule_param_seeded_by_the_time_is_found():
    rule = (
        'rule train:\n    params:\n        seed=int(time.time()),\n    shell: "leaktrace train --seed {params.seed}"\n'
    )
    assert unstable_seeds(rule, snakemake=True) == [(3, "a seed from time()")]
