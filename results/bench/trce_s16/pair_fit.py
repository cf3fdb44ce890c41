"""TRCE on one ensemble: whole fits with the code before (TRCE_OLD=path to the old trce.py) and after, alternated
in one process, one BLAS thread; CPU time, peak RSS rise and labels hash of each fit.
Usage: pair_fit.py CONFIG DATASET PARAMS_JSON ROUNDS"""
import hashlib, importlib.util, json, os, resource, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
from ensclust.experiment.config import load_config
from ensclust.experiment.runner import prepare_dataset
from ensclust.methods.trce import TRCE

spec = importlib.util.spec_from_file_location('trce_old', os.environ['TRCE_OLD'])
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
cfg = load_config(sys.argv[1])
ctx = prepare_dataset(cfg, sys.argv[2], cache_dir='/work/main/results/cache/pools')
params, rounds = json.loads(sys.argv[3]), int(sys.argv[4])
members = ctx.members[:, ctx.draws[0]]
rows = []
with threadpool_limits(1, user_api='blas'):
    for r in range(rounds):
        for name, cls in (('before', old.TRCE), ('after', TRCE)):
            c0, w0 = time.process_time(), time.perf_counter()
            labels = cls(**params).fit_predict(members, ctx.n_clusters, random_state=0)
            c1, w1 = time.process_time(), time.perf_counter()
            h = hashlib.sha256(np.asarray(labels, dtype=np.int64).tobytes()).hexdigest()[:12]
            rows.append(dict(round=r, code=name, cpu_s=round(c1 - c0, 2), wall_s=round(w1 - w0, 2), hash=h))
            print(json.dumps(rows[-1]), flush=True)
print('peak RSS of the process (MB):', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
