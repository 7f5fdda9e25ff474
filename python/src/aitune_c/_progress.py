"""Progress: the library's log lines into `logging`, and a tqdm bar when
tqdm is installed.

The tuner writes one line per step ("[native] candidate 2 of 5 (0.4 s)",
"selected native (batch 4) in 3.1 s"; docs/tuning.md) through the C API's
log callback, on the thread that called tune (the extension takes the GIL
for each line). Lines go to the "aitune_c" logger: INFO for progress (DEBUG
with quiet=True), WARNING for warnings.
"""

from __future__ import annotations

import logging
import re

logger = logging.getLogger("aitune_c")

_CANDIDATE = re.compile(r"candidate (\d+) of (\d+)")


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except Exception:  # not installed, or broken: the log lines are enough
        return None
    return tqdm


class Progress:
    """A log callable for _core.Module.tune (is_warning, line), with a bar
    over the candidates when tqdm is there and not quiet."""

    def __init__(self, quiet: bool = False, desc: str = "aitune"):
        self.quiet = quiet
        self.desc = desc
        self.bar = None
        self._tqdm = None if quiet else _tqdm()

    def __call__(self, is_warning: bool, line: str) -> None:
        if is_warning:
            logger.warning("%s", line)
        else:
            logger.log(logging.DEBUG if self.quiet else logging.INFO, "%s", line)
        if self._tqdm is None:
            return
        m = _CANDIDATE.search(line)
        if m:
            done, total = int(m.group(1)) - 1, int(m.group(2))
            if self.bar is None:
                self.bar = self._tqdm(total=total, desc=self.desc, unit="candidate", leave=False)
            self.bar.n = done
            self.bar.set_postfix_str(line.split("]")[0].lstrip("["), refresh=True)
        elif line.startswith("selected ") and self.bar is not None:
            self.bar.n = self.bar.total
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def log_line(is_warning: bool, line: str) -> None:
    """For run-time and load-time lines (inputs outside the tuned range, a
    folder tuned on another machine)."""
    if is_warning:
        logger.warning("%s", line)
    else:
        logger.info("%s", line)
