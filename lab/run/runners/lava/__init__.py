"""The matrix as LAVA jobs (runner.py), their definitions (jobs.py), the
server (client.py), a job log unpacked into a run folder (collect.py),
and a LAVA instance on this machine (local.py)."""
from .runner import Lava

HELP = "submit every run as a LAVA job (lab/docs/lava.md)"


def add_arguments(group) -> None:
    group.add_argument("--lava-uri", default="",
                       help="http://user:token@host/RPC2 (default: the "
                       "lavacli identity)")
    group.add_argument("--lava-identity", default="default",
                       help="lavacli identity (~/.config/lavacli.yaml)")
    group.add_argument("--lava-template", default="qemu",
                       help="job template: qemu, x86-ipxe or a .yaml file")
    group.add_argument("--lava-device-type", default="x86",
                       help="device type for real-machine templates")
    group.add_argument("--lava-artifacts", default="",
                       help="folder for the files jobs deploy (default: "
                       "build/lava-artifacts)")
    group.add_argument("--lava-artifacts-url", default="",
                       help="URL the LAVA workers fetch that folder by "
                       "(default: file://<folder>, for a worker on this "
                       "host)")
    group.add_argument("--lava-qemu", default="auto",
                       choices=("auto", "lab", "debian"),
                       help="the QEMU the workers have: lab (the lab's "
                       "package, `make qemu-deb`), debian, or auto (a "
                       "server on this machine: the installed one; "
                       "another: debian)")


def make(args):
    return Lava(args.lava_uri, args.lava_identity, args.lava_template,
                args.lava_device_type, args.lava_artifacts,
                args.lava_artifacts_url, args.lava_qemu)
