"""The package's layering, read from the source (every import, function-level
ones included): a stage imports the library, never another stage; the library
never imports a stage; the library's folders depend on each other without a
cycle, so each has a place below the ones that use it (docs/architecture.md,
"Package layout")."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "workflow" / "leaktrace"
ENTRY_POINTS = {"leaktrace.cli", "leaktrace.__main__", "leaktrace.forkserver"}  # dispatch to (or preload) the stages


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str) -> set[str]:
    """The leaktrace modules ``name`` imports anywhere in its source."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:  # a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def is_stage(name: str) -> bool:
    return name == "leaktrace.stages" or name.startswith("leaktrace.stages.")


def room(name: str) -> str:
    """The library folder a module lives in, or the top-level module itself."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else name


def test_no_stage_imports_another_stage():
    found = sorted((m, t) for m in MODULES if is_stage(m) for t in imports(m) if is_stage(t))
    assert found == [], "stages import each other; move what they share into the library:\n" + "\n".join(
        f"  {m} -> {t}" for m, t in found
    )


def test_the_library_never_imports_a_stage():
    found = sorted(
        (m, t) for m in MODULES if not is_stage(m) and m not in ENTRY_POINTS for t in imports(m) if is_stage(t)
    )
    assert found == [], "\n".join(f"  {m} -> {t}" for m, t in found)


def test_the_library_folders_depend_on_each_other_without_a_cycle():
    graph: dict[str, set[str]] = {}
    for m in MODULES:
        if m in ENTRY_POINTS or is_stage(m):
            continue
        graph.setdefault(room(m), set()).update(room(t) for t in imports(m) if room(t) != room(m) and not is_stage(t))
    try:
        order = list(TopologicalSorter(graph).static_order())
    except CycleError as err:
        raise AssertionError(f"the library folders import each other in a cycle: {' -> '.join(err.args[1])}") from None
    assert "stages" not in order and "mutate" in order and "leakage" in order


def test_the_checks_see_what_they_are_meant_to_see(tmp_path, monkeypatch):
    """The import reader finds function-level and relative imports (so the
    checks above can fail)."""
    fake = tmp_path / "leaktrace"
    (fake / "stages").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "stages" / "__init__.py").write_text("")
    (fake / "stages" / "a.py").write_text("def f():\n    from leaktrace.stages.b import g\n")
    (fake / "stages" / "b.py").write_text("from . import a\ndef g():\n    pass\n")
    monkeypatch.setitem(globals(), "PACKAGE", fake)
    monkeypatch.setitem(globals(), "MODULES", {module_name(p): p for p in fake.rglob("*.py")})
    assert imports("leaktrace.stages.a") == {"leaktrace.stages.b"}
    assert imports("leaktrace.stages.b") == {"leaktrace.stages.a"}


def test_no_test_module_imports_another():
    """Shared test code lives in helper modules (tests/helpers.py, repo_copy.py, ...),
    so a test module never imports a test module or conftest (a child process a
    test starts may import the test's own module)."""
    tests = Path(__file__).resolve().parent
    found = []
    for path in sorted(tests.glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [(path.name, n) for n in names if n == "conftest" or (n.startswith("test_") and n != path.stem)]
    assert found == [], found
