//! Test driver of the Rust bindings: answers what libgemvtune/abi_test.go
//! asks, in the canonical form abi_check.c prints, so that the test
//! compares this crate with the Go policy byte for byte.
//!
//!     abi_driver lookup CACHE|- FLAGS QUERIES
//!     abi_driver source ARCH FORMAT ID
//!     abi_driver launch FORMAT ID ROWS COLS
//!     abi_driver repack FORMAT LAYOUT ROWS COLS IN OUT
//!     abi_driver reference FORMAT ROWS COLS RAW X OUT

use gemvtune::{Choice, Policy};
use std::io::Write;
use std::process::exit;

fn bits(d: f64) -> String {
    format!("{:016x}", d.to_bits())
}

fn b(v: bool) -> i32 {
    v as i32
}

fn canonical(st: i32, err: &str, c: &Choice) -> String {
    let p = c.params;
    let cub = c.cubin.as_ref().map_or("-".to_string(), |v| v.iter().map(|x| format!("{:02x}", x)).collect());
    let join = |v: &[u32; 3]| format!("{},{},{}", v[0], v[1], v[2]);
    let fields = [
        st.to_string(),
        err.to_string(),
        c.id.clone(),
        c.source.clone(),
        c.reason.clone(),
        c.class_name.clone(),
        format!("{},{},{},{},{},{},{},{}", p.r, p.f, p.u, p.s, p.w, p.g, p.l, p.a),
        c.layout.to_string(),
        c.layout_name.clone(),
        cub,
        c.cubin.as_ref().map_or(0, |v| v.len()).to_string(),
        c.entry.clone(),
        join(&c.grid),
        join(&c.block),
        c.shared_bytes.to_string(),
        b(c.needs_shared_optin).to_string(),
        b(c.pdl_supported).to_string(),
        b(c.pdl_pays).to_string(),
        bits(c.error_bound),
        b(c.has_evidence).to_string(),
        bits(c.median_us),
        bits(c.gbs),
        bits(c.pct_ceiling),
        bits(c.speedup),
        bits(c.p_value),
        bits(c.pdl_us),
        c.gpu_name.clone(),
        c.tuned_shape.clone(),
        c.tuned_unix.to_string(),
        c.pdl_shared_bytes.to_string(),
        b(c.pdl_needs_shared_optin).to_string(),
    ];
    fields.join("|")
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| fail(&format!("{}: {}", path, e)))
}

fn write(path: &str, data: &[u8]) {
    std::fs::write(path, data).unwrap_or_else(|e| fail(&format!("{}: {}", path, e)))
}

fn fail(msg: &str) -> ! {
    eprintln!("abi_driver: {}", msg);
    exit(1)
}

fn num<T: std::str::FromStr>(s: &str) -> T {
    s.parse().unwrap_or_else(|_| fail(&format!("not a number: {:?}", s)))
}

fn lookup(cache: &str, flags: &str, queries: &str) {
    let cont = num::<u32>(flags) & 1 != 0;
    let pol = match Policy::open(if cache == "-" { None } else { Some(cache) }, cont) {
        Ok(p) => p,
        Err(e) => {
            println!("open|{}|{}|null", e.status, e);
            return;
        }
    };
    println!("open|0|{}|{}", pol.cache_path, pol.cache_error.as_deref().unwrap_or("-"));
    for w in &pol.warnings {
        println!("warning|{}", w);
    }
    for line in String::from_utf8_lossy(&read(queries)).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 5 {
            fail(&format!("query {:?}: want ARCH GPU FORMAT ROWS COLS", line));
        }
        let gpu = if f[1] == "-" { None } else { Some(f[1].replace('_', " ")) };
        let line = match pol.lookup(f[0], gpu.as_deref(), f[2], num(f[3]), num(f[4])) {
            Ok(c) => canonical(0, "", &c),
            Err(e) => canonical(e.status, &e.message, e.choice.as_deref().unwrap_or(&Choice::default())),
        };
        println!("{}", line);
    }
}

fn source(arch: &str, format: &str, id: &str) {
    let pol = Policy::open(None, true).unwrap_or_else(|e| fail(&e.message));
    let out = match pol.source(arch, format, id) {
        Ok(s) => {
            let opts: String = s.options.iter().map(|o| format!("|{}", o)).collect();
            format!("0|{}|{}|{}{}\n{}", s.name, s.entry, s.options.len(), opts, s.code)
        }
        Err(e) => format!("{}|{}\n", e.status, e),
    };
    std::io::stdout().write_all(out.as_bytes()).unwrap_or_else(|e| fail(&e.to_string()));
}

fn launch(format: &str, id: &str, rows: &str, cols: &str) {
    match gemvtune::launch(format, id, num(rows), num(cols)) {
        Ok(l) => println!(
            "0|{},{},{}|{},{},{}|{}",
            l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], l.shared_bytes
        ),
        Err(e) => println!("{}|{}", e.status, e),
    }
}

fn repack(format: &str, layout: &str, rows: &str, cols: &str, src: &str, dst: &str) {
    let out =
        gemvtune::repack(format, num(layout), &read(src), num(rows), num(cols)).unwrap_or_else(|e| fail(&e.message));
    write(dst, &out);
}

fn reference(format: &str, rows: &str, cols: &str, src: &str, xfile: &str, dst: &str) {
    let x: Vec<f32> = read(xfile).chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let y = gemvtune::reference(format, &read(src), &x, num(rows), num(cols)).unwrap_or_else(|e| fail(&e.message));
    write(dst, &y.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
    match a.as_slice() {
        ["lookup", cache, flags, queries] => lookup(cache, flags, queries),
        ["source", arch, format, id] => source(arch, format, id),
        ["launch", format, id, rows, cols] => launch(format, id, rows, cols),
        ["repack", format, layout, rows, cols, src, dst] => repack(format, layout, rows, cols, src, dst),
        ["reference", format, rows, cols, src, x, dst] => reference(format, rows, cols, src, x, dst),
        _ => {
            eprintln!("usage: abi_driver lookup|source|launch|repack|reference ARGS (see the file's comment)");
            exit(2)
        }
    }
}
