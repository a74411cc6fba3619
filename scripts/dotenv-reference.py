#!/usr/bin/env python3
"""Prints python-dotenv's reading of a .env file as JSON: the reference hadeploy's parser is tested
against.

    dotenv-reference.py PATH            {"KEY": "value", "NO_VALUE": null, ...}
    dotenv-reference.py --lines PATH    {"values": {...}, "unparsed_lines": [3, 7]}

Interpolation (${VAR}, ${VAR:-default}) sees this process's environment, so callers run it under
`env -i` with exactly the variables they also give hadeploy's parser.
"""
import json
import logging
import sys

import dotenv


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        # "python-dotenv could not parse statement starting at line %s"
        if record.args:
            self.lines.append(int(record.args[0]))


def main(argv):
    with_lines = len(argv) == 3 and argv[1] == "--lines"
    if len(argv) != 2 and not with_lines:
        print(__doc__.strip(), file=sys.stderr)
        return 64
    collector = _Collect()
    logger = logging.getLogger("dotenv.main")
    logger.addHandler(collector)
    logger.propagate = False
    values = dotenv.dotenv_values(argv[-1])
    if with_lines:
        result = {"values": values, "unparsed_lines": collector.lines}
    else:
        result = values
    # ASCII-only JSON: the exact code points survive any locale.
    json.dump(result, sys.stdout, ensure_ascii=True, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
