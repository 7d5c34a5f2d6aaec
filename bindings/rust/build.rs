//! Finds libpsplice: PSPLICE_LIB_DIR (a build tree such as the repository's
//! build/), else pkg-config run as a command, else the linker's own paths.

use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=PSPLICE_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Some(dir) = env::var_os("PSPLICE_LIB_DIR") {
        let dir = dir.to_string_lossy().into_owned();
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:rustc-link-lib=dylib=psplice");
        // The tests and examples of this package find the library they were
        // linked with without LD_LIBRARY_PATH; crates that depend on this one
        // are not affected.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        return;
    }
    if from_pkg_config() {
        return;
    }
    println!("cargo:rustc-link-lib=dylib=psplice");
}

/// Passes on what `pkg-config --libs psplice` says; false when pkg-config
/// is missing or does not know the library.
fn from_pkg_config() -> bool {
    let out = match Command::new("pkg-config")
        .args(["--libs", "psplice"])
        .output()
    {
        Ok(out) if out.status.success() => out,
        _ => return false,
    };
    let libs = String::from_utf8_lossy(&out.stdout).into_owned();
    for word in libs.split_whitespace() {
        if let Some(dir) = word.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(lib) = word.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={lib}");
        }
    }
    true
}
