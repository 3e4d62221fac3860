"""Command line: python3 -m lab <command> (see `python3 -m lab -h`)."""
import argparse
import sys

from . import build, variants
from .log import LabError


def cmd_build(args) -> int:
    chosen = variants.select(args.variants)
    for i, v in enumerate(chosen, 1):
        build.build(v, i, len(chosen), force=args.force)
    return 0


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m lab",
                                description="softirq-rt lab")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build variant kernels (cached)")
    b.add_argument("--variants", default="",
                   help="comma-separated names (default: all)")
    b.add_argument("--force", action="store_true",
                   help="rebuild even if the cache is up to date")
    b.set_defaults(func=cmd_build)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        return args.func(args)
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
