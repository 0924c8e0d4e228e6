"""Sample ids as users write them.

Every table keys a sample as ``{benchmark}/{task id}`` (``mbpp/11``,
``humaneval/HumanEval/0``); a user's id list (control ids, held-out ids)
names samples as the release does (``11``, ``HumanEval/0``) or as the
tables do. :func:`match_ids` accepts both, and an id that names no sample
at all is an error that says which, so a typo never silently shrinks a set."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

from leaktrace.errors import InputError


def read_id_list(path: Path) -> list[str]:
    """One id per line; blank lines and ``#`` comments ignored."""
    if not path.exists():
        raise InputError(str(path), None, "id list does not exist")
    return [
        line.strip() for line in path.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]


def task_id(sample_id: str) -> str:
    """The release's id of a sample: what follows the benchmark's name."""
    return sample_id.partition("/")[2]


def match_ids(ids: Iterable[str], sample_ids: Collection[str], source: str) -> set[str]:
    """The sample ids ``ids`` name: each either a sample id (``mbpp/11``) or
    a task id (``11``). An id that names none of ``sample_ids`` is an
    :class:`InputError` naming ``source``, the id and an example of the form
    the ids have."""
    by_task: dict[str, set[str]] = {}
    for sid in sample_ids:
        by_task.setdefault(task_id(sid), set()).add(sid)
    matched: set[str] = set()
    for item in ids:
        if item in sample_ids:
            matched.add(item)
        elif item in by_task:
            matched |= by_task[item]
        else:
            example = min(sample_ids) if sample_ids else None
            hint = f" (ids look like {task_id(example)!r} or {example!r})" if example else " (there are no samples)"
            raise InputError(source, None, f"id {item!r} matches no sample{hint}")
    return matched
