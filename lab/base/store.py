"""Result files are written atomically: a reader sees all or nothing.
A report folder likewise: written apart, then put in place whole."""
import contextlib
import errno
import gzip
import hashlib
import json
import os
import secrets
import shutil
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


def _beside(out: Path, kind: str) -> Path:
    """A name beside `out` that no other writer uses: hidden, this
    process's and random."""
    return out.with_name(f".{out.name}.{os.getpid()}."
                         f"{secrets.token_hex(4)}.{kind}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _clear_debris(out: Path) -> None:
    """What a writer of `out` killed half way left beside it: its new
    folder goes; its old one is `out` again if `out` is gone (it was
    killed between its two renames)."""
    for p in out.parent.glob(f".{out.name}.*"):
        pid, _, rest = p.name[len(out.name) + 2:].partition(".")
        kind = rest.rpartition(".")[2]
        if not pid.isdigit() or kind not in ("new", "old") or \
                _alive(int(pid)):
            continue
        if kind == "old" and not out.exists():
            os.rename(p, out)
        else:
            shutil.rmtree(p, ignore_errors=True)


@contextlib.contextmanager
def whole_folder(out: Path):
    """A folder written whole: yields a new folder beside `out` (the same
    file system) to fill, then renames `out` away and the new folder in,
    and removes the old one.  A folder written into in place kept the
    files of an earlier write that this one did not make (two compares
    on one --out left the first one's runs and plots), and two writers
    at once mixed their files; now `out` is one writer's folder, or for
    a moment none.  A write that fails leaves `out` as it was."""
    out = Path(out)
    if out.is_symlink():
        out = out.resolve()     # the link stays; its folder is written
    out.parent.mkdir(parents=True, exist_ok=True)
    _clear_debris(out)
    new = _beside(out, "new")
    new.mkdir()
    old = []
    try:
        yield new
        while True:
            gone = _beside(out, "old")
            try:
                os.rename(out, gone)
                old.append(gone)
            except FileNotFoundError:
                pass
            try:
                os.rename(new, out)
                break
            except OSError as e:
                # another writer's folder came in between the two
                # renames: it goes the way of the old one
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        if old and not out.exists():
            os.rename(old.pop(), out)
        raise
    finally:
        for gone in old:
            shutil.rmtree(gone, ignore_errors=True)
