# usage: bash grid_time.sh SRC OUT   (SRC = the ensclust checkout to time, OUT = a scratch results folder)
# Runs grid.yaml (AWEC-S then AWEC-H, 2 data sets x 4 grid points x 4 runs = 64 cells) through the experiment
# runner with one BLAS thread; prints wall / user CPU / peak RSS of the whole run.
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$2" && mkdir -p "$2" && ln -sfn "$here/../../cache" "$2/cache"
export PYTHONPATH=$1 ENSCLUST_DATA=${ENSCLUST_DATA:-/work/shared/datasets} OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
/usr/bin/time -f "$1 wall %e s user %U s sys %S s maxrss %M kB" python -c "
from ensclust.experiment.config import load_config
from ensclust.experiment.runner import run_experiment
run_experiment(load_config('$here/grid.yaml'), results_root='$2', quiet=True, write_reports=False)
"
