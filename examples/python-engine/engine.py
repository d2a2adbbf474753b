#!/usr/bin/env python3
"""A Python engine's GEMVs through gemvtune, on the GPU with CuPy.

For each format and llama-3-8b GEMV shape it looks up the choice
(gemvtune.Policy, so GEMV_* and the cache apply as at an engine's start),
makes random GGUF-layout weights, repacks them into the choice's layout,
loads the choice's stored cubin (or compiles its source with NVRTC
through CuPy), and then:

- checks y against gemvtune.reference (float64) with y poisoned (NaN)
  first, and an exact-class choice bit for bit against stock on the raw
  weights;
- times the choice against stock (v1) as an engine runs a decode step: a
  CUDA graph of back-to-back launches, cold L2 (the weights rotated over
  copies that pass 4x the L2), CUDA events, interleaved rounds, medians
  with their min-max, GB/s and % of a streaming read measured in the same
  process.

    GEMVTUNE_LIB=/path/libgemvtune.so GEMV_TUNE_CACHE=tune.db \\
        python3 examples/python-engine/engine.py [--formats q4_0,q8_0] [--shapes 4096x14336]

With --chain it times one token instead, as the C and Rust engines do:
every layer's qkv, o, gate_up and down, then the lm head, each kernel
reading the x the kernel before it wrote, in a CUDA graph, with plain
launches and with PDL edges where the choice says PDL pays. CuPy sets no
launch attributes, so a PDL launch goes to the driver's cuLaunchKernelEx
through ctypes, on CuPy's stream and with CuPy's function.

Exit 0 when every check passed, 1 when one failed or a call errs, 2 for
bad arguments or without NumPy, CuPy or a GPU.
"""

import argparse
import ctypes
import math
import os
import sys
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
import gemvtune  # noqa: E402

# llama-3-8b's decode GEMVs: k/v, q and o, qkv, gate or up, gate_up, down, lm head.
SHAPES = [(1024, 4096), (4096, 4096), (6144, 4096), (14336, 4096), (28672, 4096), (4096, 14336), (128256, 4096)]
# One layer's GEMVs in decode order (fused qkv, o, fused gate_up, down), and the lm head.
LAYER = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]
LM_HEAD = (128256, 4096)

# The f16 scale fields of each GGUF block format: block bytes, then
# (offset, scale of the field against 1/sqrt(cols)) per field, so that
# rows have about unit norm.
BLOCK_SCALES = {
    "q4_0": (18, [(0, 1 / 4.6)]),
    "q8_0": (34, [(0, 1 / 73.0)]),
    "q4_K": (144, [(0, 1 / 225.0), (2, 1 / 450.0)]),
    "q5_K": (176, [(0, 1 / 690.0), (2, 1 / 1380.0)]),
    "q6_K": (210, [(208, 1 / 1370.0)]),
}
# The formats make_weights makes: every format gemvtune has (a test in
# libgemvtune checks the two lists).
FORMATS = [*BLOCK_SCALES, "affine4", "bf16", "f16"]

# A streaming read with eight 16-byte loads in flight per thread.
CEILING_SRC = r"""
extern "C" __global__ void read_ceiling(const uint4* __restrict__ p, unsigned n, unsigned* out) {
    unsigned acc = 0;
    const unsigned stride = gridDim.x * blockDim.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 7 * stride < n; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int k = 0; k < 8; k++) v[k] = __ldg(p + i + k * stride);
#pragma unroll
        for (int k = 0; k < 8; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    for (; i < n; i += stride) { uint4 a = __ldg(p + i); acc ^= a.x ^ a.y ^ a.z ^ a.w; }
    if (acc == 0x9e3779b9u) out[0] = acc;
}
"""


class _LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: the ID, padding, the 64-byte value union."""
    _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_uint8 * 4), ("value", ctypes.c_uint64 * 8)]


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig."""
    _fields_ = [("grid", ctypes.c_uint32 * 3), ("block", ctypes.c_uint32 * 3), ("shared", ctypes.c_uint32),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttribute)), ("num_attrs", ctypes.c_uint32)]


# CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class PDLLaunch:
    """Launches a kernel with programmatic stream serialization (a PDL
    edge to the kernel before it) through the driver's cuLaunchKernelEx."""

    def __init__(self):
        self.launch = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
        self.launch.argtypes = [ctypes.POINTER(_LaunchConfig), ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                                ctypes.c_void_p]
        self.launch.restype = ctypes.c_int

    def __call__(self, fn_ptr, grid, block, shared, stream_ptr, w_ptr, x_ptr, y_ptr, rows, cols):
        args = [ctypes.c_uint64(w_ptr), ctypes.c_uint64(x_ptr), ctypes.c_uint64(y_ptr), ctypes.c_int32(rows),
                ctypes.c_int32(cols)]
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        attr = _LaunchAttribute(id=_PROGRAMMATIC_STREAM_SERIALIZATION)
        attr.value[0] = 1  # programmaticStreamSerializationAllowed
        cfg = _LaunchConfig(grid=(ctypes.c_uint32 * 3)(*grid), block=(ctypes.c_uint32 * 3)(*block), shared=shared,
                            stream=stream_ptr, attrs=ctypes.pointer(attr), num_attrs=1)
        r = self.launch(ctypes.byref(cfg), fn_ptr, params, None)
        if r != 0:
            raise RuntimeError("cuLaunchKernelEx: CUDA error %d" % r)


class Usage(Exception):
    """A bad argument or a missing prerequisite: one line, exit 2."""


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated formats (default: all eight)")
    ap.add_argument("--shapes", default=",".join("%dx%d" % s for s in SHAPES),
                    help="comma-separated ROWSxCOLS (default: llama-3-8b's)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (default 7)")
    ap.add_argument("--lib", default=None, help="libgemvtune.so (default $GEMVTUNE_LIB, else the loader's path)")
    ap.add_argument("--chain", action="store_true", help="time one token's chain of GEMVs instead of each shape alone")
    ap.add_argument("--layers", type=int, default=32, help="layers of the chain (default 32)")
    a = ap.parse_args(argv)
    formats = [f for f in a.formats.split(",") if f]
    for f in formats:
        if f not in FORMATS:
            raise Usage("--formats: %r: this engine makes weights for %s" % (f, ", ".join(FORMATS)))
    shapes = []
    for s in a.shapes.split(","):
        try:
            r, c = (int(v) for v in s.lower().split("x"))
        except ValueError:
            raise Usage("--shapes: %r: want ROWSxCOLS, e.g. 4096x14336" % s)
        if r <= 0 or c <= 0:
            raise Usage("--shapes: %r: rows and cols must be positive" % s)
        shapes.append((r, c))
    if a.rounds < 1:
        raise Usage("--rounds %d: want at least 1" % a.rounds)
    if a.layers < 1:
        raise Usage("--layers %d: want at least 1" % a.layers)
    return formats, shapes, a.rounds, a.lib, (a.layers if a.chain else 0)


def import_gpu():
    """(numpy, cupy) with a GPU, or Usage naming what is missing."""
    try:
        import numpy
    except ImportError as e:
        raise Usage("needs NumPy and CuPy (pip install cupy-cuda12x) and an NVIDIA GPU: %s" % e)
    try:
        import cupy
    except ImportError as e:
        raise Usage("needs CuPy (pip install cupy-cuda12x) and an NVIDIA GPU: %s" % e)
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CuPy raises its own CUDARuntimeError without a driver
        raise Usage("no usable NVIDIA GPU: %s" % str(e).splitlines()[0])
    if n == 0:
        raise Usage("no NVIDIA GPU")
    return numpy, cupy


def make_weights(np, fmt, rows, cols, rng):
    """Random raw (layout 0) bytes of fmt whose rows have about unit norm."""
    unit = 1.0 / math.sqrt(cols)
    if fmt in ("bf16", "f16"):
        v = (rng.random(rows * cols, dtype=np.float32) * 2 - 1) * np.float32(1.7 * unit)
        if fmt == "f16":
            return v.astype(np.float16).tobytes()
        u = v.view(np.uint32)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
    n = gemvtune.repack_size(fmt, 0, rows, cols)
    b = rng.integers(0, 256, size=n, dtype=np.uint8)

    def f16s(count, scale):
        return (scale * (0.5 + rng.random(count))).astype(np.float16).view(np.uint8)

    if fmt == "affine4":  # nibble plane, then f16 scales, then f16 biases, one per 64 weights
        groups = rows * cols // 64
        scales = (unit / 4.7 * (0.5 + rng.random(groups))).astype(np.float16)
        b[rows * cols // 2:rows * cols // 2 + 2 * groups] = scales.view(np.uint8)
        b[rows * cols // 2 + 2 * groups:] = (-7.5 * scales.astype(np.float32)).astype(np.float16).view(np.uint8)
        return b.tobytes()
    size, fields = BLOCK_SCALES[fmt]
    blocks = b.reshape(-1, size)
    for off, k in fields:
        blocks[:, off:off + 2] = f16s(blocks.shape[0], k * unit).reshape(-1, 2)
    return b.tobytes()


class Kernel:
    """A loaded GEMV kernel and its launch at one shape."""

    def __init__(self, np, cp, fn, launch, pdl_shared=0):
        self.np, self.fn = np, fn
        self.grid, self.block, self.shared = launch
        self.pdl_shared = max(pdl_shared, self.shared)  # a PDL launch's dynamic shared memory
        if self.pdl_shared > 48 * 1024:
            cp.cuda.driver.funcSetAttribute(fn.ptr, cp.cuda.driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            self.pdl_shared)

    def __call__(self, w, x, y, rows, cols):
        self.fn(self.grid, self.block, (w, x, y, self.np.int32(rows), self.np.int32(cols)), shared_mem=self.shared)

    def pdl(self, launch, stream, w, x, y, rows, cols):
        """The same launch on stream with a PDL edge, by launch (a PDLLaunch)."""
        launch(self.fn.ptr, self.grid, self.block, self.pdl_shared, stream.ptr, w.data.ptr, x.data.ptr, y.data.ptr,
               rows, cols)


class Engine:
    def __init__(self, np, cp, pol):
        self.np, self.cp, self.pol = np, cp, pol
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        self.gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        self.arch = "sm_%d%d" % (props["major"], props["minor"])
        self.sms = props["multiProcessorCount"]
        self.l2 = props["l2CacheSize"]
        self.compiled = {}

    def compile(self, fmt, id):
        """Variant id's kernel function, compiled once from gemvtune's source
        (CuPy passes the architecture itself; the other options go through)."""
        if (fmt, id) not in self.compiled:
            code, _, entry, opts = self.pol.source(self.arch, fmt, id)
            opts = tuple(o for o in opts if not o.startswith("--gpu-architecture"))
            self.compiled[fmt, id] = self.cp.RawModule(code=code, options=opts, backend="nvrtc").get_function(entry)
        return self.compiled[fmt, id]

    def tuned(self, fmt, choice):
        """The choice's Kernel, from its stored cubin where it has one, and where from."""
        if choice.cubin is None:
            fn, origin = self.compile(fmt, choice.id), "NVRTC"
        else:
            mod = self.cp.cuda.function.Module()
            mod.load(choice.cubin)
            fn, origin = mod.get_function(choice.entry), "cubin"
        launch = (choice.grid, choice.block, choice.shared_bytes)
        return Kernel(self.np, self.cp, fn, launch, choice.pdl_shared_bytes), origin

    def stock(self, fmt, rows, cols):
        return Kernel(self.np, self.cp, self.compile(fmt, "v1"), gemvtune.launch(fmt, "v1", rows, cols))

    def copies(self, host_bytes):
        """Device copies of host_bytes that together pass 4x the L2."""
        n = max(1, -(-4 * self.l2 // len(host_bytes)))
        first = self.cp.asarray(self.np.frombuffer(host_bytes, dtype=self.np.uint8))
        return [first] + [first.copy() for _ in range(n - 1)]

    def ceiling(self):
        """GB/s of a streaming read of 1 GiB: the best median of the same
        seven launch shapes as the C and Rust engines, after 200 reads
        that bring the clocks up."""
        cp, np = self.cp, self.np
        buf = cp.zeros(1 << 30, dtype=cp.uint8)
        out = cp.zeros(1, dtype=cp.uint32)
        fn = cp.RawModule(code=CEILING_SRC, backend="nvrtc").get_function("read_ceiling")
        n = np.uint32(buf.nbytes // 16)

        def reads(per_sm, threads, reps):
            times = []
            for _ in range(reps):
                t0, t1 = cp.cuda.Event(), cp.cuda.Event()
                t0.record()
                fn((self.sms * per_sm,), (threads,), (buf, n, out))
                t1.record()
                t1.synchronize()
                times.append(cp.cuda.get_elapsed_time(t0, t1) * 1e3)
            return times

        reads(2, 1024, 200)
        best = 0.0
        for per_sm, threads in ((1, 1024), (2, 1024), (2, 512), (4, 512), (8, 256), (16, 128), (32, 256)):
            best = max(best, buf.nbytes / median_spread(reads(per_sm, threads, 12)[2:])[0] / 1e3)
        return best

    def run(self, k, w, x, rows, cols):
        y = self.cp.full(rows, self.np.nan, dtype=self.np.float32)
        k(w, x, y, rows, cols)
        self.cp.cuda.Device().synchronize()
        return y.get()

    def time(self, kernels, rows, cols, rounds):
        """Per kernel (name -> (Kernel, weight copies)): µs per launch of
        each round, a round being one replay of a CUDA graph of back-to-back
        launches over every weight copy (at least 10), the kernels' rounds
        interleaved."""
        cp, np = self.cp, self.np
        x = cp.asarray(np.random.default_rng(1).random(cols, dtype=np.float32) * 2 - 1)
        y = cp.empty(rows, dtype=np.float32)
        stream = cp.cuda.Stream(non_blocking=True)
        graphs = {}
        with stream:
            for name, (k, ws) in kernels.items():
                batch = max(10, len(ws))
                stream.begin_capture()
                for i in range(batch):
                    k(ws[i % len(ws)], x, y, rows, cols)
                graphs[name] = (stream.end_capture(), batch)
        for g, _ in graphs.values():
            for _ in range(2):
                g.launch(stream)
        samples = {name: [] for name in kernels}
        for _ in range(rounds):
            for name, (g, batch) in graphs.items():
                t0, t1 = cp.cuda.Event(), cp.cuda.Event()
                t0.record(stream)
                g.launch(stream)
                t1.record(stream)
                t1.synchronize()
                samples[name].append(cp.cuda.get_elapsed_time(t0, t1) * 1e3 / batch)
        return samples


def rel_l2(np, y, ref):
    d = y.astype(np.float64) - ref
    den = float(np.dot(ref, ref))
    return math.sqrt(float(np.dot(d, d)) / den) if den > 0 else math.sqrt(float(np.dot(d, d)))


def median_spread(v):
    s = sorted(v)
    return s[len(s) // 2], s[0], s[-1]


def weights_for(eng, fmt, rows, cols):
    """The choice for (fmt, rows x cols), random raw weights, the same
    repacked into the choice's layout, and the generator, seeded by the
    pair, that made them."""
    np = eng.np
    c = eng.pol.lookup(eng.arch, fmt, rows, cols, gpu=eng.gpu)
    rng = np.random.default_rng(zlib.crc32(("%s %dx%d" % (fmt, rows, cols)).encode()))
    raw = make_weights(np, fmt, rows, cols, rng)
    return c, raw, gemvtune.repack(fmt, c.layout, raw, rows, cols), rng


def check(eng, fmt, c, tuned, raw, packed, rows, cols, rng, raw_dev=None):
    """(rel err, ok, verdict) of the choice's Kernel tuned on its weights
    packed (on the GPU) for a random x: y poisoned first, against the
    float64 reference, and an exact-class choice bit for bit against stock
    on the raw weights (raw_dev, their copy on the GPU, or uploaded here)."""
    np, cp = eng.np, eng.cp
    xs = (rng.random(cols, dtype=np.float32) * 2 - 1).astype(np.float32)
    ref = np.frombuffer(gemvtune.reference(fmt, raw, xs, rows, cols).tobytes(), dtype=np.float64)
    x = cp.asarray(xs)
    y = eng.run(tuned, packed, x, rows, cols)
    err = rel_l2(np, y, ref)
    wrong, notes = [], []
    if not np.isfinite(y).all():
        wrong.append("NON-FINITE y")
    elif err > c.error_bound:
        wrong.append("ERROR OVER BOUND")
    if c.class_name == "exact" and c.id != "v1":
        if raw_dev is None:
            raw_dev = cp.asarray(np.frombuffer(raw, dtype=np.uint8))
        ys = eng.run(eng.stock(fmt, rows, cols), raw_dev, x, rows, cols)
        same = ys.tobytes() == y.tobytes()
        (notes if same else wrong).append("bit-identical to stock" if same else "DIFFERS FROM STOCK")
    return err, not wrong, ", ".join(wrong or ["ok"] + notes)


def check_and_time(eng, fmt, rows, cols, rounds, ceiling):
    """One line of the table for (fmt, rows x cols); the bool says whether every check passed."""
    c, raw, packed, rng = weights_for(eng, fmt, rows, cols)
    tuned, origin = eng.tuned(fmt, c)
    stock = eng.stock(fmt, rows, cols)
    tw, sw = eng.copies(packed), eng.copies(raw)
    err, ok, verdict = check(eng, fmt, c, tuned, raw, tw[0], rows, cols, rng, sw[0])

    samples = eng.time({"tuned": (tuned, tw), "stock": (stock, sw)}, rows, cols, rounds)
    tm, tlo, thi = median_spread(samples["tuned"])
    sm, _, _ = median_spread(samples["stock"])
    gbs = len(packed) / tm / 1e3
    del tw, sw
    line = "%-8s %-12s %-22s %-6s %-9s %9.2e %9.2e  %8.2f %8.2f-%-8.2f %7.0f %6.1f %9.2f %7.2fx  %s" % (
        fmt, "%dx%d" % (rows, cols), c.id, origin, c.class_name, err, c.error_bound, tm, tlo, thi, gbs,
        100 * gbs / ceiling, sm, sm / tm, verdict)
    return line, ok


CHAIN_HEADER = "%-8s %-30s %10s %-17s %10s %13s %7s %8s" % (
    "format", "chain", "µs/token", " (min-max)", "MB/token", "bytes/ceiling", "% ceil", "tok/s")


def chain(eng, fmt, layers, rounds, ceiling, pdl_launch):
    """Checks the kernels of one token of fmt, then times the token: its
    table lines, and how many checks failed."""
    np, cp = eng.np, eng.cp
    mats, failed = [], 0
    for rows, cols in LAYER + [LM_HEAD]:
        c, raw, packed, rng = weights_for(eng, fmt, rows, cols)
        k, origin = eng.tuned(fmt, c)
        w = cp.asarray(np.frombuffer(packed, dtype=np.uint8))
        err, ok, verdict = check(eng, fmt, c, k, raw, w, rows, cols, rng)
        print("  %-8s %-12s %-22s %-6s %-9s rel err %.2e (bound %.0e)%s  %s" % (
            fmt, "%dx%d" % (rows, cols), c.id, origin, c.class_name, err, c.error_bound,
            ", pdl-pays" if c.pdl_pays else "", verdict), flush=True)
        mats.append((k, c, w, rows, cols))
        failed += not ok
    # Every layer's weights in their own memory (copies of layer 0's).
    per_layer = [[m[2] if layer == 0 else m[2].copy() for m in mats[:4]] for layer in range(layers)]
    nbytes = layers * sum(m[2].nbytes for m in mats[:4]) + mats[4][2].nbytes
    at_ceiling = nbytes / ceiling / 1e3
    act = [cp.asarray(np.random.default_rng(i).random(LM_HEAD[0], dtype=np.float32) * 2 - 1) for i in range(2)]
    stock_only = os.environ.get("GEMV_FORCE_VARIANT") == "v1"
    lines = []
    for pdl in (False, True):
        if pdl and not any(m[1].pdl_pays for m in mats):
            continue
        stream = cp.cuda.Stream(non_blocking=True)
        launches = [(m, w) for ws in per_layer for m, w in zip(mats, ws)] + [(mats[4], mats[4][2])]
        with stream:
            stream.begin_capture()
            for n, ((k, c, _, rows, cols), w) in enumerate(launches):
                x, y = act[n % 2], act[(n + 1) % 2]
                if pdl and c.pdl_pays and n > 0:
                    k.pdl(pdl_launch, stream, w, x, y, rows, cols)
                else:
                    k(w, x, y, rows, cols)
            graph = stream.end_capture()
        for _ in range(5):
            graph.launch(stream)
        times = []
        for _ in range(rounds):
            t0, t1 = cp.cuda.Event(), cp.cuda.Event()
            t0.record(stream)
            for _ in range(10):
                graph.launch(stream)
            t1.record(stream)
            t1.synchronize()
            times.append(cp.cuda.get_elapsed_time(t0, t1) * 1e3 / 10)
        med, lo, hi = median_spread(times)
        mode = "stock (GEMV_FORCE_VARIANT=v1)" if stock_only else "tuned, PDL where it pays" if pdl else "tuned, plain launches"
        lines.append("%-8s %-30s %10.1f %8.1f-%-8.1f %10.1f %13.1f %7.1f %8.1f" % (
            fmt, mode, med, lo, hi, nbytes / 1e6, at_ceiling, 100 * at_ceiling / med, 1e6 / med))
        print(lines[-1], flush=True)
    return lines, failed


def main(argv):
    try:
        formats, shapes, rounds, lib, layers = parse_args(argv)
        gemvtune.load(lib)
        np, cp = import_gpu()
    except Usage as e:
        print("engine.py: %s" % e, file=sys.stderr)
        return 2
    except (OSError, gemvtune.Error) as e:
        print("engine.py: libgemvtune: %s" % e, file=sys.stderr)
        return 2
    try:
        pdl_launch = PDLLaunch() if layers else None
    except OSError as e:
        print("engine.py: --chain launches through the driver's libcuda.so.1: %s" % e, file=sys.stderr)
        return 2
    failed = checks = 0
    try:
        with gemvtune.Policy() as pol:
            eng = Engine(np, cp, pol)
            ceiling = eng.ceiling()
            print("%s, %s, %d SMs; %s; cache %s%s" % (
                eng.gpu, eng.arch, eng.sms, gemvtune.version(), pol.cache_path,
                " (%s)" % pol.cache_error if pol.cache_error else ""))
            for w in pol.warnings:
                print("warning: %s" % w)
            print("read ceiling %.0f GB/s (1 GiB streaming read, best median of 7 launch shapes)\n" % ceiling)
            if layers:
                table = []
                for fmt in formats:
                    print("checks of %s:" % fmt)
                    try:
                        lines, n = chain(eng, fmt, layers, rounds, ceiling, pdl_launch)
                    except Exception as e:  # CuPy's CUDA errors (a faulting kernel) among them
                        msg = str(e).splitlines()[0] if str(e) else ""
                        print("engine.py: %s chain: %s: %s" % (fmt, type(e).__name__, msg), file=sys.stderr)
                        return 1
                    table += lines
                    failed, checks = failed + n, checks + len(LAYER) + 1
                print("\n%s\n%s" % (CHAIN_HEADER, "\n".join(table)))
                print("\n%d of %d checks failed" % (failed, checks))
                return 1 if failed else 0
            print("%-8s %-12s %-22s %-6s %-9s %9s %9s  %8s %-17s %7s %6s %9s %8s  %s" % (
                "format", "shape", "choice", "from", "class", "rel err", "bound", "µs", "(min-max)", "GB/s",
                "% ceil", "stock µs", "speedup", "check"))
            for fmt in formats:
                for rows, cols in shapes:
                    try:
                        line, ok = check_and_time(eng, fmt, rows, cols, rounds, ceiling)
                    except Exception as e:  # CuPy's CUDA errors (a faulting kernel) among them
                        msg = str(e).splitlines()[0] if str(e) else ""
                        print("engine.py: %s %dx%d: %s: %s" % (fmt, rows, cols, type(e).__name__, msg), file=sys.stderr)
                        return 1
                    print(line, flush=True)
                    failed += not ok
    except gemvtune.Error as e:
        print("engine.py: %s" % e, file=sys.stderr)
        return 1
    print("\n%d of %d checks failed" % (failed, len(formats) * len(shapes)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
