"""Per kernel of a timeline CSV: on SMs holding two blocks, the first- and
second-entered block's stamps (µs after the kernel's first wait return),
medians over blocks and replays; "1/1" is a block alone on its SM.

    python3 pairs.py tl_pdl.csv [more.csv ...]

staged and exit are stamps 2 and 5 of every timeline build. Stamp 3
(`s3`) is warp 0's first ring slot landed (probe-timeline.patch of the
twenty-sixth lease, probe-timeline-xland.patch) or warp 0's first copies
issued (probe-timeline-issue.patch); stamp 4 (`s4`) is the last warp's
release (probe-timeline.patch) or thread 0's first x load landed (the
other two)."""
import csv, sys, collections, statistics as st
for path in sys.argv[1:]:
    by = collections.defaultdict(list)
    for r in csv.DictReader(open(path)):
        by[(int(r['rep']), r['kernel'])].append({k: (int(v) if k != 'kernel' else v) for k, v in r.items()})
    agg = collections.defaultdict(lambda: collections.defaultdict(list))
    for (rep, k), bl in by.items():
        w0 = min(b['waited'] for b in bl)
        persm = collections.defaultdict(list)
        for b in bl: persm[b['sm']].append(b)
        for v in persm.values():
            v.sort(key=lambda b: b['entry'])
            for i, b in enumerate(v):
                tag = f"{len(v)}/{i+1}"
                for col, name in (('staged', 'staged'), ('exit', 'exit'), ('slot', 's3'), ('rel', 's4')):
                    if b.get(col): agg[k][f"{tag} {name}"].append((b[col] - w0) / 1000)
    print(f"== {path}")
    for k, m in agg.items():
        print(k[:42], "  ".join(f"{t}={st.median(v):.2f}(n{len(v)})" for t, v in sorted(m.items())))
