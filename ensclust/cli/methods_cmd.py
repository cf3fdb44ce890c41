"""``ensclust methods``: list methods (built-in and plug-ins) with their parameters, defaults and sources."""

from __future__ import annotations

import importlib

import click

from ensclust.methods import get_method_class, method_source
from ensclust.methods.base import python_name

#: method name -> module of ensclust.methods defining it, so ``ensclust methods NAME`` imports one module
#: instead of all of them (tests/test_cli_failures.py checks the index against the registry).
METHOD_MODULES = {
    "acmk-fix": "acmk", "acmk-gf": "acmk", "acmk-km": "acmk", "acmk-sc": "acmk", "awec-h": "awec",
    "awec-s": "awec", "bce": "bce", "ceshl": "ceshl", "cspa": "cspa", "drec": "drec", "eac-al": "eac",
    "eac-cl": "eac", "eac-sl": "eac", "eccms": "eccms", "ecmc": "ecmc", "ecpcs-hc": "ecpcs", "ecpcs-mc": "ecpcs",
    "hbgf": "hbgf", "hgpa": "hgpa", "ina": "ina", "kc": "kc", "lwea": "lwea", "lwgp": "lwgp", "mcla": "mcla",
    "mec": "mec",
    "nmfc": "nmfc", "pta-al": "pta", "pta-cl": "pta", "pta-sl": "pta", "ptgp": "ptgp", "rce": "rce",
    "rcec": "rcec", "rsec-h": "rsec", "rsec-z": "rsec", "sc": "sc", "sccbg": "sccbg", "spce": "spce",
    "spce-fixw": "spce", "spce-w": "spce", "trce": "trce", "wcc": "wcc",
}


def find_method_class(name: str, where: str = ""):
    """The class of method ``name``, importing only its module when the index knows it (else the registry's
    full lookup, which also gives the did-you-mean error for an unknown name)."""
    from ensclust.methods.base import ConsensusMethod

    key = str(name).lower()
    module = METHOD_MODULES.get(key)
    if module is not None:
        mod = importlib.import_module(f"ensclust.methods.{module}")
        for value in vars(mod).values():
            if isinstance(value, type) and issubclass(value, ConsensusMethod) and value.name == key:
                return value

    return get_method_class(name, where=where)


@click.command("methods")
@click.argument("names", nargs=-1)
def methods_command(names):
    """List consensus methods, their parameters, defaults and sources.

    Without NAMES: the built-in methods and the installed plug-ins (entry points of the group
    ensclust.methods). Methods marked "accepts missing labels" take incomplete ensembles (NaN, or a value
    declared with --missing); the line "missing labels:" says how. A plug-in in a file or module is listed when named (path/to/file.py:Class,
    module:Class).

    \b
    Examples:
      ensclust methods
      ensclust methods lwea eccms
      ensclust methods my_methods.py:MyMethod
    """
    if names:
        classes = [find_method_class(n) for n in names]
    else:
        from ensclust.methods import list_methods

        classes = list(list_methods().values())
    for cls in classes:
        flags = []
        if cls.needs_features:
            flags.append("needs features")
        if cls.randomized:
            flags.append("randomised")
        if cls.accepts_missing:
            flags.append("accepts missing labels")
        source = method_source(cls)
        if source != "built-in":
            flags.append(f"plug-in: {source}")
        extra = f"  [{', '.join(flags)}]" if flags else ""
        click.echo(f"{cls.name}: {cls.summary or (cls.__doc__ or '').strip().splitlines()[0]}{extra}")
        if cls.accepts_missing:
            click.echo(f"    missing labels: {cls.missing_doc or 'accepted'}")
        elif cls.missing_doc:
            click.echo(f"    missing labels: refused ({cls.missing_doc})")
        for pname, p in cls.params.items():
            src = f"  (source: {p.source})" if p.source else ""
            shown = pname if python_name(pname) == pname else f"{pname} (Python: {python_name(pname)})"
            click.echo(f"    {shown}: {p.describe()}{(' - ' + p.doc) if p.doc else ''}{src}")


def add_commands(cli):
    cli.add_command(methods_command)
