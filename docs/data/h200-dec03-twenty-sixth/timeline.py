"""Summarise the timeline probe's CSVs (probe-timeline.patch: one row per
block of each module's last launch, %globaltimer in ns, several replays).

    python3 timeline.py tl_pdl.csv [more.csv ...]

Per kernel, in launch order, medians over the replays of: gap (the kernel
before's last block exit to this one's first wait return), w->staged (the
first wait return to x staged, median and last block), w->slot (to warp 0's
first ring slot landed; for the read: its loads done), w->exit (median and
last block exit) and the exit spread (last exit less the 10th percentile).
"""
import csv, sys, statistics as st, collections
def q(v, p): v=sorted(v); return v[min(len(v)-1,int(p*(len(v)-1)+0.5))]
for path in sys.argv[1:]:
    recs = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in csv.DictReader(open(path)):
        rep = int(r.get('rep', 0))
        recs[rep][r['kernel']].append({k:int(v) for k,v in r.items() if k not in ('kernel','rep')})
    per = collections.defaultdict(lambda: collections.defaultdict(list))  # kernel -> metric -> [per rep]
    orders = []
    for rep, ks in recs.items():
        t0 = min(b['entry'] for bl in ks.values() for b in bl)
        order = sorted(ks, key=lambda k: min(b['entry'] for b in ks[k]))
        orders.append(order)
        prev_exit = None
        for k in order:
            bl = ks[k]
            f = lambda key: [(b[key]-t0)/1000 for b in bl if b[key]]
            w, sg, sl, ex = f('waited'), f('staged'), f('slot'), f('exit')
            m = per[k]
            m['wait'].append(min(w))
            m['gap'].append(min(w) - prev_exit if prev_exit is not None else float('nan'))
            if sg: m['w->staged'].append(q(sg,.5) - min(w)); m['w->staged max'].append(max(sg) - min(w))
            if sl: m['w->slot'].append(q(sl,.5) - min(w))
            m['w->exit med'].append(q(ex,.5) - min(w)); m['w->exit max'].append(max(ex) - min(w))
            m['exit spread'].append(max(ex) - q(ex,.1))
            prev_exit = max(ex)
    print(f"== {path} ({len(recs)} replays; medians over replays, µs)")
    cols = ['gap','w->staged','w->staged max','w->slot','w->exit med','w->exit max','exit spread']
    print(f"{'kernel':42s} " + " ".join(f"{c:>13s}" for c in cols))
    for k in orders[0]:
        m = per[k]
        print(f"{k[:42]:42s} " + " ".join(f"{st.median(m[c]):13.2f}" if m[c] and not all(x!=x for x in m[c]) else f"{'-':>13s}" for c in cols))
