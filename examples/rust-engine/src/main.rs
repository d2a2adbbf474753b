//! rust-engine: a Rust engine's decode GEMVs through gemvtune, on the GPU.
//!
//! For llama-3-8b in each format it opens the policy (GEMV_* and the cache,
//! read once as at an engine's start), looks up every (format, shape) with
//! this GPU's name, makes GGUF-layout weights, repacks them through the
//! ABI, loads the stored cubin (or compiles the choice's source with NVRTC
//! when none is stored) and checks the output, poisoned with NaN first,
//! against the float64 reference within the choice's bound (an exact-class
//! choice also bit for bit against stock). Then it times one token's chain
//! of GEMVs (every layer's qkv, o, gate_up and down, then the lm head, each
//! reading the x the kernel before it wrote) in a CUDA graph, with plain
//! launches and with PDL edges where the choice says PDL pays.
//!
//!     rust-engine [--formats q4_0,q4_K] [--layers N] [--rounds N]
//!
//! Rollback without a rebuild: GEMV_FORCE_VARIANT=v1 rust-engine. Exit 0
//! when every check passed, 1 when one failed or a CUDA call erred, 2 for
//! bad arguments or without a driver or GPU.

mod cuda;
mod weights;

use cuda::{DevPtr, Gpu, Handle, OpenError};
use std::os::raw::c_void;
use std::process::exit;

/// llama-3-8b's decode GEMVs: (name, rows, cols).
const SHAPES: [(&str, usize, usize); 8] = [
    ("q", 4096, 4096),
    ("k/v", 1024, 4096),
    ("qkv", 6144, 4096),
    ("o", 4096, 4096),
    ("gate/up", 14336, 4096),
    ("gate_up", 28672, 4096),
    ("down", 4096, 14336),
    ("lm_head", 128256, 4096),
];
/// One layer's GEMVs in decode order (fused qkv and gate_up), then the lm head.
const LAYER: [usize; 4] = [2, 3, 5, 6];
const LM_HEAD: usize = 7;

/// A streaming read with eight 16-byte loads in flight per thread: the
/// read ceiling, the yardstick of % of ceiling.
const CEILING_SRC: &str = r#"
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
"#;

struct Args {
    formats: Vec<String>,
    layers: usize,
    rounds: usize,
}

const USAGE: &str = "usage: rust-engine [--formats q4_0,q4_K,...] [--layers N] [--rounds N]";

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let known = weights::formats();
    let mut a = Args { formats: known.iter().map(|s| s.to_string()).collect(), layers: 32, rounds: 15 };
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{}: wants a value; {}", flag, USAGE))?;
        let count = |min: usize| match value.parse::<usize>() {
            Ok(n) if n >= min => Ok(n),
            _ => Err(format!("{} {}: want a whole number of at least {}", flag, value, min)),
        };
        match flag.as_str() {
            "--formats" => {
                a.formats = value.split(',').filter(|f| !f.is_empty()).map(|f| f.to_string()).collect();
                if let Some(f) = a.formats.iter().find(|f| !known.contains(&f.as_str())) {
                    return Err(format!("--formats: {:?}: this engine makes weights for {}", f, known.join(", ")));
                }
            }
            "--layers" => a.layers = count(1)?,
            "--rounds" => a.rounds = count(3)?,
            _ => return Err(format!("{}: unknown flag; {}", flag, USAGE)),
        }
    }
    Ok(a)
}

/// A loaded kernel and its launch.
struct Kernel {
    module: Handle,
    function: Handle,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    pdl_shared: u32,
}

/// One matrix of the model: its choice, kernel and layer 0's weights.
struct Matrix {
    choice: gemvtune::Choice,
    kernel: Kernel,
    bytes: usize,
    packed: DevPtr,
}

struct Engine {
    gpu: Gpu,
    pol: gemvtune::Policy,
    from_cubin: usize,
    compiled: usize,
}

fn api<T>(what: &str, r: gemvtune::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{}: {}", what, e))
}

impl Engine {
    fn kernel(
        &self,
        module: Handle,
        entry: &str,
        grid: [u32; 3],
        block: [u32; 3],
        shared: u32,
        pdl_shared: u32,
    ) -> Result<Kernel, String> {
        let mut function = std::ptr::null_mut();
        let name = std::ffi::CString::new(entry).map_err(|_| format!("entry {:?} holds a NUL byte", entry))?;
        // SAFETY: a loaded module, a valid name and out pointer.
        unsafe {
            self.gpu.cu.module_function(&mut function, module, name.as_ptr())?;
            // The limit covers both launches: pdl_shared >= shared.
            let limit = shared.max(pdl_shared);
            if limit > 48 << 10 {
                self.gpu.cu.func_set_attribute(function, cuda::FUNC_MAX_DYNAMIC_SHARED, limit as i32)?;
            }
        }
        Ok(Kernel { module, function, grid, block, shared, pdl_shared })
    }

    /// Variant id's kernel compiled from gemvtune's source, with its launch
    /// at rows x cols, and pdl_shared (at least its plain launch's) for a
    /// PDL launch.
    fn compiled(
        &mut self,
        format: &str,
        id: &str,
        rows: usize,
        cols: usize,
        pdl_shared: u32,
    ) -> Result<Kernel, String> {
        let src = api("gemvtune source", self.pol.source(&self.gpu.arch, format, id))?;
        let l = api("gemvtune launch", gemvtune::launch(format, id, rows as i64, cols as i64))?;
        let module = self.gpu.compile(&src.code, &src.name, &src.options)?;
        self.compiled += 1;
        self.kernel(module, &src.entry, l.grid, l.block, l.shared_bytes, pdl_shared.max(l.shared_bytes))
    }

    /// The choice's kernel: its stored cubin, else its source through NVRTC.
    fn chosen(
        &mut self,
        format: &str,
        c: &gemvtune::Choice,
        rows: usize,
        cols: usize,
    ) -> Result<(Kernel, &'static str), String> {
        match &c.cubin {
            Some(cubin) => {
                let module = self.gpu.load(cubin)?;
                self.from_cubin += 1;
                Ok((self.kernel(module, &c.entry, c.grid, c.block, c.shared_bytes, c.pdl_shared_bytes)?, "cubin"))
            }
            None => Ok((self.compiled(format, &c.id, rows, cols, c.pdl_shared_bytes)?, "NVRTC")),
        }
    }

    /// Launches k on stream over (w, x, y), with a PDL edge to the kernel
    /// before it when pdl is set.
    #[allow(clippy::too_many_arguments)] // the kernel's five, the stream and the mode
    fn launch(
        &self,
        k: &Kernel,
        stream: Handle,
        pdl: bool,
        w: DevPtr,
        x: DevPtr,
        y: DevPtr,
        rows: usize,
        cols: usize,
    ) -> Result<(), String> {
        let (mut w, mut x, mut y, mut r, mut c) = (w, x, y, rows as i32, cols as i32);
        let mut params: [*mut c_void; 5] = [
            &mut w as *mut _ as *mut c_void,
            &mut x as *mut _ as *mut c_void,
            &mut y as *mut _ as *mut c_void,
            &mut r as *mut _ as *mut c_void,
            &mut c as *mut _ as *mut c_void,
        ];
        let cu = &self.gpu.cu;
        // SAFETY: params point at live values of the kernel's signature
        // (const unsigned char*, const float*, float*, int, int).
        unsafe {
            if !pdl {
                let (g, b) = (k.grid, k.block);
                return cu.launch_kernel(
                    k.function,
                    g[0],
                    g[1],
                    g[2],
                    b[0],
                    b[1],
                    b[2],
                    k.shared,
                    stream,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                );
            }
            let mut attr =
                cuda::LaunchAttribute { id: cuda::ATTR_PROGRAMMATIC_STREAM_SERIALIZATION, pad: [0; 4], value: [0; 8] };
            attr.value[0] = 1; // programmaticStreamSerializationAllowed
            let cfg = cuda::LaunchConfig {
                grid: k.grid,
                block: k.block,
                shared_bytes: k.pdl_shared,
                stream,
                attrs: &mut attr,
                num_attrs: 1,
            };
            cu.launch_kernel_ex(&cfg, k.function, params.as_mut_ptr(), std::ptr::null_mut())
        }
    }

    /// y of one plain launch of k, y poisoned with NaN first.
    fn run_once(
        &self,
        k: &Kernel,
        w: DevPtr,
        x: DevPtr,
        y: DevPtr,
        rows: usize,
        cols: usize,
    ) -> Result<Vec<f32>, String> {
        // SAFETY: y has rows floats.
        unsafe { self.gpu.cu.memset_d32(y, 0x7fc0_0000, rows)? };
        self.launch(k, std::ptr::null_mut(), false, w, x, y, rows, cols)?;
        unsafe { self.gpu.cu.ctx_synchronize()? };
        self.gpu.download_f32(y, rows)
    }

    /// The best median GB/s of a 1 GiB streaming read over a few launch
    /// shapes, after 200 reads that bring the clocks up.
    fn ceiling(&self) -> Result<f64, String> {
        let opts = [format!("--gpu-architecture={}", self.gpu.arch)];
        let module = self.gpu.compile(CEILING_SRC, "read_ceiling.cu", &opts)?;
        let bytes = 1usize << 30;
        let (buf, out) = (self.gpu.alloc(bytes)?, self.gpu.alloc(4)?);
        let (mut p, mut n, mut o) = (buf, (bytes / 16) as u32, out);
        let mut params: [*mut c_void; 3] =
            [&mut p as *mut _ as *mut c_void, &mut n as *mut _ as *mut c_void, &mut o as *mut _ as *mut c_void];
        let params = params.as_mut_ptr();
        // µs of `reps` reads with (blocks per SM, threads), each timed alone.
        let reads = |per_sm: u32, threads: u32, reps: usize| -> Result<Vec<f64>, String> {
            let k = self.kernel(module, "read_ceiling", [self.gpu.sms * per_sm, 1, 1], [threads, 1, 1], 0, 0)?;
            let (g, b, null) = (k.grid[0], k.block[0], std::ptr::null_mut());
            // SAFETY: params point at the kernel's three live arguments.
            (0..reps)
                .map(|_| {
                    self.timed(null, 1, || unsafe {
                        self.gpu.cu.launch_kernel(k.function, g, 1, 1, b, 1, 1, 0, null, params, std::ptr::null_mut())
                    })
                })
                .collect()
        };
        reads(2, 1024, 200)?;
        let mut best = 0.0f64;
        for (per_sm, threads) in [(1, 1024), (2, 1024), (2, 512), (4, 512), (8, 256), (16, 128), (32, 256)] {
            let mut times = reads(per_sm, threads, 12)?.split_off(2);
            best = best.max(bytes as f64 / median(&mut times).0 / 1e3);
        }
        self.gpu.free(buf);
        self.gpu.free(out);
        unsafe { self.gpu.cu.module_unload(module)? };
        Ok(best)
    }

    /// µs per run of f, run `per` times between two events on stream.
    fn timed<F: FnMut() -> Result<(), String>>(&self, stream: Handle, per: usize, mut f: F) -> Result<f64, String> {
        let cu = &self.gpu.cu;
        let (mut e0, mut e1) = (std::ptr::null_mut(), std::ptr::null_mut());
        let mut ms = 0f32;
        // SAFETY: events are created, used on one stream and destroyed here.
        unsafe {
            cu.event_create(&mut e0, 0)?;
            cu.event_create(&mut e1, 0)?;
            cu.event_record(e0, stream)?;
            for _ in 0..per {
                f()?;
            }
            cu.event_record(e1, stream)?;
            cu.event_synchronize(e1)?;
            cu.event_elapsed(&mut ms, e0, e1)?;
            cu.event_destroy(e0)?;
            cu.event_destroy(e1)?;
        }
        Ok(ms as f64 * 1e3 / per as f64)
    }

    /// Checks one matrix of format: the choice on repacked weights against
    /// the float64 reference, an exact-class choice bit for bit against
    /// stock. Returns the matrix (layer 0's weights stay on the GPU) and
    /// whether every check passed.
    fn check(
        &mut self,
        format: &str,
        s: usize,
        stock: &Kernel,
        rng: &mut weights::Rng,
    ) -> Result<(Matrix, bool), String> {
        let (name, rows, cols) = SHAPES[s];
        let (r, c) = (rows as i64, cols as i64);
        let choice = api("gemvtune lookup", self.pol.lookup(&self.gpu.arch, Some(&self.gpu.name), format, r, c))?;
        let bytes = api("gemvtune repack size", gemvtune::repack_size(format, choice.layout, r, c))?;
        let raw = weights::make(format, rows, cols, bytes, rng);
        let packed = api("gemvtune repack", gemvtune::repack(format, choice.layout, &raw, r, c))?;
        let (kernel, origin) = self.chosen(format, &choice, rows, cols)?;
        let x: Vec<f32> = (0..cols).map(|_| rng.signed()).collect();
        let reference = api("gemvtune reference", gemvtune::reference(format, &raw, &x, r, c))?;
        let dev_packed = self.gpu.upload(&packed)?;
        let xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (dx, dy) = (self.gpu.upload(&xb)?, self.gpu.alloc(4 * rows)?);
        let y = self.run_once(&kernel, dev_packed, dx, dy, rows, cols)?;
        let err = rel_l2(&y, &reference);
        let finite = y.iter().all(|v| v.is_finite());
        let mut ok = finite && err <= choice.error_bound;
        let mut exact = "";
        if choice.class_name == "exact" && choice.id != "v1" {
            let l = api("gemvtune launch", gemvtune::launch(format, "v1", r, c))?;
            let stock_here =
                Kernel { grid: l.grid, block: l.block, shared: l.shared_bytes, pdl_shared: l.shared_bytes, ..*stock };
            let dw = self.gpu.upload(&raw)?;
            let ys = self.run_once(&stock_here, dw, dx, dy, rows, cols)?;
            self.gpu.free(dw);
            let same = ys.iter().zip(&y).all(|(a, b)| a.to_bits() == b.to_bits());
            exact = if same { ", bit-identical to stock" } else { ", DIFFERS from stock" };
            ok = ok && same;
        }
        self.gpu.free(dx);
        self.gpu.free(dy);
        println!(
            "  {:<8} {:<8} {:>6}x{:<6} {:<22} {:<9} {:<12} l={} {:<5} grid {} block {} smem {}{}  rel err {:.2e} (bound {:.0e}){}{}  {}",
            format, name, rows, cols, choice.id, choice.class_name, choice.source, choice.layout, origin, kernel.grid[0],
            kernel.block[0], kernel.shared, if choice.pdl_pays { " pdl-pays" } else { "" }, err, choice.error_bound,
            if finite { "" } else { ", NON-FINITE y" }, exact, if ok { "ok" } else { "FAIL" }
        );
        Ok((Matrix { choice, kernel, bytes, packed: dev_packed }, ok))
    }

    /// One token's chain in a CUDA graph (layers × qkv, o, gate_up, down,
    /// then the lm head); pdl: PDL edges where the choice says PDL pays.
    /// Median µs per token and the spread.
    fn chain(
        &self,
        ms: &[Matrix],
        layers: &[DevPtr],
        pdl: bool,
        rounds: usize,
        rng: &mut weights::Rng,
    ) -> Result<(f64, f64, f64), String> {
        let cu = &self.gpu.cu;
        let maxrows = SHAPES.iter().map(|s| s.1).max().unwrap_or(0);
        let mut act = [0; 2];
        for a in act.iter_mut() {
            let h: Vec<u8> = (0..maxrows).flat_map(|_| rng.signed().to_le_bytes()).collect();
            *a = self.gpu.upload(&h)?;
        }
        let (mut stream, mut graph, mut exec) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: the stream, graph and exec are made and destroyed here.
        unsafe {
            cu.stream_create(&mut stream, cuda::STREAM_NON_BLOCKING)?;
            cu.begin_capture(stream, cuda::CAPTURE_GLOBAL)?;
        }
        // Every layer's four matrices in turn, then the lm head; launch n
        // reads act[n % 2] and writes the other.
        let steps = layers
            .iter()
            .enumerate()
            .map(|(i, &w)| (LAYER[i % LAYER.len()], w))
            .chain(std::iter::once((LM_HEAD, ms[LM_HEAD].packed)));
        let captured = steps.enumerate().try_for_each(|(n, (s, w))| {
            let m = &ms[s];
            let pdl_edge = pdl && m.choice.pdl_pays && n > 0;
            self.launch(&m.kernel, stream, pdl_edge, w, act[n % 2], act[(n + 1) % 2], SHAPES[s].1, SHAPES[s].2)
        });
        let result = unsafe {
            let ended = cu.end_capture(stream, &mut graph);
            captured.and(ended).and_then(|_| cu.graph_instantiate(&mut exec, graph, 0)).and_then(|_| {
                for _ in 0..5 {
                    cu.graph_launch(exec, stream)?; // warm-up
                }
                let mut t = Vec::with_capacity(rounds);
                for _ in 0..rounds {
                    t.push(self.timed(stream, 10, || cu.graph_launch(exec, stream))?);
                }
                Ok(median(&mut t))
            })
        };
        unsafe {
            if !exec.is_null() {
                let _ = cu.graph_exec_destroy(exec);
            }
            if !graph.is_null() {
                let _ = cu.graph_destroy(graph);
            }
            let _ = cu.stream_destroy(stream);
        }
        self.gpu.free(act[0]);
        self.gpu.free(act[1]);
        result
    }

    /// Checks and times format; its table lines, and the number of failed checks.
    fn format(
        &mut self,
        format: &str,
        args: &Args,
        ceiling: f64,
        rng: &mut weights::Rng,
    ) -> Result<(String, usize), String> {
        println!("checks of {}:", format);
        let stock = self.compiled(format, "v1", 4096, 4096, 0)?;
        let mut ms = Vec::new();
        let mut failed = 0;
        for s in 0..SHAPES.len() {
            let (m, ok) = self.check(format, s, &stock, rng)?;
            failed += !ok as usize;
            ms.push(m);
        }
        unsafe { self.gpu.cu.module_unload(stock.module)? };
        // Every layer's weights in their own memory (copies of layer 0's).
        let mut layers = Vec::new();
        let mut bytes = ms[LM_HEAD].bytes as f64;
        for l in 0..args.layers {
            for &s in LAYER.iter() {
                let m = &ms[s];
                let p = if l == 0 { m.packed } else { self.gpu.alloc(m.bytes)? };
                if l > 0 {
                    unsafe { self.gpu.cu.memcpy_dtod(p, m.packed, m.bytes)? };
                }
                layers.push(p);
                bytes += m.bytes as f64;
            }
        }
        let at_ceiling = bytes / (ceiling * 1e9) * 1e6;
        let force = std::env::var("GEMV_FORCE_VARIANT").unwrap_or_default();
        let any_pdl = ms.iter().any(|m| m.choice.pdl_pays);
        let mut table = String::new();
        for pdl in [false, true] {
            if pdl && !any_pdl {
                continue;
            }
            let (us, lo, hi) = self.chain(&ms, &layers, pdl, args.rounds, rng)?;
            let mode = if force == "v1" {
                "stock (GEMV_FORCE_VARIANT=v1)"
            } else if pdl {
                "tuned, PDL where it pays"
            } else {
                "tuned, plain launches"
            };
            let line = format!(
                "{:<8} {:<30} {:>10.1} {:>8.1}-{:<8.1} {:>10.1} {:>13.1} {:>7.1} {:>8.1}\n",
                format,
                mode,
                us,
                lo,
                hi,
                bytes / 1e6,
                at_ceiling,
                100.0 * at_ceiling / us,
                1e6 / us
            );
            print!("{}", line);
            table.push_str(&line);
        }
        for (i, p) in layers.into_iter().enumerate() {
            if i >= LAYER.len() {
                self.gpu.free(p);
            }
        }
        for m in ms {
            self.gpu.free(m.packed);
            unsafe { self.gpu.cu.module_unload(m.kernel.module)? };
        }
        Ok((table, failed))
    }
}

fn rel_l2(y: &[f32], reference: &[f64]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (a, b) in y.iter().zip(reference) {
        num += (*a as f64 - b) * (*a as f64 - b);
        den += b * b;
    }
    if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt()
    }
}

/// Median, min and max of v.
fn median(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

const HEADER: &str =
    "format   chain                            us/token (min-max)          MB/token bytes/ceiling  % ceil    tok/s";

fn run(args: Args) -> Result<bool, String> {
    let gpu = match Gpu::open() {
        Ok(g) => g,
        Err(OpenError::Missing(m)) => {
            eprintln!("rust-engine: {}", m);
            exit(2)
        }
        Err(OpenError::Failed(m)) => return Err(m),
    };
    let pol = api("gemvtune open", gemvtune::Policy::open(None, true))?;
    let mut eng = Engine { gpu, pol, from_cubin: 0, compiled: 0 };
    println!(
        "{}, {}, {} SMs; {}; cache {}{}; GEMV_FORCE_VARIANT={}",
        eng.gpu.name,
        eng.gpu.arch,
        eng.gpu.sms,
        gemvtune::version(),
        eng.pol.cache_path,
        eng.pol.cache_error.as_ref().map_or(String::new(), |e| format!(": {}", e)),
        std::env::var("GEMV_FORCE_VARIANT").unwrap_or_else(|_| "(unset)".to_string())
    );
    for w in &eng.pol.warnings {
        println!("warning: {}", w);
    }
    let ceiling = eng.ceiling()?;
    println!("read ceiling {:.0} GB/s (1 GiB streaming read, best median of 7 launch shapes)\n\n{}", ceiling, HEADER);
    let mut rng = weights::Rng::new(0x9e37_79b9_7f4a_7c15);
    let (mut table, mut failed) = (String::new(), 0);
    for f in &args.formats {
        let (t, n) = eng.format(f, &args, ceiling, &mut rng).map_err(|e| format!("{}: {}", f, e))?;
        table.push_str(&t);
        failed += n;
    }
    println!(
        "\nkernels: {} from stored cubins, {} compiled with NVRTC; {} check(s) failed\n\n{}\n{}",
        eng.from_cubin, eng.compiled, failed, HEADER, table
    );
    Ok(failed == 0)
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(m) => {
            eprintln!("rust-engine: {}", m);
            exit(2)
        }
    };
    match run(args) {
        Ok(true) => {}
        Ok(false) => exit(1),
        Err(m) => {
            eprintln!("rust-engine: {}", m);
            exit(1)
        }
    }
}
