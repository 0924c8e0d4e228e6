"""Names as UTF-8 can hold them. A POSIX file name is bytes, and Python hands
the bytes that are not UTF-8 over as lone surrogates (``surrogateescape``);
JSON can spell lone surrogates too (``"\\ud800"``). Neither can be written to
a Parquet table or a UTF-8 log, so a name that carries one is written with
backslash escapes instead: the record keeps a name a reader can find, and the
table can be written."""

from __future__ import annotations


def readable(name: str) -> str:
    """``name`` unchanged if UTF-8 can encode it; else the undecodable bytes of
    a file name as ``\\xff`` and any other lone surrogate as ``\\ud800``."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
