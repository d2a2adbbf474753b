//! Links libgemvtune: $GEMVTUNE_LIB_DIR is the folder of libgemvtune.so
//! (built with `go build -buildmode=c-shared -o DIR/libgemvtune.so
//! ./libgemvtune`), else the linker's own search path. This crate's own
//! binaries (the ABI test driver) also get that folder as their run path.
fn main() {
    println!("cargo:rerun-if-env-changed=GEMVTUNE_LIB_DIR");
    if let Ok(dir) = std::env::var("GEMVTUNE_LIB_DIR") {
        println!("cargo:rustc-link-search=native={}", dir);
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir);
        println!("cargo:lib_dir={}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=gemvtune");
}
