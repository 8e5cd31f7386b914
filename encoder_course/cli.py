"""The ``encoder-course`` command: ``student`` regenerates learner notebooks, ``grade`` checks a class."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="encoder-course", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="print the versions and hardware the course sees")
    args = parser.parse_args(argv)
    if args.command == "info":
        from .utils import environment

        for key, value in environment().items():
            sys.stdout.write(f"{key:12s} {value}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
