"""Test driver of the Python bindings: answers the lookups of
libgemvtune/abi_test.go in its canonical form (as abi_check.c does).

    python3 abi_driver.py LIB lookup CACHE|- FLAGS QUERIES
"""

import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemvtune  # noqa: E402


def bits(d):
    return "%016x" % struct.unpack("<Q", struct.pack("<d", d))[0]


def canonical(st, err, c):
    p = c.params
    cub = c.cubin.hex() if c.cubin else "-"
    fields = [
        str(st), err, c.id, c.source, c.reason, c.class_name, ",".join(str(p[k]) for k in "rfuswgla"),
        str(c.layout), c.layout_name, cub, str(len(c.cubin or b"")), c.entry,
        ",".join(map(str, c.grid)), ",".join(map(str, c.block)), str(c.shared_bytes),
        str(int(c.needs_shared_optin)), str(int(c.pdl_supported)), str(int(c.pdl_pays)), bits(c.error_bound),
        str(int(c.has_evidence)), bits(c.median_us), bits(c.gbs), bits(c.pct_ceiling), bits(c.speedup),
        bits(c.p_value), bits(c.pdl_us), c.gpu_name, c.tuned_shape, str(c.tuned_unix),
        str(c.pdl_shared_bytes), str(int(c.pdl_needs_shared_optin)),
    ]
    return "|".join(fields)


def main(argv):
    lib, mode, cache, flags, queries = argv[1:6]
    assert mode == "lookup"
    gemvtune.load(lib)
    try:
        pol = gemvtune.Policy(None if cache == "-" else cache, continue_on_cache_error=int(flags) & 1 != 0)
    except gemvtune.Error as e:
        print("open|%d|%s|null" % (e.status, e))
        return 0
    print("open|0|%s|%s" % (pol.cache_path, pol.cache_error if pol.cache_error is not None else "-"))
    for w in pol.warnings:
        print("warning|%s" % w)
    with pol, open(queries) as f:
        for line in f:
            arch, gpu, fmt, rows, cols = line.split()
            gpu = None if gpu == "-" else gpu.replace("_", " ")
            try:
                c, st, err = pol.lookup(arch, fmt, int(rows), int(cols), gpu), 0, ""
            except gemvtune.Error as e:
                c, st, err = e.choice, e.status, str(e)
            print(canonical(st, err, c))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
