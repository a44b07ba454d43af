#!/usr/bin/env python3
"""Samples a running process's threads and prints, every 2 s, by thread-name group (rayon pools,
synth-N, prove-N, ...): the user and system clock ticks spent, how many threads run, and their
voluntary context switches; the host's paging counters (/proc/vmstat) over the same interval; and,
for the groups that used the CPU, what their sleeping threads wait in (system call, the futex word's
address for a futex, wait channel, the top frames of the kernel stack where /proc lets us read it).
A profiler for the device machine, which has no perf, gdb or strace. The process's memory map at
the latest busy report is kept in OUTFILE.maps, so that futex addresses can be placed afterwards
(against the unstripped binary: `nm -C`, addresses less the binary's load address).
Usage: threadsample.py PID OUTFILE (ends when the process does)."""
import os, sys, time, re, collections

# x86_64 system call numbers worth naming; others print as numbers
SYSCALLS = {0: 'read', 1: 'write', 7: 'poll', 9: 'mmap', 10: 'mprotect', 11: 'munmap', 12: 'brk',
            16: 'ioctl', 24: 'sched_yield', 25: 'mremap', 28: 'madvise', 35: 'nanosleep', 202: 'futex',
            230: 'clock_nanosleep', 232: 'epoll_wait', 281: 'epoll_pwait'}
VMSTAT = ('pgfault', 'thp_fault_alloc', 'thp_fault_fallback', 'compact_stall', 'numa_hint_faults',
          'numa_pages_migrated', 'pgmigrate_success', 'nr_tlb_remote_flush', 'pgscan_direct', 'pgsteal_direct')
REPORT, SAMPLE = 2.0, 0.2


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


def parse(stat):
    """A /proc stat line's thread-name group and the fields after its name (state first)."""
    return re.sub(r'-?\d+$', '', stat[stat.index('(') + 1:stat.rindex(')')]), stat[stat.rindex(')') + 2:].split()


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
    # (group, state, call) -> samples; (group, wait channel or stack) -> samples
    calls, waits = collections.Counter(), collections.Counter()
    end = time.time() + REPORT
    while time.time() < end:
        try:
            tids = os.listdir(f'/proc/{pid}/task')
        except OSError:
            break  # the process ended
        for tid in tids:
            base = f'/proc/{pid}/task/{tid}'
            try:
                g, f = parse(read(f'{base}/stat'))
                fields = read(f'{base}/syscall').split()
            except OSError:
                continue  # the thread ended
            state, nr = f[0], fields[0]
            if nr == 'running':
                call = 'running'
            elif nr == '-1':
                call = 'in-kernel(fault?)'
            else:
                call = SYSCALLS.get(int(nr), nr)
                if call == 'futex':
                    call = f'futex({fields[1]},op={int(fields[2], 16)})'
            calls[(g, state, call)] += 1
            if state != 'R':
                try:
                    frames = [l.split()[-1].split('+')[0] for l in read(f'{base}/stack').splitlines()[:5]]
                    waits[(g, '<'.join(frames))] += 1
                except (OSError, IndexError):  # no kernel stack to read: the wait channel
                    try:
                        waits[(g, read(f'{base}/wchan').strip())] += 1
                    except OSError:
                        pass
        time.sleep(SAMPLE)
    groups = collections.defaultdict(lambda: [0, 0, 0, 0, 0])  # user, system ticks, running, threads, switches
    cur = {}
    try:
        tids = os.listdir(f'/proc/{pid}/task')
    except OSError:
        break
    for tid in tids:
        try:
            g, f = parse(read(f'/proc/{pid}/task/{tid}/stat'))
            vcs = switches(f'/proc/{pid}/task/{tid}')
        except OSError:
            continue
        st, ut, stt = f[0], int(f[11]), int(f[12])
        cur[tid] = (ut, stt, vcs)
        pu, ps, pv = prev.get(tid, (ut, stt, vcs))
        a = groups[g]
        a[0] += ut - pu; a[1] += stt - ps; a[2] += st == 'R'; a[3] += 1; a[4] += vcs - pv
    prev = cur
    busy = {g for g, a in groups.items() if a[0] + a[1] > 20}
    maps = 0
    if busy:  # the latest busy report's map: futex words in memory mapped after the first are placed too
        try:
            m = read(f'/proc/{pid}/maps')
            maps = m.count('\n')
            if m:  # empty once the process is exiting: keep the last full one
                open(sys.argv[2] + '.maps', 'w').write(m)
        except OSError:
            pass
    vm = vmstat()
    out.write(f'{time.time() - t0:6.1f}s ' + ' | '.join(
        f'{g}: u{a[0]} s{a[1]} R{a[2]}/{a[3]} cs{a[4]}' for g, a in sorted(groups.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
        if a[0] + a[1] > 0) + '\n')
    out.write(f'   counts: maps {maps} ' + ' '.join(f'{k}+{vm[k] - prev_vm.get(k, 0)}' for k in VMSTAT if k in vm and vm[k] != prev_vm.get(k, 0)) + '\n')
    for g in sorted(busy):
        out.write(f'   {g} in: ' + ', '.join([f'{st}/{c}:{n}' for (gg, st, c), n in calls.most_common() if gg == g][:8]) + '\n')
        out.write(f'   {g} waits: ' + ', '.join([f'{w}:{n}' for (gg, w), n in waits.most_common() if gg == g][:5]) + '\n')
    out.flush()
    prev_vm = vm
