import json, collections
runs = {"run1": "results/bench/spce_s6/routes_run1.jsonl", "run2": "results/bench/spce_s6/routes_run2.jsonl", "run3": "results/bench/spce_s6/routes_run3.jsonl"}
rows = collections.defaultdict(dict)
base = {}
for run, path in runs.items():
    nones = collections.defaultdict(list)
    recs = [json.loads(l) for l in open(path) if l.startswith("{")]
    for r in recs:
        if r["toggle"] == "none":
            nones[r["entry"]].append(r)
    for r in recs:
        e = r["entry"]
        if r["toggle"] == "none" or e not in nones:
            continue
        b = sum(x["cpu"] for x in nones[e]) / len(nones[e])
        same = all(x["hash"] == r["hash"] for x in nones[e])
        rows[r["toggle"]].setdefault(e, []).append((run, r["cpu"] / b, same))
for t, es in rows.items():
    cells = []
    for e, vals in es.items():
        for run, ratio, same in vals:
            cells.append(f"{e.replace('eccms_','')} {ratio:.2f}{'' if same else ' HASH!'}")
    best = max(v[1] for vals in es.values() for v in vals)
    print(f"{t:16s} max {best:.2f} | " + "; ".join(cells))
