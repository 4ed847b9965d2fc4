#!/usr/bin/env python3
"""Per-request server CPU and context switches: alternating targets, reps, medians."""
import json, os, signal, socket, subprocess, sys, time, glob, statistics, re

MCB = "/tmp/mcbench"
HZ = os.sysconf("SC_CLK_TCK")

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def targets(tbin, proto):
    t = {
        "memcached": lambda p: ["/usr/bin/memcached", "-t", "2", "-U", "0", "-p", str(p), "-l", "127.0.0.1", "-m", "1024", "-c", "4096", "-u", "root"],
        "memcached-b": lambda p: ["/usr/bin/memcached", "-t", "2", "-U", "0", "-p", str(p), "-l", "127.0.0.1", "-m", "1024", "-c", "4096", "-u", "root"],
        "pool": lambda p: [tbin, "-t", "2", "--mode", "pool", "-p", str(p), "-l", "127.0.0.1", "-m", "1024", "-c", "4096"],
        "inline": lambda p: [tbin, "-t", "2", "--mode", "inline", "-p", str(p), "-l", "127.0.0.1", "-m", "1024", "-c", "4096"],
    }
    t["pool-gmp3"] = lambda p: ["env", "GOMAXPROCS=3", tbin, "-t", "2", "--mode", "pool", "-p", str(p), "-l", "127.0.0.1", "-m", "1024", "-c", "4096"]
    t["goroutine"] = lambda p: [tbin, "-t", "2", "--mode", "goroutine", "-p", str(p), "-l", "127.0.0.1", "-m", "1024", "-c", "4096"]
    if proto:
        t["pool-proto-s"] = lambda p: ["env", "TANDEM_CHEAP_SETS=1", proto, "-t", "2", "--mode", "pool", "-p", str(p), "-l", "127.0.0.1", "-m", "1024", "-c", "4096"]
        t["pool-proto"] = lambda p: [proto, "-t", "2", "--mode", "pool", "-p", str(p), "-l", "127.0.0.1", "-m", "1024", "-c", "4096"]
    return t

def start(cmd, port):
    pr = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.sendall(b"version\r\n"); 
            if s.recv(100).startswith(b"VERSION"):
                s.close(); return pr
        except OSError:
            time.sleep(0.05)
    pr.kill(); raise SystemExit("no start: %s" % cmd)

def stop(pr):
    pr.send_signal(signal.SIGTERM)
    try: pr.wait(5)
    except subprocess.TimeoutExpired: pr.kill(); pr.wait()

def cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / HZ  # utime stime (fields 14,15)

def ctx(pid):
    v = n = 0
    for st in glob.glob("/proc/%d/task/*/status" % pid):
        try:
            for line in open(st):
                if line.startswith("voluntary_ctxt_switches"): v += int(line.split()[1])
                elif line.startswith("nonvoluntary_ctxt_switches"): n += int(line.split()[1])
        except OSError: pass
    return v, n

def mcbench(port, args, out):
    subprocess.run([MCB, "-addr", "127.0.0.1:%d" % port, "-progress=false", "-json", out] + args,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = json.load(open(out))
    return r["requests"], r["elapsed_sec"], r

DUR = os.environ.get("DUR", "5s")
SCEN = {
    "get200": ["-c", "200", "-d", "1", "-keys", "100000", "-ratio", "1:10", "-size", "32", "-duration", DUR, "-n", "0"],
    "get1000": ["-c", "1000", "-d", "1", "-keys", "100000", "-ratio", "1:10", "-size", "32", "-duration", DUR, "-n", "0"],
    "c4": ["-c", "4", "-d", "1", "-keys", "100000", "-ratio", "1:10", "-size", "32", "-duration", DUR, "-n", "0"],
    "c1": ["-c", "1", "-d", "1", "-keys", "100000", "-ratio", "1:10", "-size", "32", "-duration", DUR, "-n", "0"],
}

def memcslap(port):
    t0 = time.time()
    p = subprocess.run(["memcslap", "--servers=127.0.0.1:%d" % port, "--concurrency=4", "--test=get", "--execute-number=40000"],
                       capture_output=True, text=True)
    m = re.search(r"Took\s+([\d.]+)\s+seconds", p.stdout)
    return float(m.group(1)) if m else time.time() - t0

def main():
    reps = int(os.environ.get("REPS", "3"))
    names = os.environ.get("TARGETS", "memcached,pool,inline,memcached-b").split(",")
    scens = os.environ.get("SCENS", "get200,get1000,c4").split(",")
    tbin = os.environ.get("TBIN", "/tmp/tperf"); proto = os.environ.get("PROTO")
    out = sys.argv[1]
    T = targets(tbin, proto)
    rows = []
    for rep in range(reps):
        order = names if rep % 2 == 0 else names[::-1]  # A B A B, reversed every other rep
        for name in order:
            port = free_port(); pr = start(T[name](port), port)
            try:
                mcbench(port, ["-c", "50", "-dist", "seq", "-ratio", "1:0", "-keys", "100000", "-n", "100000", "-size", "32"], "pre.json")
                for sc in scens:
                    c0, (v0, n0) = cpu(pr.pid), ctx(pr.pid)
                    req, el, r = mcbench(port, SCEN[sc], "run.json")
                    c1, (v1, n1) = cpu(pr.pid), ctx(pr.pid)
                    row = dict(rep=rep, target=name, scen=sc, req=req, sec=el, ops=req / el, cpu_s=c1 - c0,
                               cpu_us_req=(c1 - c0) / req * 1e6, vcs_req=(v1 - v0) / req, ivcs_req=(n1 - n0) / req,
                               p99=r["latency"]["get"]["p99_us"],
                               load=os.getloadavg()[0])
                    rows.append(row); print(json.dumps(row), flush=True)
                if os.environ.get("SLAP", "1") == "1":
                    t = memcslap(port)
                    row = dict(rep=rep, target=name, scen="memcslap", time=t, load=os.getloadavg()[0])
                    rows.append(row); print(json.dumps(row), flush=True)
            finally:
                stop(pr)
    json.dump(rows, open(out, "w"), indent=1)

main()
