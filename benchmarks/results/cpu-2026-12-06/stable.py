import re, sys
rows = {}
for t in sys.argv[2].split(","):
    for sc in sys.argv[1].split(","):
        n = {"get200": 40000, "get1000": 40000, "c4": 20000, "c1": 10000}[sc]
        c = {}
        for line in open("strace-%s-%s.txt" % (t, sc)):
            f = line.split()
            if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
                calls = int(f[3]); name = f[-1]
                c[name] = c.get(name, 0) + calls
        tot = sum(c.values())
        g = lambda *ks: sum(c.get(k, 0) for k in ks) / n
        rows[(t, sc)] = dict(total=tot / n, read=g("read", "recvfrom"), write=g("writev", "sendmsg", "write"),
            epoll=g("epoll_wait", "epoll_pwait"), futex=g("futex"), sleep=g("nanosleep", "clock_nanosleep", "sched_yield"))
        r = rows[(t, sc)]
        print("%-10s %-8s total %.2f read %.2f write %.2f epoll %.3f futex %.3f sleep/yield %.3f" % (t, sc, r["total"], r["read"], r["write"], r["epoll"], r["futex"], r["sleep"]))
