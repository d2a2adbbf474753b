//! The CUDA driver API and NVRTC, loaded at run time with dlopen: the
//! engine builds without CUDA and says in one line what a machine lacks.
//! Each library is one table of (method, symbol, signature); every call
//! returns a Result whose error names the symbol and the library's code.

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_uint, c_void};

extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}

const RTLD_NOW: c_int = 2;

/// An opaque CUDA handle: context, module, function, stream, event, graph.
pub type Handle = *mut c_void;
/// A device address (CUdeviceptr).
pub type DevPtr = u64;

fn last_dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string.
    let e = unsafe { dlerror() };
    if e.is_null() {
        return "the dynamic loader gave no reason".to_string();
    }
    unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
}

/// dlopen of the first of names that loads, or the last loader error.
fn open_first(names: &[String]) -> Result<(*mut c_void, String), String> {
    let mut why = String::new();
    for n in names {
        let c = CString::new(n.as_str()).map_err(|_| format!("{:?}: holds a NUL byte", n))?;
        // SAFETY: a valid C string.
        let h = unsafe { dlopen(c.as_ptr(), RTLD_NOW) };
        if !h.is_null() {
            return Ok((h, n.clone()));
        }
        why = last_dl_error();
    }
    Err(why)
}

fn symbol(h: *mut c_void, lib: &str, name: &str) -> Result<*mut c_void, String> {
    let c = CString::new(name).expect("symbol names hold no NUL");
    // SAFETY: h is a live dlopen handle.
    let p = unsafe { dlsym(h, c.as_ptr()) };
    if p.is_null() {
        return Err(format!("{} has no {}", lib, name));
    }
    Ok(p)
}

/// How a library turns a return code into words.
trait Describe {
    fn describe(&self, code: c_int) -> String;
}

/// Declares a library's table: a struct of entry points resolved by
/// symbol, and for each a method that calls it and turns a nonzero return
/// into an error naming the symbol.
macro_rules! library {
    ($name:ident { $($f:ident = $sym:literal ($($arg:ident: $t:ty),*);)* }) => {
        pub struct $name {
            $($f: unsafe extern "C" fn($($t),*) -> c_int,)*
        }
        impl $name {
            fn resolve(h: *mut c_void, lib: &str) -> Result<Self, String> {
                // SAFETY: each symbol is the C function of that signature.
                Ok($name { $($f: unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($t),*) -> c_int>(symbol(h, lib, $sym)?) },)* })
            }
            $(
                #[allow(clippy::too_many_arguments, dead_code)]
                pub unsafe fn $f(&self, $($arg: $t),*) -> Result<(), String> {
                    match (self.$f)($($arg),*) {
                        0 => Ok(()),
                        r => Err(format!("{}: {}", $sym, self.describe(r))),
                    }
                }
            )*
        }
    };
}

library!(Driver {
    init = "cuInit"(flags: c_uint);
    device_count = "cuDeviceGetCount"(n: *mut c_int);
    device_get = "cuDeviceGet"(dev: *mut c_int, ordinal: c_int);
    device_attribute = "cuDeviceGetAttribute"(v: *mut c_int, attr: c_int, dev: c_int);
    device_name = "cuDeviceGetName"(name: *mut c_char, len: c_int, dev: c_int);
    primary_ctx_retain = "cuDevicePrimaryCtxRetain"(ctx: *mut Handle, dev: c_int);
    ctx_set_current = "cuCtxSetCurrent"(ctx: Handle);
    ctx_synchronize = "cuCtxSynchronize"();
    mem_alloc = "cuMemAlloc_v2"(p: *mut DevPtr, bytes: usize);
    mem_free = "cuMemFree_v2"(p: DevPtr);
    memcpy_htod = "cuMemcpyHtoD_v2"(dst: DevPtr, src: *const c_void, bytes: usize);
    memcpy_dtoh = "cuMemcpyDtoH_v2"(dst: *mut c_void, src: DevPtr, bytes: usize);
    memcpy_dtod = "cuMemcpyDtoD_v2"(dst: DevPtr, src: DevPtr, bytes: usize);
    memset_d32 = "cuMemsetD32_v2"(dst: DevPtr, v: c_uint, n: usize);
    module_load_data = "cuModuleLoadData"(m: *mut Handle, image: *const c_void);
    module_unload = "cuModuleUnload"(m: Handle);
    module_function = "cuModuleGetFunction"(f: *mut Handle, m: Handle, name: *const c_char);
    func_set_attribute = "cuFuncSetAttribute"(f: Handle, attr: c_int, v: c_int);
    launch_kernel = "cuLaunchKernel"(f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint,
        smem: c_uint, stream: Handle, params: *mut *mut c_void, extra: *mut *mut c_void);
    launch_kernel_ex = "cuLaunchKernelEx"(cfg: *const LaunchConfig, f: Handle, params: *mut *mut c_void, extra: *mut *mut c_void);
    stream_create = "cuStreamCreate"(s: *mut Handle, flags: c_uint);
    stream_destroy = "cuStreamDestroy_v2"(s: Handle);
    begin_capture = "cuStreamBeginCapture_v2"(s: Handle, mode: c_int);
    end_capture = "cuStreamEndCapture"(s: Handle, g: *mut Handle);
    graph_instantiate = "cuGraphInstantiateWithFlags"(e: *mut Handle, g: Handle, flags: u64);
    graph_launch = "cuGraphLaunch"(e: Handle, s: Handle);
    graph_exec_destroy = "cuGraphExecDestroy"(e: Handle);
    graph_destroy = "cuGraphDestroy"(g: Handle);
    event_create = "cuEventCreate"(e: *mut Handle, flags: c_uint);
    event_record = "cuEventRecord"(e: Handle, s: Handle);
    event_synchronize = "cuEventSynchronize"(e: Handle);
    event_elapsed = "cuEventElapsedTime"(ms: *mut f32, a: Handle, b: Handle);
    event_destroy = "cuEventDestroy_v2"(e: Handle);
    error_name = "cuGetErrorName"(code: c_int, name: *mut *const c_char);
});

impl Describe for Driver {
    fn describe(&self, code: c_int) -> String {
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: cuGetErrorName writes a static string or fails.
        if unsafe { (self.error_name)(code, &mut p) } == 0 && !p.is_null() {
            return format!("{} ({})", unsafe { CStr::from_ptr(p) }.to_string_lossy(), code);
        }
        format!("CUDA error {}", code)
    }
}

library!(Nvrtc {
    create_program = "nvrtcCreateProgram"(p: *mut Handle, src: *const c_char, name: *const c_char, n: c_int,
        headers: *const *const c_char, names: *const *const c_char);
    compile_program = "nvrtcCompileProgram"(p: Handle, n: c_int, opts: *const *const c_char);
    log_size = "nvrtcGetProgramLogSize"(p: Handle, n: *mut usize);
    log = "nvrtcGetProgramLog"(p: Handle, log: *mut c_char);
    cubin_size = "nvrtcGetCUBINSize"(p: Handle, n: *mut usize);
    cubin = "nvrtcGetCUBIN"(p: Handle, cubin: *mut c_char);
    destroy_program = "nvrtcDestroyProgram"(p: *mut Handle);
});

impl Describe for Nvrtc {
    fn describe(&self, code: c_int) -> String {
        format!("nvrtcResult {}", code)
    }
}

/// `CUlaunchConfig`.
#[repr(C)]
pub struct LaunchConfig {
    pub grid: [c_uint; 3],
    pub block: [c_uint; 3],
    pub shared_bytes: c_uint,
    pub stream: Handle,
    pub attrs: *mut LaunchAttribute,
    pub num_attrs: c_uint,
}

/// `CUlaunchAttribute`: the id, padding, and the 64-byte value union.
#[repr(C)]
pub struct LaunchAttribute {
    pub id: c_uint,
    pub pad: [u8; 4],
    pub value: [u64; 8],
}

/// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
pub const ATTR_PROGRAMMATIC_STREAM_SERIALIZATION: c_uint = 6;
/// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
pub const FUNC_MAX_DYNAMIC_SHARED: c_int = 8;
/// CU_DEVICE_ATTRIBUTE_{MULTIPROCESSOR_COUNT, COMPUTE_CAPABILITY_MAJOR, _MINOR}.
pub const DEV_SMS: c_int = 16;
pub const DEV_MAJOR: c_int = 75;
pub const DEV_MINOR: c_int = 76;
/// CU_STREAM_NON_BLOCKING, CU_STREAM_CAPTURE_MODE_GLOBAL.
pub const STREAM_NON_BLOCKING: c_uint = 1;
pub const CAPTURE_GLOBAL: c_int = 0;

/// The driver, on device 0 with its primary context current.
pub struct Gpu {
    pub cu: Driver,
    nvrtc: Result<(Nvrtc, String), String>, // the library and its name, or why none loaded
    pub name: String,
    pub arch: String,
    pub sms: u32,
}

/// Why the engine cannot start: no driver, no GPU (exit 2), or a failed call.
pub enum OpenError {
    Missing(String),
    Failed(String),
}

impl Gpu {
    /// Loads libcuda.so.1 (and NVRTC, needed only to compile), and makes
    /// device 0's primary context current on this thread.
    pub fn open() -> Result<Gpu, OpenError> {
        let (h, lib) = open_first(&["libcuda.so.1".to_string()])
            .map_err(|e| OpenError::Missing(format!("no NVIDIA driver (libcuda.so.1): {}", e)))?;
        let cu = Driver::resolve(h, &lib).map_err(OpenError::Missing)?;
        let fail = OpenError::Failed;
        let mut n = 0;
        // SAFETY: valid out pointers throughout; the driver is initialized first.
        unsafe {
            cu.init(0).map_err(|e| OpenError::Missing(format!("no usable NVIDIA GPU: {}", e)))?;
            cu.device_count(&mut n).map_err(fail)?;
        }
        if n == 0 {
            return Err(OpenError::Missing("no NVIDIA GPU".to_string()));
        }
        let (mut dev, mut ctx) = (0, std::ptr::null_mut());
        let (mut major, mut minor, mut sms) = (0, 0, 0);
        let mut name = vec![0 as c_char; 256];
        unsafe {
            cu.device_get(&mut dev, 0).map_err(fail)?;
            cu.device_attribute(&mut major, DEV_MAJOR, dev).map_err(fail)?;
            cu.device_attribute(&mut minor, DEV_MINOR, dev).map_err(fail)?;
            cu.device_attribute(&mut sms, DEV_SMS, dev).map_err(fail)?;
            cu.device_name(name.as_mut_ptr(), name.len() as c_int, dev).map_err(fail)?;
            cu.primary_ctx_retain(&mut ctx, dev).map_err(fail)?;
            cu.ctx_set_current(ctx).map_err(fail)?;
        }
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        Ok(Gpu { cu, nvrtc: load_nvrtc(), name, arch: format!("sm_{}{}", major, minor), sms: sms as u32 })
    }

    /// Compiles code with NVRTC and loads the cubin.
    pub fn compile(&self, code: &str, name: &str, options: &[String]) -> Result<Handle, String> {
        let (nv, lib) = self.nvrtc.as_ref().map_err(|e| format!("{}: cannot compile: {}", name, e))?;
        let src = CString::new(code).map_err(|_| format!("{}: the source holds a NUL byte", name))?;
        let file = CString::new(name).map_err(|_| format!("{:?}: holds a NUL byte", name))?;
        let opts: Vec<CString> =
            options.iter().map(|o| CString::new(o.as_str()).expect("options hold no NUL")).collect();
        let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut prog = std::ptr::null_mut();
        // SAFETY: valid strings and out pointers; prog is destroyed on every path after it is created.
        unsafe {
            nv.create_program(&mut prog, src.as_ptr(), file.as_ptr(), 0, std::ptr::null(), std::ptr::null())
                .map_err(|e| format!("{} ({}): {}", name, lib, e))?;
            let compiled = nv.compile_program(prog, ptrs.len() as c_int, ptrs.as_ptr());
            let result = match compiled {
                Err(e) => {
                    let mut n = 0;
                    let mut log = String::new();
                    if nv.log_size(prog, &mut n).is_ok() && n > 1 {
                        let mut buf = vec![0 as c_char; n];
                        if nv.log(prog, buf.as_mut_ptr()).is_ok() {
                            log =
                                CStr::from_ptr(buf.as_ptr()).to_string_lossy().lines().next().unwrap_or("").to_string();
                        }
                    }
                    Err(format!("{} ({}): {}: {}", name, lib, e, log))
                }
                Ok(()) => {
                    let mut n = 0;
                    nv.cubin_size(prog, &mut n).map_err(|e| format!("{}: {}", name, e)).and_then(|_| {
                        let mut buf = vec![0u8; n];
                        nv.cubin(prog, buf.as_mut_ptr() as *mut c_char).map_err(|e| format!("{}: {}", name, e))?;
                        Ok(buf)
                    })
                }
            };
            let _ = nv.destroy_program(&mut prog);
            self.load(&result?)
        }
    }

    /// Loads a cubin.
    pub fn load(&self, cubin: &[u8]) -> Result<Handle, String> {
        let mut m = std::ptr::null_mut();
        // SAFETY: cubin is a live buffer the driver copies.
        unsafe { self.cu.module_load_data(&mut m, cubin.as_ptr() as *const c_void)? };
        Ok(m)
    }

    /// Device memory holding bytes.
    pub fn upload(&self, bytes: &[u8]) -> Result<DevPtr, String> {
        let p = self.alloc(bytes.len())?;
        // SAFETY: p has bytes.len() bytes.
        unsafe { self.cu.memcpy_htod(p, bytes.as_ptr() as *const c_void, bytes.len())? };
        Ok(p)
    }

    pub fn alloc(&self, bytes: usize) -> Result<DevPtr, String> {
        let mut p = 0;
        // SAFETY: a valid out pointer.
        unsafe { self.cu.mem_alloc(&mut p, bytes.max(1))? };
        Ok(p)
    }

    pub fn free(&self, p: DevPtr) {
        // SAFETY: p came from alloc; a failure here leaves nothing to do.
        let _ = unsafe { self.cu.mem_free(p) };
    }

    /// n f32 values at p.
    pub fn download_f32(&self, p: DevPtr, n: usize) -> Result<Vec<f32>, String> {
        let mut v = vec![0f32; n];
        // SAFETY: v has room for n floats.
        unsafe { self.cu.memcpy_dtoh(v.as_mut_ptr() as *mut c_void, p, 4 * n)? };
        Ok(v)
    }
}

/// NVRTC: $GEMV_NVRTC (a file), else the sonames and CUDA's usual folder.
fn load_nvrtc() -> Result<(Nvrtc, String), String> {
    let mut names: Vec<String> = Vec::new();
    if let Ok(p) = std::env::var("GEMV_NVRTC") {
        names.push(p);
    }
    for n in ["libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"] {
        names.push(n.to_string());
    }
    let home = std::env::var("CUDA_HOME").unwrap_or_else(|_| "/usr/local/cuda".to_string());
    names.push(format!("{}/lib64/libnvrtc.so", home));
    let (h, lib) = open_first(&names).map_err(|e| format!("no NVRTC (tried {}): {}", names.join(", "), e))?;
    Ok((Nvrtc::resolve(h, &lib)?, lib))
}
