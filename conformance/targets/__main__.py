"""``python -m conformance.targets start|stop|provision|status|list [NAME]``.

``start NAME`` provisions if needed, starts the target detached (it keeps running after this command
returns), writes its pid file under the target's cache folder and prints the bootstrap address.
``stop NAME`` stops the instance recorded in that pid file. Exit status 0 on success, 2 on a target
error (one line on stderr), as the groupcheck CLI does for ``groupcheck target start|stop NAME``.
"""

from __future__ import annotations

import argparse
import sys

from conformance.targets.process import (
    DEFAULT_PROVISION_TIMEOUT_S,
    DEFAULT_START_TIMEOUT_S,
    DEFAULT_STOP_TIMEOUT_S,
)

from . import TARGETS, TargetError, get_target


def _topic(text: str) -> tuple[str, int]:
    name, _, parts = text.partition(":")
    if not name or (parts and not parts.isdigit()):
        raise argparse.ArgumentTypeError(f"want NAME[:PARTITIONS], got {text!r}")
    return name, int(parts or 1)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m conformance.targets", description="Real-target launchers.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("start", help="start a target detached; prints its bootstrap address")
    p.add_argument("name", choices=TARGETS)
    p.add_argument("--timeout", type=float, default=DEFAULT_START_TIMEOUT_S, help="start deadline (s)")
    p.add_argument(
        "--provision-timeout",
        type=float,
        default=DEFAULT_PROVISION_TIMEOUT_S,
        help="provisioning deadline (s)",
    )
    p.add_argument("--topic", type=_topic, action="append", default=[], help="NAME[:PARTITIONS] to create")
    p = sub.add_parser("stop", help="stop the detached instance of a target")
    p.add_argument("name", choices=TARGETS)
    p.add_argument("--timeout", type=float, default=DEFAULT_STOP_TIMEOUT_S)
    p = sub.add_parser("provision", help="fetch/build a target into its cache folder")
    p.add_argument("name", choices=TARGETS)
    p.add_argument("--timeout", type=float, default=DEFAULT_PROVISION_TIMEOUT_S)
    p = sub.add_parser("status", help="is a detached instance running? (prints its bootstrap)")
    p.add_argument("name", choices=TARGETS)
    sub.add_parser("list", help="list the targets with their pinned versions")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            for name in TARGETS:
                t = get_target(name)
                state = "provisioned" if t.is_provisioned() else "not provisioned"
                print(f"{name}\t{t.version()}\t{state}\t{t.cache_dir}")
            return 0
        target = get_target(args.name)
        if args.command == "provision":
            target.provision(args.timeout)
            print(f"{target.name} {target.version()} in {target.cache_dir}")
        elif args.command == "start":
            target.topics = dict(args.topic)
            target.provision(args.provision_timeout)
            print(target.start(args.timeout, detach=True), flush=True)
        elif args.command == "stop":
            target.stop(args.timeout)
        elif args.command == "status":
            bootstrap = target.detached_bootstrap()
            if bootstrap is None:
                print(f"{target.name}: not running")
                return 1
            print(bootstrap)
    except TargetError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
