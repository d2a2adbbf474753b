//! The C declarations of gemvtune.h, as they are: `#[repr(C)]` structs and
//! the exported functions. The safe API in the crate root is built on these.

#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int};

/// `gemvtune_status`: 0 is `GEMVTUNE_OK`; the crate's `Status` names the rest.
pub type gemvtune_status = c_int;

/// `GEMVTUNE_OPEN_CONTINUE_ON_CACHE_ERROR`.
pub const OPEN_CONTINUE_ON_CACHE_ERROR: u32 = 1;

/// `GEMVTUNE_ABI_MAJOR` of the header these declarations follow.
pub const ABI_MAJOR: i32 = 1;

/// An open policy (opaque).
#[repr(C)]
pub struct gemvtune_policy {
    _private: [u8; 0],
}

/// `gemvtune_params`: a variant's knobs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct gemvtune_params {
    pub r: i32,
    pub f: i32,
    pub u: i32,
    pub s: i32,
    pub w: i32,
    pub g: i32,
    pub l: i32,
    pub a: i32,
}

/// `gemvtune_choice` of abi 1.1.
#[repr(C)]
pub struct gemvtune_choice {
    pub size: u32,
    pub id: *const c_char,
    pub source: *const c_char,
    pub reason: *const c_char,
    pub class_name: *const c_char,
    pub params: gemvtune_params,
    pub layout: i32,
    pub layout_name: *const c_char,
    pub cubin: *const u8,
    pub cubin_len: usize,
    pub entry: *const c_char,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    pub needs_shared_optin: i32,
    pub pdl_supported: i32,
    pub pdl_pays: i32,
    pub error_bound: f64,
    pub has_evidence: i32,
    pub median_us: f64,
    pub gbs: f64,
    pub pct_ceiling: f64,
    pub speedup: f64,
    pub p_value: f64,
    pub pdl_us: f64,
    pub gpu_name: *const c_char,
    pub tuned_shape: *const c_char,
    pub tuned_unix: i64,
    pub pdl_shared_bytes: u32,
    pub pdl_needs_shared_optin: i32,
}

/// `gemvtune_kernel_source`.
#[repr(C)]
pub struct gemvtune_kernel_source {
    pub size: u32,
    pub code: *const c_char,
    pub name: *const c_char,
    pub entry: *const c_char,
    pub options: *const *const c_char,
    pub num_options: usize,
}

extern "C" {
    pub fn gemvtune_version() -> *const c_char;
    pub fn gemvtune_abi_version() -> i32;
    pub fn gemvtune_open(
        cache_path: *const c_char,
        flags: u32,
        out: *mut *mut gemvtune_policy,
        errbuf: *mut c_char,
        errlen: usize,
    ) -> gemvtune_status;
    pub fn gemvtune_close(h: *mut gemvtune_policy);
    pub fn gemvtune_cache_path(h: *mut gemvtune_policy) -> *const c_char;
    pub fn gemvtune_cache_error(h: *mut gemvtune_policy) -> *const c_char;
    pub fn gemvtune_warning_count(h: *mut gemvtune_policy) -> usize;
    pub fn gemvtune_warning(h: *mut gemvtune_policy, i: usize) -> *const c_char;
    pub fn gemvtune_lookup(
        h: *mut gemvtune_policy,
        arch: *const c_char,
        gpu_name: *const c_char,
        format: *const c_char,
        rows: i64,
        cols: i64,
        out: *mut gemvtune_choice,
        errbuf: *mut c_char,
        errlen: usize,
    ) -> gemvtune_status;
    pub fn gemvtune_source(
        h: *mut gemvtune_policy,
        arch: *const c_char,
        format: *const c_char,
        id: *const c_char,
        out: *mut gemvtune_kernel_source,
        errbuf: *mut c_char,
        errlen: usize,
    ) -> gemvtune_status;
    pub fn gemvtune_launch(
        format: *const c_char,
        id: *const c_char,
        rows: i64,
        cols: i64,
        grid: *mut u32,
        block: *mut u32,
        shared_bytes: *mut u32,
        errbuf: *mut c_char,
        errlen: usize,
    ) -> gemvtune_status;
    pub fn gemvtune_repack_size(
        format: *const c_char,
        layout: i32,
        rows: i64,
        cols: i64,
        size: *mut usize,
        errbuf: *mut c_char,
        errlen: usize,
    ) -> gemvtune_status;
    pub fn gemvtune_repack(
        format: *const c_char,
        layout: i32,
        raw: *const u8,
        raw_len: usize,
        rows: i64,
        cols: i64,
        out: *mut u8,
        out_len: usize,
        errbuf: *mut c_char,
        errlen: usize,
    ) -> gemvtune_status;
    pub fn gemvtune_reference(
        format: *const c_char,
        raw: *const u8,
        raw_len: usize,
        x: *const f32,
        rows: i64,
        cols: i64,
        y: *mut f64,
        y_len: usize,
        errbuf: *mut c_char,
        errlen: usize,
    ) -> gemvtune_status;
}
