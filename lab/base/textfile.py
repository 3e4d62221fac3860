"""The lab's own text files (scenarios, variant.conf, series, expect
files) read as UTF-8, a byte that is not named by file and line."""
from pathlib import Path

from .log import LabError


def read(path: Path, what: str) -> str:
    try:
        return Path(path).read_text()
    except UnicodeDecodeError as e:
        line = Path(path).read_bytes()[:e.start].count(b"\n") + 1
        raise LabError(f"{path}:{line}: not UTF-8 text (byte "
                       f"{e.object[e.start]:#04x}); {what} is a text "
                       f"file") from None
