"""The per-rule environments of `--sdm conda` (envs/*.yaml) hold every package
the rule's code imports, the CPU environment holds no PyTorch, and the
container definition installs the lock. Static and offline: the imports are
found by walking the AST from the rule's `python -m leaktrace <command>`
through the functions and classes it reaches (function-level imports
included), so a command is charged only for the code it can run."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from functools import cache
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "workflow"
MODEL_STACK = {"torch", "transformers", "peft", "accelerate", "tokenizers", "vllm"}


# --- what a command imports ------------------------------------------------


class Module:
    """One leaktrace module: its syntax tree and top-level definitions."""

    def __init__(self, name: str, path: Path):
        self.name = name
        self.is_package = path.name == "__init__.py"
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.defs = {
            n.name: n for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }

    def absolute(self, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module
        base = self.name.split(".")[: None if self.is_package else -1]
        base = base[: len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))


@cache
def module(name: str) -> Module | None:
    path = PACKAGE / Path(*name.split("."))
    for candidate in (path / "__init__.py", path.with_suffix(".py")):
        if candidate.exists():
            return Module(name, candidate)
    return None


def _optional(handlers: list[ast.ExceptHandler]) -> bool:
    names = {n.id for h in handlers if h.type is not None for n in ast.walk(h.type) if isinstance(n, ast.Name)}
    return bool(names & {"ImportError", "ModuleNotFoundError"})


def _walk(nodes, skip_bodies: bool, optional: bool = False):
    """(node, inside try/except ImportError) for every node under ``nodes``; with
    ``skip_bodies``, function bodies are left out (what runs at import)."""
    for node in nodes:
        yield node, optional
        if skip_bodies and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _walk(node.decorator_list if not isinstance(node, ast.Lambda) else [], skip_bodies, optional)
            continue
        if isinstance(node, ast.Try):
            yield from _walk(node.body, skip_bodies, optional or _optional(node.handlers))
            yield from _walk(node.handlers + node.orelse + node.finalbody, skip_bodies, optional)
            continue
        yield from _walk(ast.iter_child_nodes(node), skip_bodies, optional)


def _reached(mod: Module, nodes, skip_bodies: bool, bound: dict[str, tuple[str, str | None]] | None = None):
    """The leaktrace nodes and third-party imports the code in ``nodes`` reaches,
    and the names its leaktrace imports bind: its imports, and the names it uses
    that a top-level definition or a leaktrace import (``bound`` holds the
    module's own) binds."""
    bound = dict(bound or {})  # local name -> (module, attribute or None)
    steps, third_party = set(), set()
    for node, optional in _walk(nodes, skip_bodies):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):  # `import a.b` binds `a`; `import a.b as c` binds `c` to a.b
                targets = [
                    (a.name, None, a.asname or a.name.split(".")[0], a.name if a.asname else a.name.split(".")[0])
                    for a in node.names
                ]
            else:
                targets = [(mod.absolute(node), a.name, a.asname or a.name, mod.absolute(node)) for a in node.names]
            for source, attr, local, binding in targets:
                top = source.split(".")[0]
                if top == "leaktrace":
                    steps |= {("module", ".".join(source.split(".")[:i])) for i in range(1, source.count(".") + 2)}
                    if attr is not None:
                        steps.add(("name", source, attr))
                    bound[local] = (binding, attr)
                elif top not in sys.stdlib_module_names and top != "__future__" and not optional:
                    third_party.add(top)
    for node, _ in _walk(nodes, skip_bodies):
        if isinstance(node, ast.Name):
            if node.id in mod.defs:
                steps.add(("name", mod.name, node.id))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            source, attr = bound[node.value.id]
            steps.add(("name", f"{source}.{attr}" if attr else source, node.attr))
    return steps, third_party, bound


@cache
def module_bindings(name: str) -> dict[str, tuple[str, str | None]]:
    """The names a module's top-level leaktrace imports bind."""
    mod = module(name)
    return _reached(mod, mod.tree.body, skip_bodies=True)[2]


@cache
def stage_functions() -> dict[str, tuple[str, str]]:
    """cli.STAGES, read from the source: command -> (module, function)."""
    for node in module("leaktrace.cli").tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "STAGES":
            table = ast.literal_eval(node.value)
            return {command: tuple(target.split(":")) for command, target in table.items()}
    raise AssertionError("leaktrace.cli has no STAGES table")


@cache
def command_imports(command: str) -> frozenset[str]:
    """The third-party top-level modules ``python -m leaktrace <command>`` can import."""
    todo = [("module", "leaktrace.__main__"), ("module", "leaktrace.cli"), ("module", "leaktrace.stage_entry")]
    stage = stage_functions().get(command)
    if stage is not None:  # dispatched by cli.STAGES: the stage's module and function
        todo += [("module", stage[0]), ("name", *stage)]
    else:
        cli = module("leaktrace.cli")
        function = next(
            f
            for f in cli.defs.values()
            if any(
                isinstance(d, ast.Call) and getattr(d.func, "id", None) == "command" and d.args[0].value == command
                for d in getattr(f, "decorator_list", [])
            )
        )
        todo.append(("name", "leaktrace.cli", function.name))
    seen, imports = set(), set()
    while todo:
        step = todo.pop()
        if step in seen:
            continue
        seen.add(step)
        if step[0] == "module":
            mod = module(step[1])
            if mod is None:
                continue
            steps, found, _ = _reached(mod, mod.tree.body, skip_bodies=True)
        else:
            _, name, attr = step
            mod = module(name)
            if mod is None:  # an attribute of a class (followed whole where it is reached)
                continue
            if module(f"{name}.{attr}") is not None:
                steps, found = {("module", f"{name}.{attr}")}, set()
            elif attr in mod.defs:
                steps, found, _ = _reached(mod, [mod.defs[attr]], skip_bodies=False, bound=module_bindings(name))
                steps.add(("module", name))
            else:  # a re-exported or module-level name: what the module binds it to
                steps, found, _ = _reached(
                    mod,
                    [n for n in mod.tree.body if attr in {(a.asname or a.name) for a in getattr(n, "names", [])}],
                    skip_bodies=True,
                )
                steps.add(("module", name))
        todo.extend(steps - seen)
        imports |= found
    return frozenset(imports)


# --- what an environment holds ---------------------------------------------


@cache
def env_packages(env_file: Path) -> set[str]:
    """Distribution names an environment file installs: its conda and pip
    entries, and the leaktrace package's own requirements with the extras named."""
    spec = yaml.safe_load(env_file.read_text(encoding="utf-8"))
    names = set()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for dep in spec["dependencies"]:
        if isinstance(dep, str):
            names.add(canonicalize_name(re.split(r"[=<> ]", dep)[0]))
            continue
        for line in dep["pip"]:
            if line.startswith(("-c ", "-r ", "--")):
                continue
            if line.startswith("-e "):
                extras = re.search(r"\[(.*)\]", line)
                requirements = list(project["dependencies"])
                for extra in extras.group(1).split(",") if extras else []:
                    requirements += project["optional-dependencies"][extra.strip()]
                names |= {canonicalize_name(Requirement(r).name) for r in requirements} | {"leaktrace"}
            else:
                names.add(canonicalize_name(Requirement(line).name))
    return names


@cache
def _packages_distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distributions(top_level: str) -> set[str]:
    return {canonicalize_name(d) for d in _packages_distributions().get(top_level, [top_level])}


# --- which rule runs which command in which environment --------------------


def env_names() -> dict[str, set[Path]]:
    """The environment names rules/common.smk defines (a name may be assigned
    more than once: every file it may point at)."""
    names: dict[str, set[Path]] = {}
    text = (ROOT / "rules" / "common.smk").read_text(encoding="utf-8")
    for name, value in re.findall(r"^\s*(\w+_ENV) = (.+)$", text, flags=re.M):
        files = re.findall(r'"(\.\./envs/[\w.-]+\.yaml)"', value)
        aliases = re.findall(r"\b(\w+_ENV)\b", value)
        names.setdefault(name, set()).update((ROOT / "rules" / f).resolve() for f in files)
        for alias in aliases:
            names[name] |= names.get(alias, set())
    return names


def env_function_choices(name: str) -> set[str]:
    """The environment names a rules/common.smk ``conda:`` function returns."""
    text = (ROOT / "rules" / "common.smk").read_text(encoding="utf-8")
    body = re.search(rf"^def {name}\(wildcards\):\n((?:    .*\n|\n)+)", text, flags=re.M)
    return set(re.findall(r"\b(\w+_ENV)\b", body.group(1))) if body else set()


def rules() -> list[tuple[str, str, str | None]]:
    """(rule, conda directive, leaktrace command or None) of every rule with a shell."""
    out = []
    for smk in sorted((ROOT / "rules").glob("*.smk")):
        blocks = re.split(r"^\s*rule (\w+):\s*$", smk.read_text(encoding="utf-8"), flags=re.M)
        for name, body in zip(blocks[1::2], blocks[2::2], strict=False):
            if "shell:" not in body:
                continue
            conda = re.search(r"conda:\s*\n\s*(\w+)", body)
            command = re.search(r"\{LEAKTRACE(?:_ONLINE)?\}\s+([\w-]+)", body)
            out.append((name, conda and conda.group(1), command and command.group(1)))
    return out


RULES = rules()


def test_every_rule_with_a_shell_names_an_environment_from_common_smk():
    names = env_names()
    assert len(RULES) > 20
    assert {"CPU_ENV", "MODEL_ENV", "CONDA_ENV"} <= set(names)
    for rule, conda, _ in RULES:
        choices = {conda} if conda in names else env_function_choices(conda)
        assert choices and choices <= set(names), (
            f"rule {rule}: conda: {conda} names no environment of rules/common.smk"
        )
        for choice in choices:
            assert names[choice] and all(p.exists() for p in names[choice]), (rule, names[choice])


CONSTANT_ENV_RULES = [r for r in RULES if r[2] and (r[1] or "").endswith("_ENV")]


@pytest.mark.parametrize("rule,conda,command", CONSTANT_ENV_RULES, ids=[r[0] for r in CONSTANT_ENV_RULES])
def test_rule_environment_holds_what_its_command_imports(rule, conda, command):
    assert_environment_holds(rule, conda, command_imports(command))


def assert_environment_holds(rule: str, conda: str, needed: set[str]) -> None:
    for env_file in env_names()[conda]:
        held = env_packages(env_file)
        missing = {top: distributions(top) for top in needed if not distributions(top) & held}
        assert not missing, f"rule {rule} imports {sorted(missing)}, which {env_file.name} lacks"


@pytest.mark.parametrize("name", ["leakage_gather", "variants", "leakage_rephrase", "leakage_rephrase_gather"])
def test_a_rule_needs_the_model_environment_only_for_its_llm(name):
    # leakage_gather_env / variants_env: MODEL_ENV with an LLM judge / LLM renamer (transformers), else CPU_ENV;
    # leakage_rephrase_env / leakage_rephrase_gather_env: with the hf embedder / the judge.
    rule = next(r for r in RULES if r[0] == name)
    assert env_function_choices(rule[1]) == {"CPU_ENV", "MODEL_ENV"}
    needed = command_imports(rule[2])
    assert {"torch", "transformers"} <= needed
    assert_environment_holds(rule[0], "MODEL_ENV", needed)
    assert_environment_holds(rule[0], "CPU_ENV", needed - MODEL_STACK)


def test_cpu_environment_has_no_pytorch_and_its_commands_import_none():
    (cpu,) = env_names()["CPU_ENV"]
    assert not env_packages(cpu) & MODEL_STACK
    cpu_commands = {command for _, conda, command in RULES if conda == "CPU_ENV" and command}
    assert {
        "ingest-benchmark",
        "leakage-scan",
        "aggregate",
        "audit-tables",
        "audit-exchangeability-table",
    } <= cpu_commands
    for command in sorted(cpu_commands):
        assert not command_imports(command) & MODEL_STACK, command


def test_import_walk_sees_function_level_imports():
    # Model stages import torch only inside functions; the walk must find them.
    assert {"torch", "transformers", "peft"} <= command_imports("train")
    assert "huggingface_hub" in command_imports("fetch-model")
    # The vllm import sits under `except ImportError` (an optional extra).
    assert "vllm" not in command_imports("blackbox")


def test_container_definition_installs_the_lock_and_the_package():
    text = (ROOT / "envs" / "leaktrace.def").read_text(encoding="utf-8")
    header = dict(re.findall(r"^(Bootstrap|From):\s*(\S+)", text, flags=re.M))
    assert header["Bootstrap"] == "docker" and header["From"].startswith("python:3.11")
    sections = set(re.findall(r"^%(\w+)", text, flags=re.M))
    assert {"files", "post", "environment"} <= sections
    assert re.search(r"pip install .*-r /opt/leaktrace/requirements\.lock", text)
    assert re.search(r"pip install .*--no-deps /opt/leaktrace$", text, flags=re.M)
    # The Snakefile's image is the one the README's build command makes from this file.
    (image,) = re.findall(r'^container: "(.+)"$', (ROOT / "Snakefile").read_text(encoding="utf-8"), flags=re.M)
    assert f"apptainer build {image} envs/leaktrace.def" in (ROOT / "README.md").read_text(encoding="utf-8")
