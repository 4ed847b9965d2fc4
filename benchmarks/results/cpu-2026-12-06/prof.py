#!/usr/bin/env python3
import os, sys, subprocess, time, signal, json, re
sys.argv = [sys.argv[0]] + sys.argv[1:]
exec(open("bench.py").read().split("def main():")[0])
names = os.environ.get("TARGETS", "memcached,pool,inline").split(",")
scens = os.environ.get("SCENS", "get200,get1000,c4").split(",")
T = targets(os.environ.get("TBIN", "/tmp/tperf"), os.environ.get("PROTO"))
env = dict(os.environ)
res = []
for name in names:
    port = free_port(); pr = start(T[name](port), port)
    try:
        mcbench(port, ["-c", "50", "-dist", "seq", "-ratio", "1:0", "-keys", "100000", "-n", "100000", "-size", "32"], "pre.json")
        for sc in scens:
            args = [a if a != DUR else "7s" for a in SCEN[sc]]
            mb = subprocess.Popen([MCB, "-addr", "127.0.0.1:%d" % port, "-progress=false", "-json", "prof-run.json"] + args,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.5)
            subprocess.run(["perf", "record", "-q", "-g", "-F", "2000", "-p", str(pr.pid), "-o", "perf-%s-%s.data" % (name, sc), "--", "sleep", "4"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            mb.wait()
            # strace phase: bounded request count
            n = {"get200": "40000", "get1000": "40000", "c4": "20000", "c1": "10000"}[sc]
            sargs = [a for a in SCEN[sc]]
            i = sargs.index("-duration"); sargs[i+1] = "0"; i = sargs.index("-n"); sargs[i+1] = n
            so = "strace-%s-%s.txt" % (name, sc)
            st = subprocess.Popen(["strace", "-c", "-f", "-p", str(pr.pid), "-o", so], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            req, el, r = mcbench(port, sargs, "strace-run.json")
            st.send_signal(signal.SIGINT); st.wait()
            res.append(dict(target=name, scen=sc, strace_req=req)); print(json.dumps(res[-1]), flush=True)
    finally:
        stop(pr)
json.dump(res, open(sys.argv[1], "w"))
