"""Talk to a LAVA server through lavacli, LAVA's own command-line client.

Which server: `--uri` (http://user:token@host/RPC2) if given, else a
lavacli identity (`lavacli identities add ...`, stored in
~/.config/lavacli.yaml), "default" unless named.
"""
import json
import subprocess
from dataclasses import dataclass

from ..log import LabError

TIMEOUT_S = 120


@dataclass
class Server:
    uri: str = ""
    identity: str = "default"

    def base_url(self) -> str:
        """http(s)://host[:port] of the server, without credentials."""
        uri = self.uri
        if not uri:
            import yaml
            try:
                uri = yaml.safe_load(subprocess.run(
                    ["lavacli", "identities", "show", self.identity],
                    capture_output=True, text=True).stdout or "{}")["uri"]
            except (OSError, TypeError, KeyError, yaml.YAMLError):
                raise LabError(f"lavacli identity {self.identity!r} not "
                               f"found: add it with `lavacli identities "
                               f"add` or give --lava-uri") from None
        scheme, rest = uri.split("://", 1) if "://" in uri else ("http", uri)
        return f"{scheme}://{rest.rsplit('@', 1)[-1].split('/', 1)[0]}"

    def name(self) -> str:
        """The server, for people and run.json (never with a token)."""
        return self.base_url()

    def lavacli(self, *args, stdin: str = None) -> str:
        where = ["--uri", self.uri] if self.uri else ["-i", self.identity]
        try:
            r = subprocess.run(["lavacli", *where, *args], input=stdin,
                               capture_output=True, text=True,
                               timeout=TIMEOUT_S)
        except FileNotFoundError:
            raise LabError("lavacli not found: install Debian package "
                           "lavacli (`make deps RUNNER=lava`)") from None
        except subprocess.TimeoutExpired:
            raise LabError(f"LAVA server {self.name()} did not answer "
                           f"`lavacli {args[0]} {args[1]}` within "
                           f"{TIMEOUT_S} s") from None
        if r.returncode != 0:
            err = (r.stderr.strip() or r.stdout.strip()).splitlines()
            raise LabError(f"LAVA server {self.name()}: `lavacli "
                           f"{' '.join(args[:2])}` failed: "
                           f"{err[-1] if err else r.returncode}")
        return r.stdout

    def check(self) -> str:
        """The server's version; a clear error if it cannot be reached."""
        return self.lavacli("system", "version").strip()

    def submit(self, definition_file) -> int:
        out = self.lavacli("jobs", "submit", str(definition_file)).split()
        if not out or not out[0].isdigit():
            raise LabError(f"LAVA server {self.name()} returned no job id "
                           f"for {definition_file}: {' '.join(out)}")
        return int(out[0])

    def show(self, job: int) -> dict:
        """state (Submitted, Scheduling, Scheduled, Running, Canceling,
        Finished), health (Unknown, Complete, Incomplete, Canceled), ..."""
        return json.loads(self.lavacli("jobs", "show", "--json", str(job)))

    def log(self, job: int) -> list:
        """The job's log entries: {"dt", "lvl", "msg"} dicts."""
        import yaml     # python3-yaml, which lavacli depends on
        text = self.lavacli("jobs", "logs", "--raw", "--no-follow", str(job))
        try:
            return yaml.load(text, Loader=yaml.CSafeLoader) or []
        except yaml.YAMLError as e:
            raise LabError(f"LAVA job {job}: log is not YAML: {e}") from None

    def results(self, job: int) -> list:
        return json.loads(self.lavacli("results", "--json", str(job)))

    def cancel(self, job: int) -> None:
        self.lavacli("jobs", "cancel", str(job))

    def job_url(self, job: int) -> str:
        return f"{self.base_url()}/scheduler/job/{job}"
