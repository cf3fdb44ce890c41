#!/bin/sh
# Copies the pre-refactor SPCE (commit bd895f4) into /tmp/spce6/spce_old as a package of its own, so that the
# old and the new code run in one process (routes.py, ab.py). Run from the repository root.
set -e
mkdir -p /tmp/spce6/spce_old
for f in spce _spce_pairs _spce_spectrum; do git show bd895f4:ensclust/methods/$f.py > /tmp/spce6/spce_old/$f.py; done
touch /tmp/spce6/spce_old/__init__.py
cd /tmp/spce6/spce_old
sed -i 's/^from ensclust.methods import _spce_spectrum, register$/from spce_old import _spce_spectrum\ndef register(c): return c/; s/ensclust\.methods\._spce_/spce_old._spce_/g' spce.py
