//! The tests and examples here find the libpsplice they were linked with,
//! as the core crate's own do: the core crate's run path is its own
//! targets' alone.

fn main() {
    println!("cargo:rerun-if-env-changed=PSPLICE_LIB_DIR");
    if let Some(dir) = std::env::var_os("PSPLICE_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.to_string_lossy());
    }
}
