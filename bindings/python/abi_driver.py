"""Test driver of the Python bindings: answers what libgemvtune/abi_test.go
asks, in the canonical form abi_check.c prints, so that the test compares
the Python module with the Go policy byte for byte.

    python3 abi_driver.py LIB lookup CACHE|- FLAGS QUERIES
    python3 abi_driver.py LIB source ARCH FORMAT ID
    python3 abi_driver.py LIB launch FORMAT ID ROWS COLS
    python3 abi_driver.py LIB repack FORMAT LAYOUT ROWS COLS IN OUT
    python3 abi_driver.py LIB reference FORMAT ROWS COLS RAW X OUT
"""

import array
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


def lookup(cache, flags, queries):
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


def source(arch, fmt, id):
    with gemvtune.Policy() as pol:
        try:
            code, name, entry, opts = pol.source(arch, fmt, id)
        except gemvtune.Error as e:
            sys.stdout.write("%d|%s\n" % (e.status, e))
            return 0
    sys.stdout.write("0|%s|%s|%d%s\n%s" % (name, entry, len(opts), "".join("|" + o for o in opts), code))
    return 0


def launch(fmt, id, rows, cols):
    try:
        grid, block, smem = gemvtune.launch(fmt, id, int(rows), int(cols))
    except gemvtune.Error as e:
        sys.stdout.write("%d|%s\n" % (e.status, e))
        return 0
    sys.stdout.write("0|%s|%s|%d\n" % (",".join(map(str, grid)), ",".join(map(str, block)), smem))
    return 0


def repack(fmt, layout, rows, cols, src, dst):
    with open(src, "rb") as f:
        raw = f.read()
    with open(dst, "wb") as f:
        f.write(gemvtune.repack(fmt, int(layout), raw, int(rows), int(cols)))
    return 0


def reference(fmt, rows, cols, src, xfile, dst):
    with open(src, "rb") as f:
        raw = f.read()
    x = array.array("f")
    with open(xfile, "rb") as f:
        x.frombytes(f.read())
    with open(dst, "wb") as f:
        f.write(gemvtune.reference(fmt, raw, x, int(rows), int(cols)).tobytes())
    return 0


MODES = {"lookup": lookup, "source": source, "launch": launch, "repack": repack, "reference": reference}


def main(argv):
    lib, mode, args = argv[1], argv[2], argv[3:]
    gemvtune.load(lib)
    return MODES[mode](*args)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
