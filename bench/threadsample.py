#!/usr/bin/env python3
"""Samples a running process's threads every 2 s and prints, by thread-name group (rayon pools,
synth-N, prove-N, ...), the user and system clock ticks spent since the last sample, how many
threads run, and where the sleeping ones wait (wchan): a profiler for the device machine, which
has no perf, gdb or strace. Usage: threadsample.py PID OUTFILE (ends when the process does)."""
import os, sys, time, re, collections
pid = sys.argv[1]; out = open(sys.argv[2], 'w')
prev = {}
t0 = time.time()
while os.path.exists(f'/proc/{pid}'):
    groups = collections.defaultdict(lambda: [0, 0, 0, 0])  # du, ds, running, n
    wch = collections.Counter()
    cur = {}
    try: tids = os.listdir(f'/proc/{pid}/task')
    except OSError: break  # the process ended
    for tid in tids:
        try:
            s = open(f'/proc/{pid}/task/{tid}/stat').read()
            comm = s[s.index('(')+1:s.rindex(')')]
            f = s[s.rindex(')')+2:].split()
            st, ut, stt = f[0], int(f[11]), int(f[12])
            w = open(f'/proc/{pid}/task/{tid}/wchan').read().strip()
        except OSError: continue  # the thread ended
        g = re.sub(r'-?\d+$', '', comm)
        cur[tid] = (ut, stt)
        pu, ps = prev.get(tid, (ut, stt))
        a = groups[g]; a[0] += ut - pu; a[1] += stt - ps; a[2] += st == 'R'; a[3] += 1
        if st != 'R': wch[(g, w)] += 1
    prev = cur
    line = f'{time.time()-t0:6.1f}s ' + ' | '.join(f'{g}: u{a[0]} s{a[1]} R{a[2]}/{a[3]}' for g, a in sorted(groups.items(), key=lambda kv: -(kv[1][0]+kv[1][1])) if a[0]+a[1] > 0)
    out.write(line + '\n')
    out.write('   wait: ' + ', '.join(f'{g}@{w}:{n}' for (g, w), n in wch.most_common(6)) + '\n')
    out.flush()
    time.sleep(2)
