"""Python bindings of libgemvtune (gemvtune.h) through ctypes.

    import gemvtune
    with gemvtune.Policy() as pol:                 # reads GEMV_* and the cache once
        c = pol.lookup("sm_90", "q4_0", 4096, 14336, gpu="NVIDIA H200")
        c.id, c.source, c.reason, c.cubin, c.grid, c.block, c.shared_bytes
        packed = gemvtune.repack("q4_0", c.layout, raw_bytes, 4096, 14336)
    y = gemvtune.reference("q4_0", raw_bytes, x, 4096, 14336)   # float64, to check a launch

The library is found through $GEMVTUNE_LIB, else as "libgemvtune.so" on
the loader's path; load() takes an explicit path. No compiled extension:
this file is the whole module. Errors raise gemvtune.Error with the
library's status and message.
"""

import array
import ctypes
import os

ABI_MAJOR = 1

OK = 0
ERR_ARGUMENT, ERR_ENV, ERR_CACHE, ERR_FORMAT, ERR_SHAPE = 1, 2, 3, 4, 5
ERR_ARCH, ERR_VARIANT, ERR_BUFFER, ERR_INTERNAL = 6, 7, 8, 9

OPEN_CONTINUE_ON_CACHE_ERROR = 1


class Error(Exception):
    """A libgemvtune call failed: status is its gemvtune_status."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class _Params(ctypes.Structure):
    _fields_ = [(k, ctypes.c_int32) for k in "rfuswgla"]


class _Choice(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint32),
        ("id", ctypes.c_char_p),
        ("source", ctypes.c_char_p),
        ("reason", ctypes.c_char_p),
        ("class_name", ctypes.c_char_p),
        ("params", _Params),
        ("layout", ctypes.c_int32),
        ("layout_name", ctypes.c_char_p),
        ("cubin", ctypes.POINTER(ctypes.c_uint8)),
        ("cubin_len", ctypes.c_size_t),
        ("entry", ctypes.c_char_p),
        ("grid", ctypes.c_uint32 * 3),
        ("block", ctypes.c_uint32 * 3),
        ("shared_bytes", ctypes.c_uint32),
        ("needs_shared_optin", ctypes.c_int32),
        ("pdl_supported", ctypes.c_int32),
        ("pdl_pays", ctypes.c_int32),
        ("error_bound", ctypes.c_double),
        ("has_evidence", ctypes.c_int32),
        ("median_us", ctypes.c_double),
        ("gbs", ctypes.c_double),
        ("pct_ceiling", ctypes.c_double),
        ("speedup", ctypes.c_double),
        ("p_value", ctypes.c_double),
        ("pdl_us", ctypes.c_double),
        ("gpu_name", ctypes.c_char_p),
        ("tuned_shape", ctypes.c_char_p),
        ("tuned_unix", ctypes.c_int64),
        ("pdl_shared_bytes", ctypes.c_uint32),
        ("pdl_needs_shared_optin", ctypes.c_int32),
    ]


class _Source(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint32),
        ("code", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("entry", ctypes.c_char_p),
        ("options", ctypes.POINTER(ctypes.c_char_p)),
        ("num_options", ctypes.c_size_t),
    ]


class Choice:
    """What an engine runs for one (arch, format, shape): gemvtune_choice."""

    def __init__(self, c):
        s = lambda b: b.decode() if b is not None else ""
        self.id, self.source, self.reason, self.class_name = s(c.id), s(c.source), s(c.reason), s(c.class_name)
        self.params = {k: getattr(c.params, k) for k in "rfuswgla"}
        self.layout, self.layout_name = c.layout, s(c.layout_name)
        self.cubin = ctypes.string_at(c.cubin, c.cubin_len) if c.cubin else None
        self.entry = s(c.entry)
        self.grid, self.block = tuple(c.grid), tuple(c.block)
        self.shared_bytes = c.shared_bytes
        self.needs_shared_optin = bool(c.needs_shared_optin)
        self.pdl_supported, self.pdl_pays = bool(c.pdl_supported), bool(c.pdl_pays)
        self.error_bound = c.error_bound
        self.has_evidence = bool(c.has_evidence)
        self.median_us, self.gbs, self.pct_ceiling = c.median_us, c.gbs, c.pct_ceiling
        self.speedup, self.p_value, self.pdl_us = c.speedup, c.p_value, c.pdl_us
        self.gpu_name, self.tuned_shape, self.tuned_unix = s(c.gpu_name), s(c.tuned_shape), c.tuned_unix
        self.pdl_shared_bytes, self.pdl_needs_shared_optin = c.pdl_shared_bytes, bool(c.pdl_needs_shared_optin)

    def __repr__(self):
        return "Choice(%s, %s: %s)" % (self.id, self.source, self.reason)


_lib = None


def load(path=None):
    """Loads libgemvtune (path, else $GEMVTUNE_LIB, else libgemvtune.so)."""
    global _lib
    lib = ctypes.CDLL(path or os.environ.get("GEMVTUNE_LIB") or "libgemvtune.so")
    c_char_p, c_size_t, c_int64, c_int32 = ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int64, ctypes.c_int32
    sigs = {
        "gemvtune_version": ([], c_char_p),
        "gemvtune_abi_version": ([], c_int32),
        "gemvtune_open": ([c_char_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_void_p), c_char_p, c_size_t], ctypes.c_int),
        "gemvtune_close": ([ctypes.c_void_p], None),
        "gemvtune_cache_path": ([ctypes.c_void_p], c_char_p),
        "gemvtune_cache_error": ([ctypes.c_void_p], c_char_p),
        "gemvtune_warning_count": ([ctypes.c_void_p], c_size_t),
        "gemvtune_warning": ([ctypes.c_void_p, c_size_t], c_char_p),
        "gemvtune_lookup": ([ctypes.c_void_p, c_char_p, c_char_p, c_char_p, c_int64, c_int64, ctypes.POINTER(_Choice),
                             c_char_p, c_size_t], ctypes.c_int),
        "gemvtune_source": ([ctypes.c_void_p, c_char_p, c_char_p, c_char_p, ctypes.POINTER(_Source), c_char_p,
                             c_size_t], ctypes.c_int),
        "gemvtune_launch": ([c_char_p, c_char_p, c_int64, c_int64, ctypes.POINTER(ctypes.c_uint32),
                             ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32), c_char_p, c_size_t],
                            ctypes.c_int),
        "gemvtune_repack_size": ([c_char_p, c_int32, c_int64, c_int64, ctypes.POINTER(c_size_t), c_char_p, c_size_t],
                                 ctypes.c_int),
        "gemvtune_repack": ([c_char_p, c_int32, ctypes.c_void_p, c_size_t, c_int64, c_int64, ctypes.c_void_p, c_size_t,
                             c_char_p, c_size_t], ctypes.c_int),
        "gemvtune_reference": ([c_char_p, ctypes.c_void_p, c_size_t, ctypes.POINTER(ctypes.c_float), c_int64, c_int64,
                                ctypes.POINTER(ctypes.c_double), c_size_t, c_char_p, c_size_t], ctypes.c_int),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    if lib.gemvtune_abi_version() // 1000 != ABI_MAJOR:
        raise Error(ERR_ARGUMENT, "libgemvtune ABI %d, this module speaks %d.x" % (lib.gemvtune_abi_version(), ABI_MAJOR))
    _lib = lib
    return lib


def _l():
    return _lib or load()


def _check(status, buf):
    if status != OK:
        raise Error(status, buf.value.decode())


def version():
    return _l().gemvtune_version().decode()


class Policy:
    """An open policy: gemvtune_open / gemvtune_lookup / gemvtune_source / gemvtune_close."""

    def __init__(self, cache_path=None, continue_on_cache_error=True):
        lib = _l()
        self._h = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(1024)
        flags = OPEN_CONTINUE_ON_CACHE_ERROR if continue_on_cache_error else 0
        path = cache_path.encode() if cache_path else None
        _check(lib.gemvtune_open(path, flags, ctypes.byref(self._h), buf, len(buf)), buf)
        self.cache_path = lib.gemvtune_cache_path(self._h).decode()
        err = lib.gemvtune_cache_error(self._h)
        self.cache_error = err.decode() if err is not None else None
        self.warnings = [lib.gemvtune_warning(self._h, i).decode() for i in range(lib.gemvtune_warning_count(self._h))]

    def lookup(self, arch, format, rows, cols, gpu=None):
        """The Choice for the GPU named gpu ("NVIDIA H200"; None: unknown); raises
        Error (with .choice, the stock answer) on a bad lookup."""
        c = _Choice(size=ctypes.sizeof(_Choice))
        buf = ctypes.create_string_buffer(1024)
        g = gpu.encode() if gpu else None
        st = _l().gemvtune_lookup(self._handle(), arch.encode(), g, format.encode(), rows, cols, ctypes.byref(c), buf,
                                  len(buf))
        if st != OK:
            e = Error(st, buf.value.decode())
            e.choice = Choice(c)
            raise e
        return Choice(c)

    def source(self, arch, format, id):
        """(code, name, entry, options) of a variant for NVRTC."""
        s = _Source(size=ctypes.sizeof(_Source))
        buf = ctypes.create_string_buffer(1024)
        _check(_l().gemvtune_source(self._handle(), arch.encode(), format.encode(), id.encode(), ctypes.byref(s),
                                    buf, len(buf)), buf)
        opts = [s.options[i].decode() for i in range(s.num_options)]
        return s.code.decode(), s.name.decode(), s.entry.decode(), opts

    def _handle(self):
        if not self._h:
            raise Error(ERR_ARGUMENT, "the policy is closed")
        return self._h

    def close(self):
        if self._h:
            _l().gemvtune_close(self._h)
            self._h = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def launch(format, id, rows, cols):
    """(grid, block, shared_bytes) of variant id of format at rows x cols."""
    grid, block, smem = (ctypes.c_uint32 * 3)(), (ctypes.c_uint32 * 3)(), ctypes.c_uint32()
    buf = ctypes.create_string_buffer(1024)
    _check(_l().gemvtune_launch(format.encode(), id.encode(), rows, cols, grid, block, ctypes.byref(smem), buf,
                                len(buf)), buf)
    return tuple(grid), tuple(block), smem.value


def repack_size(format, layout, rows, cols):
    n = ctypes.c_size_t()
    buf = ctypes.create_string_buffer(1024)
    _check(_l().gemvtune_repack_size(format.encode(), layout, rows, cols, ctypes.byref(n), buf, len(buf)), buf)
    return n.value


def repack(format, layout, raw, rows, cols):
    """raw ecosystem bytes of a rows x cols tensor, repacked into layout (bytes)."""
    n = repack_size(format, layout, rows, cols)
    out = ctypes.create_string_buffer(n)
    src = ctypes.create_string_buffer(bytes(raw), len(raw))
    buf = ctypes.create_string_buffer(1024)
    _check(_l().gemvtune_repack(format.encode(), layout, src, len(raw), rows, cols, out, n, buf, len(buf)), buf)
    return out.raw


def _floats(x, n):
    """x (a buffer of float32, such as array('f') or a float32 NumPy array,
    or a sequence of numbers) as n C floats."""
    try:
        mv = memoryview(x)
    except TypeError:
        mv = None
    if mv is not None:
        if mv.format != "f" or mv.itemsize != 4:
            raise Error(ERR_BUFFER, "x is a buffer of %r items: want float32 ('f')" % mv.format)
        if mv.nbytes != 4 * n:
            raise Error(ERR_BUFFER, "x has %d floats: want cols = %d" % (mv.nbytes // 4, n))
        return (ctypes.c_float * n).from_buffer_copy(mv.cast("B"))
    if len(x) != n:
        raise Error(ERR_BUFFER, "x has %d values: want cols = %d" % (len(x), n))
    return (ctypes.c_float * n)(*x)


def reference(format, raw, x, rows, cols):
    """y = W x in float64 (array('d') of rows values) from the raw
    ecosystem bytes (layout 0) of a rows x cols tensor and cols float32
    values x: the reference every variant is verified against."""
    repack_size(format, 0, rows, cols)  # the format and shape, checked before y is allocated
    xs = _floats(x, cols)
    src = ctypes.create_string_buffer(bytes(raw), len(raw))
    y = (ctypes.c_double * rows)()
    buf = ctypes.create_string_buffer(1024)
    _check(_l().gemvtune_reference(format.encode(), src, len(raw), xs, rows, cols, y, rows, buf, len(buf)), buf)
    out = array.array("d")
    out.frombytes(bytes(y)[:8 * rows])
    return out
