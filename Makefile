# ensclust developer commands. Every target sets up the virtual environment first (make install).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# Data directory with the papers' .mat files (only needed by the paper configs and data tests).
ENSCLUST_DATA ?= $(abspath ../shared/datasets)
export ENSCLUST_DATA

.PHONY: install demo test test-all bench reproduce-all reproduce-quick lint clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

demo: install
	$(BIN)/ensclust run demo

test: install
	$(BIN)/pytest

test-all: install
	$(BIN)/pytest -m ""

bench: install
	$(BIN)/ensclust bench --out results/bench

# Every paper table (resumes from the committed results; see `ensclust reproduce all --tier full --dry-run`).
reproduce-all: install
	$(BIN)/ensclust reproduce all --tier full --quiet
	$(BIN)/ensclust figure ensemble-size awec_fig5_ensemble_size --sizes 10,20,30,40,50 --quiet
	$(BIN)/ensclust figure rcec-synthetic --quiet

# At least one table per paper computed from scratch into results/quick/, checked against the committed results.
# One BLAS thread per fit: the least CPU time on a shared machine, and the same bytes from run to run (the
# floating-point order, hence a few labels of unconverged fits, depends on the number of BLAS threads).
reproduce-quick: install
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \
		$(BIN)/ensclust reproduce all --tier quick --results results/quick --check-against results --quiet

lint: install
	$(BIN)/ruff check ensclust tests

clean:
	rm -rf $(VENV) results/cache .pytest_cache
