import sys, re, subprocess, collections
SYS = [  # (pattern in any frame, category) checked for syscall samples
    (r"loopOut\)\.rearm", "write: bell ring"),
    (r"__x64_sys_writev|do_writev|__sys_sendmsg|__x64_sys_sendmsg|ksys_write|__x64_sys_write\b|unix\.writev|unix\.Writev|unix\.write\b|unix\.Write\b|__libc_sendmsg|sendmsg \(|writev \(", "write/writev/sendmsg"),
    (r"ksys_read|__x64_sys_read\b|__x64_sys_recvfrom|unix\.read\b|unix\.Read\b|\nread \(|^read \(", "read"),
    (r"epoll_wait|epoll_pwait|do_epoll|EpollWait|epollwait", "epoll_wait"),
    (r"__x64_sys_futex|do_futex|runtime\.futex", "futex"),
    (r"nanosleep|sched_yield|runtime\.usleep|runtime\.osyield", "nanosleep/sched_yield"),
    (r"__x64_sys_epoll_ctl|accept|close|getsockopt|fcntl|madvise|mmap|tgkill", "other syscalls"),
]
USER = [
    (r"runtime\.(sysmon)", "Go scheduler: sysmon"),
    (r"^runtime\.(gcBgMarkWorker|gcDrain|scanobject|markroot|bgsweep|bgscavenge|mallocgc|gcStart|greyobject|findObject)", "Go GC/alloc"),
    (r"^runtime\.(entersyscall|exitsyscall|reentersyscall|exitsyscallfast|exitsyscall0)", "Go syscall entry/exit"),
    (r"^runtime\.(schedule|findRunnable|park_m|goready|ready|wakep|startm|stopm|notesleep|notewakeup|futexsleep|futexwakeup|runqgrab|runqsteal|stealWork|mcall|gosched_m|goschedImpl|Gosched|checkTimers|netpoll|handoffp|acquirep|releasep|mPark|gopark|usleep|osyield|execute|resetspinning|injectglist|runqput|runqget|globrunqget|goexit0|gogo|mstart|ready|newproc|casgstatus|lock2|unlock2|systemstack|morestack|chansend|chanrecv|selectgo|send|recv|semacquire|semrelease|sync_runtime)", "Go scheduler"),
    (r"panjf2000/ants|\(\*gnetServer\)\.dispatch|runTasks|parkedQueue|\(\*gnetServer\)\.requeue|submitDrainer|runSliceSafely", "hand-off: ants/park queue"),
    (r"\(\*loopOut\)|listOnLoop|\(\*connWriter\)\.(add|list|queue)", "hand-off: reply list (loopOut)"),
    (r"tandemcache/tandem/cache|tinylfu|xxhash", "cache"),
    (r"tandemcache/tandem/protocol", "protocol parse/execute/format"),
    (r"panjf2000/gnet", "gnet loop"),
    (r"tandemcache/tandem/reactor", "reactor (framing, run loop, writer)"),
    (r"^sync\.", "mutexes (sync)"),
    # memcached (stripped): by object
    (r"\(/usr/lib/x86_64-linux-gnu/libevent", "libevent loop"),
    (r"pthread_mutex|pthread_cond|__lll_lock", "mutexes (sync)"),
    (r"\(/usr/bin/memcached\)", "memcached code (parse, cache, reply; stripped)"),
]
def classify(frames):
    text = [f for f in frames]
    if any("runtime.sysmon" in f for f in text):
        return "Go scheduler: sysmon"
    kern = any("[kernel.kallsyms]" in f for f in text)
    if kern:
        allf = "\n".join(text)
        pass
    allf = "\n".join(text)
    if True:
        if re.search(r"do_syscall_64|entry_SYSCALL|Syscall6|RawSyscall|^(read|__libc_sendmsg|epoll_wait|sendmsg) \(|runtime\.(futex|usleep|osyield|epollwait)", allf, re.M):
            for pat, cat in SYS:
                if re.search(pat, allf):
                    if cat == "write: bell ring" and not re.search(r"writev|write", allf):
                        continue
                    return "syscall " + cat
            return "syscall other"
        if "sysmon" in allf:
            return "Go scheduler: sysmon"
    for f in text:
        if "[kernel.kallsyms]" in f:
            continue
        sym = f
        for pat, cat in USER:
            if re.search(pat, sym):
                return cat
    if kern:
        return "kernel other (irq, softirq, switches)"
    return "other user"
def main(path):
    p = subprocess.Popen(["perf", "script", "-i", path, "-F", "comm,tid,sym,dso,ip"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    cnt = collections.Counter(); frames = []; tot = 0
    for line in p.stdout:
        line = line.rstrip("\n")
        if not line.strip():
            if frames:
                cnt[classify(frames)] += 1; tot += 1; frames = []
            continue
        if line.startswith((" ", "\t")):
            parts = line.strip().split(" ", 1)
            frames.append(parts[1] if len(parts) > 1 else parts[0])
        else:
            frames = []
    if frames: cnt[classify(frames)] += 1; tot += 1
    return cnt, tot
if __name__ == "__main__":
    for path in sys.argv[1:]:
        cnt, tot = main(path)
        print("==", path, tot)
        for k, v in cnt.most_common():
            print("  %6.1f%%  %s" % (100 * v / tot, k))
