"""GUEST side, run by tests/qemu/guest_suite.sh: the ``zswap-host`` commands the host checks, from one
interpreter (each Python start-up imports the package, tens of seconds under TCG)::

    guest_cli.py OUT DEVICE

Each step invokes the CLI's ``main`` (click's runner, as a user's command line would), writes each
command's stdout to its file in OUT and its stderr (and a traceback, if any) to ``OUT/NAME.log``, and
prints ``STEP NAME rc=N`` like guest_suite.sh's other steps (N: the worst exit code of its commands).
Run after the guest pytest session: the last step resets the namespace for the bench.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

from click.testing import CliRunner

from zswap_host.cli import main as cli


def steps(device: str) -> list[tuple[str, list[tuple[list[str], str]]]]:
    """(step name, [(argv, stdout file)]) in the order run."""
    return [("devices", [(["devices", "--json"], "devices.json")]),            # libnvme's view, as JSON
            ("engine", [(["info", device, "--json"], "info.json"), (["info", device], "info.txt")]),
            ("reset", [(["reset", device, "--all", "--yes"], "reset.out")])]


def run(out: str, device: str) -> int:
    worst = 0
    for name, commands in steps(device):
        t0, rc, log = time.monotonic(), 0, []
        for argv, path in commands:
            r = CliRunner().invoke(cli, argv)
            with open(os.path.join(out, path), "w") as f:
                f.write(r.stdout)
            log.append(f"$ zswap-host {' '.join(argv)}: exit {r.exit_code}\n{r.stderr}")
            if r.exception is not None and not isinstance(r.exception, SystemExit):
                log.append("".join(traceback.format_exception(*r.exc_info)))
            rc = max(rc, r.exit_code)
        with open(os.path.join(out, f"{name}.log"), "w") as f:
            f.write("\n".join(log))
        print(f"STEP {name} rc={rc} s={time.monotonic() - t0:.1f}", flush=True)
        print("\n".join(log)[-2000:], flush=True)
        worst = max(worst, rc)
    return worst


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], sys.argv[2]))
