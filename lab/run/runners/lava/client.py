"""Talk to a LAVA server through lavacli, LAVA's own command-line client.

Which server: `--uri` (http://user:token@host/RPC2) if given, else a
lavacli identity (`lavacli identities add ...`, stored in
~/.config/lavacli.yaml), "default" unless named.
"""
import functools
import json
from dataclasses import dataclass

from ....base.log import LabError
from .tool import tool

TIMEOUT_S = 120


def _lavacli(where: list, args: list, what: str) -> str:
    """lavacli's output; errors show the subcommand, never the
    credentials in `where`."""
    return tool(["lavacli", *where, *args], what,
                "install Debian package lavacli (`make deps RUNNER=lava`)",
                shown="lavacli " + " ".join(args[:3]), timeout=TIMEOUT_S)


@dataclass
class Server:
    uri: str = ""
    identity: str = "default"

    @functools.cached_property
    def url(self) -> str:
        """http(s)://host[:port] of the server, without credentials: how
        people and run.json name it."""
        uri = self.uri
        if not uri:
            import yaml     # python3-yaml, which lavacli depends on
            shown = _lavacli([], ["identities", "show", self.identity],
                             f"lavacli identity {self.identity!r} (add it "
                             f"with `lavacli identities add` or give "
                             f"--lava-uri)")
            try:
                uri = yaml.safe_load(shown)["uri"]
            except (TypeError, KeyError, yaml.YAMLError):
                raise LabError(f"lavacli identity {self.identity!r} has no "
                               f"uri") from None
        scheme, rest = uri.split("://", 1) if "://" in uri else ("http", uri)
        return f"{scheme}://{rest.rsplit('@', 1)[-1].split('/', 1)[0]}"

    def lavacli(self, *args) -> str:
        where = ["--uri", self.uri] if self.uri else ["-i", self.identity]
        return _lavacli(where, list(args), f"LAVA server {self.url}")

    def check(self) -> str:
        """The server's version; a clear error if it cannot be reached."""
        return self.lavacli("system", "version").strip()

    def submit(self, definition_file) -> int:
        out = self.lavacli("jobs", "submit", str(definition_file)).split()
        if not out or not out[0].isdigit():
            raise LabError(f"LAVA server {self.url} returned no job id "
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
            loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # speed
            return yaml.load(text, Loader=loader) or []
        except yaml.YAMLError as e:
            raise LabError(f"LAVA job {job}: log is not YAML: {e}") from None

    def results(self, job: int) -> list:
        return json.loads(self.lavacli("results", "--json", str(job)))

    def job_url(self, job: int) -> str:
        return f"{self.url}/scheduler/job/{job}"
