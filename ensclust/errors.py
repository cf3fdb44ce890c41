"""User-facing errors.

Anything the user can fix (a bad file, a wrong key, an unknown method) raises :class:`UserError`.
The CLI turns it into one line on stderr and exit code 2; programming errors keep their traceback.
Exit codes of the CLI: 0 success, 2 user error, 3 some cells of a run failed (:class:`CellsFailed`; the
tables are still written), 130 interrupted (Ctrl-C or SIGTERM).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserError(Exception):
    """An error caused by user input; its message is one line that says what to fix."""


class CellsFailed(Exception):
    """A run finished, its tables are written, but some cells failed (CLI exit code 3)."""

    exit_code = 3


class Interrupted(Exception):
    """A run was interrupted; the message says what is kept and how to resume (CLI exit code 130)."""

    exit_code = 130


class EnsclustWarning(UserWarning):
    """A warning for the user; the CLI prints it as one line ``ensclust: warning: ...``."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""`` when nothing is close."""
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else ""


def unknown_name_error(kind: str, name: str, choices: Iterable[str], where: str = "") -> UserError:
    """Build the standard 'unknown X' error with a did-you-mean hint and the valid choices."""
    choices = sorted(choices)
    prefix = f"{where}: " if where else ""
    listing = ", ".join(choices) if len(choices) <= 40 else ", ".join(choices[:40]) + ", ..."
    return UserError(f"{prefix}unknown {kind} '{name}'{did_you_mean(name, choices)}; valid: {listing}")
