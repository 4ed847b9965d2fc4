# per-rep ratios against memcached of the same rep (same file), medians and ranges over all files
import json, sys, statistics as S, collections
files = sys.argv[1].split(","); targets = sys.argv[2].split(","); scens = sys.argv[3].split(",")
R = collections.defaultdict(list)
for fi, f in enumerate(files):
    rows = json.load(open(f))
    idx = {(r["rep"], r["target"], r["scen"]): r for r in rows}
    for (rep, t, sc), r in idx.items():
        b = idx.get((rep, "memcached", sc))
        if not b or t == "memcached": continue
        if sc == "memcslap":
            R[(t, sc, "time")].append(r["time"] / b["time"]); continue
        R[(t, sc, "ops")].append(r["ops"] / b["ops"])
        R[(t, sc, "opc")].append((r["req"] / r["cpu_s"]) / (b["req"] / b["cpu_s"]))
        R[(t, sc, "cpu")].append(r["cpu_us_req"] / b["cpu_us_req"])
        R[(t, sc, "p99")].append(r["p99"] / b["p99"])
        R[(t, sc, "cs")].append((r["vcs_req"] + r["ivcs_req"]) / (b["vcs_req"] + b["ivcs_req"]))
def f(k):
    v = R.get(k)
    if not v: return "–"
    return "%.2fx (%.2f-%.2f, n=%d)" % (S.median(v), min(v), max(v), len(v))
for sc in scens:
    print("##", sc)
    for t in targets:
        if sc == "memcslap":
            print("  %-12s time %s" % (t, f((t, sc, "time"))))
        else:
            print("  %-12s ops %s | ops/CPU %s | CPU/req %s | p99 %s | cs/req %s" % (t, f((t, sc, "ops")), f((t, sc, "opc")), f((t, sc, "cpu")), f((t, sc, "p99")), f((t, sc, "cs"))))
