"""The one error type for bad input: it always names the file and, where there
is one, the record, so a researcher can find the offending line."""

from __future__ import annotations


class InputError(Exception):
    def __init__(self, file: str, record: str | int | None, message: str):
        self.file = file
        self.record = record
        self.message = message
        where = file if record is None else f"{file}, record {record}"
        super().__init__(f"{where}: {message}")
