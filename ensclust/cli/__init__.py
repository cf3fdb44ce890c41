"""The ``ensclust`` command line.

Each module in this package adds its commands through ``add_commands(cli)``; they are discovered
automatically. User errors (:class:`~ensclust.errors.UserError`, click usage errors) print one line on
stderr and exit with code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

from ensclust import __version__
from ensclust.errors import UserError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, prog_name="ensclust")
def cli():
    """ensclust: run, compare and reproduce ensemble (consensus) clustering methods.

    \b
    Examples:
      ensclust methods
      ensclust run demo
      ensclust sweep --method spce --param theta=0:0.9:0.1 --dataset iris
      ensclust data list --data-dir ../shared/datasets
    """


def _load_commands() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        add = getattr(module, "add_commands", None)
        if add is not None:
            add(cli)


_load_commands()


def main(argv=None) -> None:
    """Console-script entry point with the one-line error policy."""
    try:
        cli.main(args=argv, prog_name="ensclust", standalone_mode=False)
    except UserError as exc:
        click.echo(f"ensclust: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("ensclust: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        # Usage errors (unknown option, missing argument): one line plus the hint click gives.
        msg = exc.format_message()
        ctx = getattr(exc, "ctx", None)
        hint = f" (try '{ctx.command_path} --help')" if ctx is not None else ""
        click.echo(f"ensclust: error: {msg}{hint}", err=True)
        sys.exit(exc.exit_code if exc.exit_code else 2)
    except KeyboardInterrupt:
        click.echo("ensclust: interrupted; finished cells are saved, rerun the same command to resume", err=True)
        sys.exit(130)
