"""The call signatures of vLLM that ``leaktrace.models.vllm_engine`` uses,
read from vLLM's source text with ``ast`` (vLLM itself cannot be imported
here): ``LLM.__init__``, ``LLM.generate``, ``LLM.chat``, and the fields of
``SamplingParams``, ``LoRARequest`` and ``EngineArgs`` (what ``LLM(**kwargs)``
passes on). ``python tests/vllm_api.py WHEEL`` writes tests/data/vllm_api.json."""

import ast
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

SOURCES = {
    "llm": "vllm/entrypoints/llm.py",
    "sampling": "vllm/sampling_params.py",
    "lora": "vllm/lora/request.py",
    "engine": "vllm/engine/arg_utils.py",
}
RECORD = Path(__file__).parent / "data" / "vllm_api.json"


def _parameters(fn: ast.FunctionDef) -> list[dict]:
    a = fn.args
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [
        {
            "name": p.arg,
            "kind": "POSITIONAL_ONLY" if p in a.posonlyargs else "POSITIONAL_OR_KEYWORD",
            "default": d is not None,
        }
        for p, d in zip(positional, defaults, strict=True)
    ]
    if a.vararg:
        out.append({"name": a.vararg.arg, "kind": "VAR_POSITIONAL", "default": False})
    out += [
        {"name": p.arg, "kind": "KEYWORD_ONLY", "default": d is not None}
        for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
    ]
    if a.kwarg:
        out.append({"name": a.kwarg.arg, "kind": "VAR_KEYWORD", "default": False})
    return out[1:]  # self


def _fields(cls: ast.ClassDef) -> list[dict]:
    """A msgspec Struct's or dataclass's public fields, as keyword parameters."""
    return [
        {"name": n.target.id, "kind": "KEYWORD_ONLY", "default": n.value is not None}
        for n in cls.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and not n.target.id.startswith("_")
        and not ast.unparse(n.annotation).startswith("ClassVar")
    ]


def _class(source: str, name: str) -> ast.ClassDef:
    return next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == name)


def extract(sources: dict[str, str]) -> dict:
    llm = {n.name: n for n in _class(sources["llm"], "LLM").body if isinstance(n, ast.FunctionDef)}
    return {
        "LLM.__init__": _parameters(llm["__init__"]),
        "LLM.generate": _parameters(llm["generate"]),
        "LLM.chat": _parameters(llm["chat"]),
        "SamplingParams": _fields(_class(sources["sampling"], "SamplingParams")),
        "LoRARequest": _fields(_class(sources["lora"], "LoRARequest")),
        "EngineArgs": _fields(_class(sources["engine"], "EngineArgs")),
    }


def read_wheel(wheel: Path) -> dict:
    with zipfile.ZipFile(wheel) as z:
        return extract({k: z.read(v).decode() for k, v in SOURCES.items()})


if __name__ == "__main__":
    wheel = Path(sys.argv[1])
    version = re.match(r"vllm-([^-]+)-", wheel.name).group(1)
    record = {
        "version": version,
        "wheel": wheel.name,
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        **read_wheel(wheel),
    }
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
