import sys, json, statistics as S
sys.path.insert(0, ".")
from classify import main as cls
B = [("read(2)", ["syscall read"]),
     ("write(2)/writev/sendmsg (incl. loopback delivery)", ["syscall write/writev/sendmsg"]),
     ("epoll_wait", ["syscall epoll_wait"]),
     ("Go scheduler (schedule, park/ready, futex, usleep)", ["Go scheduler", "syscall futex", "syscall nanosleep/sched_yield"]),
     ("Go sysmon", ["Go scheduler: sysmon"]),
     ("Go syscall entry/exit", ["Go syscall entry/exit"]),
     ("hand-off (ants, parked queue, loopOut list, bell)", ["hand-off: ants/park queue", "hand-off: reply list (loopOut)", "syscall write: bell ring"]),
     ("cache", ["cache"]),
     ("protocol parse/execute/format", ["protocol parse/execute/format"]),
     ("event loop (gnet, reactor framing/run/writer; libevent)", ["gnet loop", "reactor (framing, run loop, writer)", "libevent loop"]),
     ("memcached code (stripped: parse+cache+reply)", ["memcached code (parse, cache, reply; stripped)"]),
     ("locks (sync, pthread)", ["mutexes (sync)"]),
     ("GC/alloc", ["Go GC/alloc"]),
     ("other (kernel irq, other syscalls, other user)", ["kernel other (irq, softirq, switches)", "syscall other", "other user"])]
main = json.load(open(sys.argv[1]))
scens = sys.argv[2].split(",")
targets = sys.argv[3].split(",")
for sc in scens:
    print("\n### %s" % sc)
    cols = {}
    for t in targets:
        cnt, tot = cls("perf-%s-%s.data" % (t, sc))
        us = S.median([r["cpu_us_req"] for r in main if r["target"] == t and r["scen"] == sc])
        cols[t] = (cnt, tot, us)
    print("| where the CPU goes (µs per request; share) | " + " | ".join(targets) + " |")
    print("|---|" + "---|" * len(targets))
    for name, keys in B:
        cells = []
        for t in targets:
            cnt, tot, us = cols[t]
            f = sum(cnt[k] for k in keys) / tot
            cells.append("%.2f (%.0f%%)" % (us * f, 100 * f) if f >= 0.0005 else "–")
        print("| %s | %s |" % (name, " | ".join(cells)))
    print("| **total** (median of 3 runs) | " + " | ".join("**%.2f**" % cols[t][2] for t in targets) + " |")
    print("| perf samples | " + " | ".join(str(cols[t][1]) for t in targets) + " |")
