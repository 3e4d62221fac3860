"""One build step run as a command: on failure, a LabError that names the
step and shows the end of its output, so a user sees why without
opening a log (and the log, when one is kept, says where the rest is)."""
import subprocess
from pathlib import Path

from ..base.log import LabError


def run(cmd: list, cwd: Path, what: str, log: Path = None,
        prefix: str = "", lines: int = 15) -> str:
    """Run `cmd` in `cwd`; its stdout, or its output in `log` if given."""
    try:
        if log:
            with open(log, "w") as out:
                r = subprocess.run(cmd, cwd=cwd, stdout=out,
                                   stderr=subprocess.STDOUT, text=True)
            output = Path(log).read_text(errors="replace")
        else:
            r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
            output = r.stdout + r.stderr
    except OSError as e:
        raise LabError(f"{prefix}{what}: {e}") from None
    if r.returncode != 0:
        kept = f" (log {log})" if log else ""
        tail = "\n  ".join(output.strip().splitlines()[-lines:])
        raise LabError(f"{prefix}{what} failed{kept}:\n  {tail}")
    return r.stdout or ""
