"""TRCE fits with the code before (TRCE_OLD=path to the old trce.py, dense n_micro^2 S-step) and after (blocks of
rows, sparse S) on the same members: labels, learned graph S, rho / alpha histories compared bit for bit, CPU time.
Usage: cmp_fit.py POOL.mat N_MEMBERS C GAMMA[,GAMMA...]"""
import hashlib, importlib.util, json, os, sys, time
import numpy as np
from scipy import sparse
from threadpoolctl import threadpool_limits
from ensclust.data.io import read_arrays
from ensclust.methods.trce import TRCE

spec = importlib.util.spec_from_file_location('trce_old', os.environ['TRCE_OLD'])
old = importlib.util.module_from_spec(spec)
spec.loader.exec_module(old)
pool = read_arrays(sys.argv[1])
members = np.asarray(pool['members'])[:, :int(sys.argv[2])].astype(np.int64)
c = int(sys.argv[3])
with threadpool_limits(1, user_api='blas'):
    for gamma in [float(g) for g in sys.argv[4].split(',')]:
        out = {}
        for name, cls in (('before', old.TRCE), ('after', TRCE)):
            est = cls(gamma=gamma)
            c0 = time.process_time()
            labels = est.fit_predict(members, c)
            cpu = time.process_time() - c0
            S = est.consensus_matrix_
            S = S.toarray() if sparse.issparse(S) else S
            out[name] = (labels, S, est.diagnostics_, cpu)
        (lb, Sb, db, tb), (la, Sa, da, ta) = out['before'], out['after']
        print(json.dumps(dict(pool=os.path.basename(sys.argv[1]), gamma=gamma, n_micro=da['n_micro'],
                              labels_equal=bool(np.array_equal(lb, la)), S_equal=bool(np.array_equal(Sb, Sa)),
                              S_maxdiff=float(np.abs(Sb - Sa).max()),
                              rho_equal=db['rho'] == da['rho'], alpha_equal=db['alpha'] == da['alpha'],
                              hash=hashlib.sha256(np.asarray(la, dtype=np.int64).tobytes()).hexdigest()[:12],
                              cpu_before=round(tb, 2), cpu_after=round(ta, 2))), flush=True)
