//! Gives `libstatestore.so` its soname: a Rust cdylib has none by default (cargo#5045), and a
//! program linked against a library without one records the build path and fails to load
//! from an install prefix.

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" || target_os == "android" || target_os.ends_with("bsd") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libstatestore.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
