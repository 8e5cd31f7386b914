"""Reading what was submitted, safely, and showing it safely.

Each file is read once, by one open that cannot block (a FIFO or device is refused, links are not
followed), at most MAX_BYTES; JSON nested deeper than MAX_DEPTH is refused. Names and messages are
escaped before they are printed or written, and a CSV cell never becomes a spreadsheet formula.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_BYTES = 50 * 1024 * 1024
MAX_DEPTH = 64  # a notebook nests about 6 deep; deeper JSON is refused before anything walks it
ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Characters that reorder or hide text on screen (bidirectional controls, zero-width marks): escaped.
HIDDEN = set("\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
             "\u2028\u2029\ufeff")


# ----------------------------------------------------------------------------------------------
# Text that is safe in a terminal and in a spreadsheet


def escape(text) -> str:
    """Text safe to print and to write as UTF-8: control characters shown as ``\\n``, ``\\t``, ``\\x1b``;
    bidirectional and zero-width marks as ``\\u202e``; a byte of a file name that is not UTF-8 (Python
    holds it as a lone surrogate) as ``\\xe9``, and any other lone surrogate as ``\\ud800``."""
    out = []
    for ch in str(text):
        code = ord(ch)
        if ch in ESCAPES:
            out.append(ESCAPES[ch])
        elif code < 32 or 0x7F <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        elif 0xDC80 <= code <= 0xDCFF:  # surrogateescape: one undecodable byte of a name
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF or ch in HIDDEN:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def cell(text) -> str:
    """A CSV cell that no spreadsheet turns into a formula (OWASP: prefix a quote)."""
    text = escape(text)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r", "|", "%") else text


def number(value) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def file_stamp(info: os.stat_result) -> tuple:
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class NotRegular(OSError):
    """The path is (or became) a FIFO, a device, a socket or a folder: it is never read."""


def read_bytes(path: Path) -> tuple[bytes, tuple]:
    """The file's bytes (at most MAX_BYTES + 1) and its stamp, from one open that neither follows a link
    nor blocks (a FIFO swapped in after the listing would wait for a writer forever), of a regular file only."""
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW), "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(f"{path} is not a regular file")
        return handle.read(MAX_BYTES + 1), file_stamp(info)


def too_deep(data) -> bool:
    """Whether JSON data nests deeper than MAX_DEPTH (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    return False
