"""The one error type for bad input: it always names the file and, where there
is one, the record, so a researcher can find the offending line."""

from __future__ import annotations

import json


class InputError(Exception):
    def __init__(self, file: str, record: str | int | None, message: str):
        self.file = file
        self.record = record
        self.message = message
        where = file if record is None else f"{file}, record {record}"
        super().__init__(f"{where}: {message}")


def json_position(err: json.JSONDecodeError, line: int | None = None) -> str:
    """The decoder's complaint and where it is in the file, as an editor counts.
    The decoder counts within the text it was given: for a line of a JSON lines
    file (``line``, counted from 1) that is always its line 1, so the line is the
    file's and the column the decoder's on that line."""
    return f"{err.msg} at line {err.lineno if line is None else line + err.lineno - 1}, column {err.colno}"


def utf8_position(data: bytes, err: UnicodeDecodeError, line: int | None = None) -> str:
    """The byte that is not UTF-8 and where it is: the line (``line``, when ``data``
    is that one line of a file, else counted in ``data``) and its character column."""
    before = data[: err.start]
    if line is None:
        line, before = before.count(b"\n") + 1, before[before.rfind(b"\n") + 1 :]
    return f"byte 0x{data[err.start]:02x} at line {line}, column {len(before.decode('utf-8', 'replace')) + 1}"
