"""``ensclust methods``: list methods (built-in and plug-ins) with their parameters, defaults and sources."""

from __future__ import annotations

import click

from ensclust.methods import get_method_class, list_methods, method_source
from ensclust.methods.base import python_name


@click.command("methods")
@click.argument("names", nargs=-1)
def methods_command(names):
    """List consensus methods, their parameters, defaults and sources.

    Without NAMES: the built-in methods and the installed plug-ins (entry points of the group
    ensclust.methods). A plug-in in a file or module is listed when named (path/to/file.py:Class,
    module:Class).

    \b
    Examples:
      ensclust methods
      ensclust methods lwea eccms
      ensclust methods my_methods.py:MyMethod
    """
    classes = [get_method_class(n) for n in names] if names else list(list_methods().values())
    for cls in classes:
        flags = []
        if cls.needs_features:
            flags.append("needs features")
        if cls.randomized:
            flags.append("randomised")
        source = method_source(cls)
        if source != "built-in":
            flags.append(f"plug-in: {source}")
        extra = f"  [{', '.join(flags)}]" if flags else ""
        click.echo(f"{cls.name}: {cls.summary or (cls.__doc__ or '').strip().splitlines()[0]}{extra}")
        for pname, p in cls.params.items():
            src = f"  (source: {p.source})" if p.source else ""
            shown = pname if python_name(pname) == pname else f"{pname} (Python: {python_name(pname)})"
            click.echo(f"    {shown}: {p.describe()}{(' - ' + p.doc) if p.doc else ''}{src}")


def add_commands(cli):
    cli.add_command(methods_command)
