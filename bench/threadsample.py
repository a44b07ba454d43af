#!/usr/bin/env python3
"""Samples a running process's threads and prints, by thread-name group (rayon pools, synth-N,
prove-N, ...), the user and system clock ticks spent since the last report, how many threads run,
where the others wait (wchan, and the system call they are in), the top frames of their kernel
stacks where /proc lets us read them, and the host's paging counters (/proc/vmstat) over the same
interval: a profiler for the device machine, which has no perf, gdb or strace.
Usage: threadsample.py PID OUTFILE (ends when the process does)."""
import os, sys, time, re, collections

# x86_64 system call numbers worth naming; others print as numbers
SYSCALLS = {0: 'read', 1: 'write', 7: 'poll', 9: 'mmap', 10: 'mprotect', 11: 'munmap', 12: 'brk',
            16: 'ioctl', 24: 'sched_yield', 25: 'mremap', 28: 'madvise', 35: 'nanosleep', 202: 'futex',
            230: 'clock_nanosleep', 232: 'epoll_wait', 281: 'epoll_pwait'}
VMSTAT = ('pgfault', 'thp_fault_alloc', 'thp_fault_fallback', 'compact_stall', 'numa_hint_faults',
          'numa_pages_migrated', 'pgmigrate_success', 'nr_tlb_remote_flush', 'pgscan_direct', 'pgsteal_direct')
REPORT, SAMPLE = 2.0, 0.25


def read(path):
    with open(path) as f:
        return f.read()


def vmstat():
    try:
        return {k: int(v) for k, v in (line.split() for line in read('/proc/vmstat').splitlines()) if k in VMSTAT}
    except OSError:
        return {}


def switches(base):
    """A thread's voluntary context switches so far."""
    for line in read(f'{base}/status').splitlines():
        if line.startswith('voluntary_ctxt_switches:'):
            return int(line.split(':')[1])
    return 0


pid = sys.argv[1]
out = open(sys.argv[2], 'w')
for knob in ('/sys/kernel/mm/transparent_hugepage/enabled', '/sys/kernel/mm/transparent_hugepage/defrag',
             '/proc/sys/kernel/numa_balancing'):
    try:
        out.write(f'{knob}: {read(knob).strip()}\n')
    except OSError as e:
        out.write(f'{knob}: {e}\n')
prev, prev_vm, t0 = {}, vmstat(), time.time()
while os.path.exists(f'/proc/{pid}'):
    wch, sysc, stacks = collections.Counter(), collections.Counter(), collections.Counter()
    end = time.time() + REPORT
    while time.time() < end:  # wait states, sampled SAMPLE apart
        try:
            tids = os.listdir(f'/proc/{pid}/task')
        except OSError:
            break  # the process ended
        for tid in tids:
            base = f'/proc/{pid}/task/{tid}'
            try:
                s = read(f'{base}/stat')
                comm = s[s.index('(') + 1:s.rindex(')')]
                g = re.sub(r'-?\d+$', '', comm)
                state = s[s.rindex(')') + 2:].split()[0]
                call = read(f'{base}/syscall').split()[0]
                w = read(f'{base}/wchan').strip()
            except OSError:
                continue  # the thread ended
            call = 'user' if call == 'running' else 'fault/kernel' if call == '-1' else SYSCALLS.get(int(call), call)
            sysc[(g, state, call)] += 1
            if state != 'R':
                wch[(g, w)] += 1
                try:
                    frames = [l.split()[-1].split('+')[0] for l in read(f'{base}/stack').splitlines()[:4]]
                    stacks[(g, '<'.join(frames))] += 1
                except (OSError, IndexError):
                    pass
        time.sleep(SAMPLE)
    groups = collections.defaultdict(lambda: [0, 0, 0, 0, 0])  # user ticks, system ticks, running, threads, voluntary switches
    cur = {}
    try:
        tids = os.listdir(f'/proc/{pid}/task')
    except OSError:
        break
    for tid in tids:
        try:
            s = read(f'/proc/{pid}/task/{tid}/stat')
            vcs = switches(f'/proc/{pid}/task/{tid}')
        except OSError:
            continue
        comm = s[s.index('(') + 1:s.rindex(')')]
        f = s[s.rindex(')') + 2:].split()
        st, ut, stt = f[0], int(f[11]), int(f[12])
        g = re.sub(r'-?\d+$', '', comm)
        cur[tid] = (ut, stt, vcs)
        pu, ps, pv = prev.get(tid, (ut, stt, vcs))
        a = groups[g]
        a[0] += ut - pu; a[1] += stt - ps; a[2] += st == 'R'; a[3] += 1; a[4] += vcs - pv
    prev = cur
    vm = vmstat()
    out.write(f'{time.time() - t0:6.1f}s ' + ' | '.join(
        f'{g}: u{a[0]} s{a[1]} R{a[2]}/{a[3]} cs{a[4]}' for g, a in sorted(groups.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
        if a[0] + a[1] > 0) + '\n')
    out.write('   counts: ' + ' '.join(f'{k}+{vm[k] - prev_vm.get(k, 0)}' for k in VMSTAT if k in vm and vm[k] != prev_vm.get(k, 0)) + '\n')
    out.write('   in: ' + ', '.join(f'{g}/{st}/{c}:{n}' for (g, st, c), n in sysc.most_common(8)) + '\n')
    out.write('   wait: ' + ', '.join(f'{g}@{w}:{n}' for (g, w), n in wch.most_common(6)) + '\n')
    if stacks:
        out.write('   stack: ' + ', '.join(f'{g}@{s}:{n}' for (g, s), n in stacks.most_common(4)) + '\n')
    out.flush()
    prev_vm = vm
