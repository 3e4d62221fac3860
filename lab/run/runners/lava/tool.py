"""Run a LAVA command-line tool with errors people can act on."""
import subprocess

from ....base.log import LabError


def tool(cmd: list, what: str, missing: str, shown: str = "",
         timeout: float = 120, cwd: str = None) -> str:
    """The stdout of `cmd`, or a LabError naming `what` and the command
    as `shown` (the part people may see: never credentials); `missing`
    says what to install when the program is not there."""
    shown = shown or " ".join(cmd[:4])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout, cwd=cwd)
    except FileNotFoundError:
        raise LabError(f"{what}: {cmd[0]} not found: {missing}") from None
    except subprocess.TimeoutExpired:
        raise LabError(f"{what} did not answer `{shown}` within "
                       f"{timeout:.0f} s") from None
    if r.returncode != 0:
        err = (r.stderr.strip() or r.stdout.strip()).splitlines()
        raise LabError(f"{what}: `{shown}` failed: "
                       f"{err[-1] if err else r.returncode}")
    return r.stdout
