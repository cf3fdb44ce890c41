"""TRCE fit with each B-step solved by the old and the new solve_b_rows: bitwise equality and CPU time."""
import json, os, sys, time, importlib.util
import numpy as np
from threadpoolctl import threadpool_limits
import ensclust.methods.trce as trce
from ensclust.experiment.config import load_config
from ensclust.experiment.runner import prepare_dataset
from ensclust.methods import get_method
spec = importlib.util.spec_from_file_location('trce_old', os.environ.get('TRCE_OLD', '/tmp/trce_old.py'))
old = importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
new_fn = trce.solve_b_rows
tt = {'old': 0.0, 'new': 0.0, 'calls': 0, 'equal': 0}
def both(C, dist, rho, **kw):
    c0 = time.process_time(); r_old = old.solve_b_rows(C, dist, rho, **kw); c1 = time.process_time()
    r_new = new_fn(C, dist, rho, **kw); c2 = time.process_time()
    tt['old'] += c1 - c0; tt['new'] += c2 - c1; tt['calls'] += 1
    tt['equal'] += all(np.array_equal(a, b) for a, b in zip(r_old, r_new))
    return r_new
trce.solve_b_rows = both
cfg = load_config(sys.argv[1]); label = sys.argv[2]; params = json.loads(sys.argv[3])
ctx = prepare_dataset(cfg, label, cache_dir='/work/main/results/cache/pools')
members = ctx.members[:, ctx.draws[0]]
with threadpool_limits(1, user_api='blas'):
    labels = get_method('trce', **params).fit_predict(members, ctx.n_clusters, random_state=0)
print(label, params, tt)
