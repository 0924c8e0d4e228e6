"""Write tests/data/codebleu_fixtures.json: the PyPI codebleu 0.7.0 package's scores on a set of Python pairs.

leaktrace re-implements CodeBLEU on tree-sitter 0.26 (leaktrace/similarity/codebleu.py)
because the package needs tree-sitter 0.22. This script runs the package itself,
in a throwaway environment, so the test can compare the two:

    python3 -m venv /tmp/cbvenv
    /tmp/cbvenv/bin/pip install codebleu==0.7.0 tree-sitter==0.22.3 tree-sitter-python==0.21.0
    /tmp/cbvenv/bin/python tests/data/make_codebleu_fixtures.py

Pairs: the App. E examples of the functional-memorization paper (ground truth
vs target and vs reference), hand-written edge cases (no dataflow, comments
and docstrings, loops, comprehensions, broken code, empty generation) and
functions of this repository paired with each other and with edited copies.
The JSON stores every pair's text, so the test does not depend on the repository's
code as it is now (a rerun after the code changes gives other repository pairs).
Each pair is scored once per PYTHONHASHSEED in 0..4 in a fresh interpreter:
the package merges dataflow parents through ``set``, so a few scores depend
on the hash seed; every distinct result is kept.
"""

import ast
import json
import keyword
import os
import re
import subprocess
import sys
import textwrap
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "codebleu_fixtures.json"
SEEDS = range(5)

EDGE_CASES = {
    "no_dataflow": ("def f():\n    pass\n", "def f():\n    return 1\n"),
    "no_dataflow_both": ("def f():\n    pass\n", "def f():\n    pass\n"),
    "zero_dataflow_match": ("def f(a):\n    b = a + 1\n    return b\n", "def f():\n    print('x')\n"),
    "identical": ("def add(a, b):\n    c = a + b\n    return c\n", "def add(a, b):\n    c = a + b\n    return c\n"),
    "renamed": ("def add(a, b):\n    c = a + b\n    return c\n", "def add(x, y):\n    z = x + y\n    return z\n"),
    "comments_docstrings": (
        'def f(x):\n    """Doc."""\n    # a comment\n    y = x * 2  # trailing\n    return y\n',
        "def f(x):\n    '''Other doc.'''\n    y = x * 2\n    return y\n"),
    "empty_candidate": ("def f(x):\n    return x\n", ""),
    "signature_only_candidate": ("def f(x):\n    y = x\n    return y\n", "def f(x):\n"),
    "broken_candidate": ("def f(x):\n    y = x + 1\n    return y\n", "def f(x):\n    y = x +\n    return (y\n"),
    "loops": (
        "def f(n):\n    t = 0\n    for i in range(n):\n        t += i\n    while t > 10:\n        t -= 3\n    return t\n",
        "def f(n):\n    s = 0\n    i = 0\n    while i < n:\n        s += i\n        i += 1\n    return s\n"),
    "if_elif_else": (
        "def g(v):\n    if v > 1:\n        r = 1\n    elif v < 0:\n        r = -1\n    else:\n        r = 0\n    return r\n",
        "def g(v):\n    r = 0\n    if v > 1:\n        r = 1\n    if v < 0:\n        r = -1\n    return r\n"),
    "comprehension_defaults": (
        "def h(xs, k=2, *, scale=1.0):\n    ys = [x * k for x in xs if x]\n    return {y: y * scale for y in ys}\n",
        "def h(xs, k=3):\n    out = []\n    for x in xs:\n        out.append(x * k)\n    return out\n"),
    "tuple_unpacking": (
        "def swap(a, b):\n    a, b = b, a\n    c, d = divmod(a, b)\n    return c, d\n",
        "def swap(a, b):\n    t = a\n    a = b\n    b = t\n    return a, b\n"),
    "fstrings_and_calls": (
        'def greet(name, n):\n    msg = f"hi {name}!" * n\n    print(msg, end="")\n    return len(msg)\n',
        'def greet(name, n):\n    msg = "hi " + name\n    print(f"{msg:>10}")\n    return msg\n'),
    "method_with_self": (
        "def push(self, item):\n    self._items.append(item)\n    self.size += 1\n    return self.size\n",
        "def push(self, item):\n    self._items.insert(0, item)\n    self.size = len(self._items)\n"),
    "decorator_lambda_try": (
        "@cache\ndef load(path):\n    try:\n        data = open(path).read()\n    except OSError as e:\n        data = ''\n"
        "    key = lambda s: s.lower()\n    return sorted(data.split(), key=key)\n",
        "@cache\ndef load(path):\n    with open(path) as fh:\n        data = fh.read()\n    return sorted(data.split())\n"),
    "with_walrus_async": (
        "async def fetch(session, url):\n    async with session.get(url) as r:\n        if (n := r.status) != 200:\n"
        "            raise RuntimeError(n)\n        body = await r.text()\n    return body\n",
        "async def fetch(session, url):\n    r = await session.get(url)\n    body = await r.text()\n    return body\n"),
    "python2_print": ('def p(x):\n    print "value", x\n    return x\n', "def p(x):\n    print('value', x)\n    return x\n"),
}


def app_e_pairs() -> dict[str, tuple[str, str]]:
    pairs = {}
    for example in sorted((ROOT / "tests" / "data" / "app_e").iterdir()):
        signature = (example / "signature.txt").read_text()
        function = {name: signature + textwrap.indent((example / f"{name}.txt").read_text(), "    ")
                    for name in ("ground_truth", "target", "reference")}
        for model in ("target", "reference"):
            pairs[f"{example.name}_{model}"] = (function["ground_truth"], function[model])
    return pairs


def _edited(source: str) -> str:
    """A deterministic edit: names of 3+ letters (not keywords, not called) get a suffix, digits change,
    the last line goes."""
    lines = source.splitlines(keepends=True)
    body = "".join(lines[:-1] if len(lines) > 3 else lines)
    body = re.sub(r"\b([a-z_]{3,})\b(?!\s*\()", lambda m: m.group(1) if keyword.iskeyword(m.group(1)) else m.group(1) + "_v",
                  body)
    return re.sub(r"\b([0-9])\b", lambda m: str((int(m.group(1)) + 1) % 10), body)


def repository_pairs(limit: int = 40) -> dict[str, tuple[str, str]]:
    functions = []
    for path in sorted((ROOT / "workflow" / "leaktrace" / "similarity").glob("*.py")):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef) and node.col_offset == 0:
                text = ast.get_source_segment(source, node, padded=True)
                if 4 <= text.count("\n") <= 40:
                    functions.append((f"{path.stem}.{node.name}", text + "\n"))
    functions = functions[:limit // 2]
    pairs = {}
    for i, (name, text) in enumerate(functions):
        pairs[f"repo_{name}_edited"] = (text, _edited(text))
        other_name, other = functions[(i + 1) % len(functions)]
        pairs[f"repo_{name}_vs_{other_name.split('.')[-1]}"] = (text, other)
    return pairs


def score_all(pairs: dict[str, tuple[str, str]]) -> dict[str, dict]:
    """Run in the package's environment: the package's five scores per pair."""
    import logging

    from codebleu import calc_codebleu

    logging.disable(logging.WARNING)
    return {name: calc_codebleu([reference], [candidate], "python") for name, (reference, candidate) in pairs.items()}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--score":
        pairs = json.load(sys.stdin)
        json.dump(score_all(pairs), sys.stdout)
        return
    pairs = {**app_e_pairs(), **EDGE_CASES, **repository_pairs()}
    results: dict[str, list[dict]] = {name: [] for name in pairs}
    for seed in SEEDS:
        run = subprocess.run([sys.executable, __file__, "--score"], input=json.dumps(pairs), capture_output=True,
                             text=True, check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)})
        for name, scores in json.loads(run.stdout).items():
            if scores not in results[name]:
                results[name].append(scores)
    fixtures = {
        "versions": {name: version(name) for name in ("codebleu", "tree-sitter", "tree-sitter-python")},
        "seeds": list(SEEDS),
        "pairs": [{"name": name, "reference": reference, "candidate": candidate, "package": results[name]}
                  for name, (reference, candidate) in pairs.items()],
    }
    OUT.write_text(json.dumps(fixtures, indent=1, sort_keys=True) + "\n")
    varying = [name for name, runs in results.items() if len(runs) > 1]
    print(f"{len(pairs)} pairs -> {OUT}; hash-seed dependent: {varying}")


if __name__ == "__main__":
    main()
