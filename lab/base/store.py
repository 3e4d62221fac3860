"""Result files are written atomically: a reader sees all or nothing."""
import gzip
import hashlib
import json
import os
from pathlib import Path


def write_text(path: Path, text: str) -> None:
    write_bytes(path, text.encode())


def write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)     # the old file, if any, is intact
        raise


def write_json(path: Path, data, compact: bool = False) -> None:
    """JSON, sorted; `compact`, without indentation (a report's
    analysis.json: half the size, read with jq)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":")) \
        if compact else json.dumps(data, indent=2, sort_keys=True)
    write_text(path, text + "\n")


def write_json_gz(path: Path, data) -> None:
    """Compact JSON, gzip'd without a timestamp (the same data gives the
    same bytes): a report's per-run summaries, read with zcat or jq."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"
    write_bytes(path, gzip.compress(text.encode(), mtime=0))


def read_json(path: Path):
    path = Path(path)
    if path.suffix == ".gz":
        return json.loads(gzip.decompress(path.read_bytes()))
    return json.loads(path.read_text())


def sha256(path: Path) -> str:
    """A file's content hash, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
