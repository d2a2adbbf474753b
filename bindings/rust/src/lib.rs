//! gemvtune's kernel policy from Rust: a safe wrapper over libgemvtune's C
//! ABI (`gemvtune.h`; docs/engines.md is the guide).
//!
//! ```no_run
//! let pol = gemvtune::Policy::open(None, true)?; // reads GEMV_* and the cache once
//! let c = pol.lookup("sm_90", Some("NVIDIA H200"), "q4_0", 4096, 14336)?;
//! // c.cubin (or pol.source(..) for NVRTC), c.grid, c.block, c.shared_bytes, c.pdl_pays
//! # let raw: Vec<u8> = vec![];
//! let packed = gemvtune::repack("q4_0", c.layout, &raw, 4096, 14336)?;
//! # Ok::<(), gemvtune::Error>(())
//! ```
//!
//! Every value returned is owned by the caller: nothing borrows from the
//! policy handle, which `Policy` closes when it is dropped. The library is
//! linked at build time (`GEMVTUNE_LIB_DIR`, build.rs). A failed call is an
//! [`Error`] with the library's status and its one-line message.

pub mod sys;

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::c_char;
use std::ptr;

/// The library's status codes (`gemvtune_status`), other than `GEMVTUNE_OK`.
pub mod status {
    pub const ARGUMENT: i32 = 1;
    pub const ENV: i32 = 2;
    pub const CACHE: i32 = 3;
    pub const FORMAT: i32 = 4;
    pub const SHAPE: i32 = 5;
    pub const ARCH: i32 = 6;
    pub const VARIANT: i32 = 7;
    pub const BUFFER: i32 = 8;
    pub const INTERNAL: i32 = 9;
}

/// A failed call: the library's status and message. A failed lookup also
/// carries the stock choice the library answered with.
#[derive(Debug)]
pub struct Error {
    pub status: i32,
    pub message: String,
    pub choice: Option<Box<Choice>>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl Error {
    /// An error the crate finds itself, before or without a library call.
    fn new(status: i32, message: String) -> Error {
        Error { status, message, choice: None }
    }
}

/// The result of a gemvtune call.
pub type Result<T> = std::result::Result<T, Error>;

/// A variant's knobs (docs/design.md, "Knobs and variant IDs").
pub type Params = sys::gemvtune_params;

/// What an engine runs for one (arch, format, shape): `gemvtune_choice`,
/// copied out of the library.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Choice {
    /// Canonical variant ID, or "v1" for stock.
    pub id: String,
    /// Where the choice came from: tuned, nearest, forced, default, ...
    pub source: String,
    /// One sentence: why this choice.
    pub reason: String,
    /// "exact" (bit-identical to stock) or "tolerance".
    pub class_name: String,
    pub params: Params,
    /// Weight layout: 0 raw bytes, else repack once at load ([`repack`]).
    pub layout: i32,
    pub layout_name: String,
    /// The stored cubin for this arch, or None: compile [`Policy::source`].
    pub cubin: Option<Vec<u8>>,
    /// The kernel's name in the cubin.
    pub entry: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory of a plain launch.
    pub shared_bytes: u32,
    /// Raise the function's dynamic shared memory limit to shared_bytes first.
    pub needs_shared_optin: bool,
    /// May be launched with programmatic stream serialization (sm_90+).
    pub pdl_supported: bool,
    /// The tuner chose this winner in PDL launch mode: launch it with PDL
    /// and pdl_shared_bytes.
    pub pdl_pays: bool,
    /// Relative L2 error against the float64 reference it was verified within.
    pub error_bound: f64,
    /// The fields below are a tuned measurement (tuned or nearest).
    pub has_evidence: bool,
    pub median_us: f64,
    pub gbs: f64,
    pub pct_ceiling: f64,
    pub speedup: f64,
    pub p_value: f64,
    pub pdl_us: f64,
    pub gpu_name: String,
    pub tuned_shape: String,
    pub tuned_unix: i64,
    /// Dynamic shared memory of a PDL launch.
    pub pdl_shared_bytes: u32,
    /// Raise the limit to pdl_shared_bytes before a PDL launch.
    pub pdl_needs_shared_optin: bool,
}

/// A variant's complete CUDA source and its NVRTC options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelSource {
    pub code: String,
    pub name: String,
    pub entry: String,
    pub options: Vec<String>,
}

/// A variant's launch at a shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
}

const ERRLEN: usize = 1024;

fn owned(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: the library returns NUL-terminated strings that live until
    // its handle closes (or static ones); this copies them out at once.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn c_str(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(status::ARGUMENT, format!("{}: {:?} holds a NUL byte", what, s)))
}

/// Calls f with an error buffer and turns a non-OK status into an Error.
fn call<F: FnOnce(*mut c_char, usize) -> sys::gemvtune_status>(f: F) -> Result<()> {
    let mut buf = vec![0 as c_char; ERRLEN];
    let st = f(buf.as_mut_ptr(), buf.len());
    if st == 0 {
        return Ok(());
    }
    Err(Error::new(st, owned(buf.as_ptr())))
}

fn choice_of(c: &sys::gemvtune_choice) -> Choice {
    let cubin = if c.cubin.is_null() {
        None
    } else {
        // SAFETY: cubin points at cubin_len bytes the handle owns.
        Some(unsafe { std::slice::from_raw_parts(c.cubin, c.cubin_len) }.to_vec())
    };
    Choice {
        id: owned(c.id),
        source: owned(c.source),
        reason: owned(c.reason),
        class_name: owned(c.class_name),
        params: c.params,
        layout: c.layout,
        layout_name: owned(c.layout_name),
        cubin,
        entry: owned(c.entry),
        grid: c.grid,
        block: c.block,
        shared_bytes: c.shared_bytes,
        needs_shared_optin: c.needs_shared_optin != 0,
        pdl_supported: c.pdl_supported != 0,
        pdl_pays: c.pdl_pays != 0,
        error_bound: c.error_bound,
        has_evidence: c.has_evidence != 0,
        median_us: c.median_us,
        gbs: c.gbs,
        pct_ceiling: c.pct_ceiling,
        speedup: c.speedup,
        p_value: c.p_value,
        pdl_us: c.pdl_us,
        gpu_name: owned(c.gpu_name),
        tuned_shape: owned(c.tuned_shape),
        tuned_unix: c.tuned_unix,
        pdl_shared_bytes: c.pdl_shared_bytes,
        pdl_needs_shared_optin: c.pdl_needs_shared_optin != 0,
    }
}

/// The library's version string, e.g. "gemvtune 0.9.0 (abi 1.1)".
pub fn version() -> String {
    // SAFETY: a static string.
    owned(unsafe { sys::gemvtune_version() })
}

/// The library's ABI version, major × 1000 + minor.
pub fn abi_version() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::gemvtune_abi_version() }
}

/// An open policy: the GEMV_* environment and the cache, read once.
pub struct Policy {
    h: *mut sys::gemvtune_policy,
    /// The cache file read (or that would have been), "" when disabled.
    pub cache_path: String,
    /// Why the cache was unusable or which entries were skipped.
    pub cache_error: Option<String>,
    /// What the library noticed in the environment and ignored, one line
    /// each: an engine should log them.
    pub warnings: Vec<String>,
}

// SAFETY: gemvtune.h: every call but gemvtune_close is safe from several
// threads at once, and close runs only in Drop, with no borrow left.
unsafe impl Send for Policy {}
unsafe impl Sync for Policy {}

impl Policy {
    /// Opens the policy: cache None means $GEMV_TUNE_CACHE, else the
    /// default path; with continue_on_cache_error a missing or unreadable
    /// cache gives stock everywhere instead of an error.
    pub fn open(cache: Option<&str>, continue_on_cache_error: bool) -> Result<Policy> {
        if abi_version() / 1000 != sys::ABI_MAJOR {
            let message = format!("libgemvtune speaks ABI {}, this crate {}.x", abi_version(), sys::ABI_MAJOR);
            return Err(Error::new(status::ARGUMENT, message));
        }
        let path = match cache {
            Some(p) => Some(c_str("cache path", p)?),
            None => None,
        };
        let flags = if continue_on_cache_error { sys::OPEN_CONTINUE_ON_CACHE_ERROR } else { 0 };
        let mut h = ptr::null_mut();
        let p = path.as_ref().map_or(ptr::null(), |p| p.as_ptr());
        // SAFETY: valid strings and out pointer; errbuf from call.
        call(|e, n| unsafe { sys::gemvtune_open(p, flags, &mut h, e, n) })?;
        // SAFETY: h is a live handle from here on.
        let (cache_path, cache_error, warnings) = unsafe {
            let ce = sys::gemvtune_cache_error(h);
            let warnings = (0..sys::gemvtune_warning_count(h)).map(|i| owned(sys::gemvtune_warning(h, i))).collect();
            (owned(sys::gemvtune_cache_path(h)), if ce.is_null() { None } else { Some(owned(ce)) }, warnings)
        };
        Ok(Policy { h, cache_path, cache_error, warnings })
    }

    /// The choice for format on arch ("sm_90") at rows x cols for the GPU
    /// named gpu ("NVIDIA H200"; None if unknown). A failed lookup's Error
    /// carries the stock choice.
    pub fn lookup(&self, arch: &str, gpu: Option<&str>, format: &str, rows: i64, cols: i64) -> Result<Choice> {
        let (a, f) = (c_str("arch", arch)?, c_str("format", format)?);
        let g = match gpu {
            Some(g) => Some(c_str("GPU name", g)?),
            None => None,
        };
        // SAFETY: all-zero is a valid gemvtune_choice (null pointers, zero numbers).
        let mut c: sys::gemvtune_choice = unsafe { std::mem::zeroed() };
        c.size = std::mem::size_of::<sys::gemvtune_choice>() as u32;
        let gp = g.as_ref().map_or(ptr::null(), |g| g.as_ptr());
        // SAFETY: live handle, valid strings and out struct.
        let r =
            call(|e, n| unsafe { sys::gemvtune_lookup(self.h, a.as_ptr(), gp, f.as_ptr(), rows, cols, &mut c, e, n) });
        let choice = choice_of(&c);
        match r {
            Ok(()) => Ok(choice),
            Err(mut err) => {
                err.choice = Some(Box::new(choice));
                Err(err)
            }
        }
    }

    /// The source of variant id ("v1" or an ID) of format for arch: the
    /// code its stored cubin was compiled from.
    pub fn source(&self, arch: &str, format: &str, id: &str) -> Result<KernelSource> {
        let (a, f, i) = (c_str("arch", arch)?, c_str("format", format)?, c_str("variant", id)?);
        let mut s = sys::gemvtune_kernel_source {
            size: std::mem::size_of::<sys::gemvtune_kernel_source>() as u32,
            code: ptr::null(),
            name: ptr::null(),
            entry: ptr::null(),
            options: ptr::null(),
            num_options: 0,
        };
        // SAFETY: live handle, valid strings and out struct.
        call(|e, n| unsafe { sys::gemvtune_source(self.h, a.as_ptr(), f.as_ptr(), i.as_ptr(), &mut s, e, n) })?;
        let options = (0..s.num_options)
            // SAFETY: options points at num_options strings the handle owns.
            .map(|k| owned(unsafe { *s.options.add(k) }))
            .collect();
        Ok(KernelSource { code: owned(s.code), name: owned(s.name), entry: owned(s.entry), options })
    }
}

impl Drop for Policy {
    fn drop(&mut self) {
        // SAFETY: the handle is live and nothing borrows from it.
        unsafe { sys::gemvtune_close(self.h) }
    }
}

/// The launch of variant id ("v1" or an ID) of format at rows x cols, for
/// a variant that did not come from a lookup (a Choice carries its own).
pub fn launch(format: &str, id: &str, rows: i64, cols: i64) -> Result<Launch> {
    let (f, i) = (c_str("format", format)?, c_str("variant", id)?);
    let mut l = Launch { grid: [0; 3], block: [0; 3], shared_bytes: 0 };
    // SAFETY: valid strings; grid and block have room for 3 each.
    call(|e, n| unsafe {
        sys::gemvtune_launch(
            f.as_ptr(),
            i.as_ptr(),
            rows,
            cols,
            l.grid.as_mut_ptr(),
            l.block.as_mut_ptr(),
            &mut l.shared_bytes,
            e,
            n,
        )
    })?;
    Ok(l)
}

/// The bytes of a rows x cols tensor of format, the same in every layout.
pub fn repack_size(format: &str, layout: i32, rows: i64, cols: i64) -> Result<usize> {
    let f = c_str("format", format)?;
    let mut size = 0usize;
    // SAFETY: valid string and out pointer.
    call(|e, n| unsafe { sys::gemvtune_repack_size(f.as_ptr(), layout, rows, cols, &mut size, e, n) })?;
    Ok(size)
}

/// Raw ecosystem bytes (GGUF, MLX) of a rows x cols tensor, repacked into layout.
pub fn repack(format: &str, layout: i32, raw: &[u8], rows: i64, cols: i64) -> Result<Vec<u8>> {
    let f = c_str("format", format)?;
    let mut out = vec![0u8; repack_size(format, layout, rows, cols)?];
    // SAFETY: raw and out are live buffers of the lengths passed.
    call(|e, n| unsafe {
        sys::gemvtune_repack(f.as_ptr(), layout, raw.as_ptr(), raw.len(), rows, cols, out.as_mut_ptr(), out.len(), e, n)
    })?;
    Ok(out)
}

/// y = W x in float64 from the raw bytes (layout 0) of a rows x cols
/// tensor and cols values x: the reference every variant is verified against.
pub fn reference(format: &str, raw: &[u8], x: &[f32], rows: i64, cols: i64) -> Result<Vec<f64>> {
    repack_size(format, 0, rows, cols)?; // the format and shape, checked before y is allocated
    if x.len() as i64 != cols {
        return Err(Error::new(status::BUFFER, format!("x has {} values: want cols = {}", x.len(), cols)));
    }
    let f = c_str("format", format)?;
    let mut y = vec![0f64; rows as usize];
    // SAFETY: raw, x and y are live buffers of the lengths passed.
    call(|e, n| unsafe {
        sys::gemvtune_reference(
            f.as_ptr(),
            raw.as_ptr(),
            raw.len(),
            x.as_ptr(),
            rows,
            cols,
            y.as_mut_ptr(),
            y.len(),
            e,
            n,
        )
    })?;
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_an_error_with_the_status_and_a_message() {
        let cases: Vec<(&str, Result<()>, i32)> = vec![
            ("unknown format", repack_size("q9", 0, 4096, 4096).map(|_| ()), status::FORMAT),
            ("NUL in a name", repack_size("q4\0_0", 0, 4096, 4096).map(|_| ()), status::ARGUMENT),
            ("zero rows", repack_size("q4_0", 0, 0, 4096).map(|_| ()), status::SHAPE),
            ("unknown variant", launch("q4_0", "fast", 4096, 4096).map(|_| ()), status::VARIANT),
            ("short raw bytes", repack("q4_0", 1, &[0u8; 17], 1, 32).map(|_| ()), status::BUFFER),
            ("short x", reference("q4_0", &[0u8; 18], &[0.0; 31], 1, 32).map(|_| ()), status::BUFFER),
        ];
        for (name, r, want) in cases {
            let e = r.expect_err(name);
            assert_eq!(e.status, want, "{}: {}", name, e);
            assert!(!e.message.is_empty() && !e.message.contains('\n'), "{}: {:?}", name, e.message);
        }
    }

    #[test]
    fn a_failed_lookup_carries_the_stock_choice() {
        let pol = Policy::open(Some("/nonexistent/gemvtune-test.db"), true).expect("open without a cache");
        let e = pol.lookup("sm90", None, "q4_0", 4096, 4096).expect_err("a bad arch");
        assert_eq!(e.status, status::ARCH, "{}", e);
        assert_eq!(e.choice.expect("the stock choice").id, "v1");
        let c = pol.lookup("sm_90", Some("NVIDIA H200"), "q4_0", 4096, 4096).expect("a lookup without a cache");
        assert_eq!((c.id.as_str(), c.source.as_str()), ("v1", "no-cache"));
        let l = launch("q4_0", "v1", 4096, 4096).expect("stock's launch");
        assert_eq!((c.grid, c.block, c.shared_bytes), (l.grid, l.block, l.shared_bytes));
    }

    #[test]
    fn reference_is_w_times_x() {
        // One q4_0 block: d = 1.0 (f16 0x3c00), every nibble 9, so each weight is 1.
        let mut raw = vec![0x00u8, 0x3c];
        raw.extend([0x99u8; 16]);
        let x: Vec<f32> = (0..32).map(|i| i as f32).collect();
        assert_eq!(reference("q4_0", &raw, &x, 1, 32).expect("reference"), vec![496.0]);
    }
}
