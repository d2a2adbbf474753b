//! The engine finds libgemvtune.so beside itself ($ORIGIN) or where the
//! gemvtune crate linked it from (GEMVTUNE_LIB_DIR).
fn main() {
    println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN");
    if let Ok(dir) = std::env::var("DEP_GEMVTUNE_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
    }
}
