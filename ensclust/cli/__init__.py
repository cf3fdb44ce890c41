"""The ``ensclust`` command line.

Each module in this package adds its commands through ``add_commands(cli)``; they are discovered
automatically. The modules named in :data:`COMMAND_INDEX` are imported only when their command runs (so
``ensclust --help`` does not load NumPy, SciPy and every method); a module not in the index is imported at
the first command lookup. User errors (:class:`~ensclust.errors.UserError`, click usage errors) print one
line on stderr and exit with code 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings

import click

from ensclust import __version__
from ensclust.errors import CellsFailed, EnsclustWarning, Interrupted, UserError

#: command -> (module of this package defining it, the summary ``ensclust --help`` shows). The summaries
#: equal the commands' own (checked by tests/test_cli_failures.py), so the listing needs no import.
COMMAND_INDEX = {
    "bench": ("bench_cmd", "Time every benchmark entry (benchmarks/*.yaml), each in a fresh subprocess."),
    "compare": ("compare_cmd", "Compare the results in RESULTS_DIR with the numbers a paper prints."),
    "consensus": ("consensus_cmd", "Run one consensus method on a label matrix and write one label per line."),
    "data": ("data_cmd", "Datasets: list the registry and inspect a dataset."),
    "figure": ("figure_cmd", "Run a paper figure's experiment and write its table and PNG."),
    "methods": ("methods_cmd", "List consensus methods, their parameters, defaults and sources."),
    "paper": ("paper_cmd", "Paper-specific tables and figures built from finished results (see each command's --help)."),
    "pool": ("pool_cmd", "Pools of base clusterings: build (cached), show, import."),
    "reproduce": ("reproduce_cmd", "Reproduce a paper's tables: run their configs, lay them out as printed, write the scorecard."),
    "report": ("run_cmd", "Rebuild the tables of RESULTS_DIR from its cells.csv (one table per metric)."),
    "run": ("run_cmd", "Run an experiment described in a YAML CONFIG and write its tables."),
    "summary": ("summary_cmd", "Write an index of every experiment under ROOT with its comparison summary lines."),
    "sweep": ("sweep_cmd", "Sweep one parameter of a method and plot metric vs parameter."),
}


class _LazyGroup(click.Group):
    """A group that imports a command's module when the command is looked up, not when listed."""

    _loaded: set

    def _import(self, module: str) -> None:
        if module in self._loaded:
            return
        self._loaded.add(module)
        add = getattr(importlib.import_module(f"{__name__}.{module}"), "add_commands", None)
        if add is not None:
            add(self)

    def _import_unindexed(self) -> None:
        indexed = {module for module, _ in COMMAND_INDEX.values()}
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
            if not info.name.startswith("_") and info.name not in indexed:
                self._import(info.name)

    def list_commands(self, ctx):
        self._import_unindexed()
        return sorted(set(self.commands) | set(COMMAND_INDEX))

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMAND_INDEX:
            self._import(COMMAND_INDEX[name][0])
        if name not in self.commands:  # a command missing from the index (or a typo): look everywhere
            for module, _ in COMMAND_INDEX.values():
                self._import(module)
            self._import_unindexed()
        return self.commands.get(name)

    def format_commands(self, ctx, formatter):
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            # an unloaded command is shortened like a loaded one: through a stand-in with its summary
            cmd = self.commands.get(name) or click.Command(name, help=COMMAND_INDEX[name][1])
            if not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
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


cli._loaded = set()


def load_all_commands() -> None:
    """Import every command module (tests; the listing itself does not need it)."""
    cli.get_command(None, "")


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """One line ``ensclust: warning: ...`` for the warnings meant for the user; others as Python prints them."""
    if issubclass(category, EnsclustWarning):
        click.echo(f"ensclust: warning: {message}", err=True)
    else:
        _default(message, category, filename, lineno, file, line)


def main(argv=None) -> None:
    """Console-script entry point with the one-line error policy and the exit codes of ensclust.errors."""
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        code = cli.main(args=argv, prog_name="ensclust", standalone_mode=False)
    except UserError as exc:
        click.echo(f"ensclust: error: {exc}", err=True)
        sys.exit(2)
    except CellsFailed as exc:
        click.echo(f"ensclust: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except Interrupted as exc:
        click.echo(f"ensclust: interrupted: {exc}", err=True)
        sys.exit(exc.exit_code)
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
        click.echo("ensclust: interrupted", err=True)
        sys.exit(130)
    finally:
        warnings.showwarning = previous
    if isinstance(code, int) and code:
        sys.exit(code)  # ctx.exit(N) inside a command
