//! Links the installed libalphamoe_router found by pkg-config (package
//! libalphamoe-router-dev). Runs the `pkg-config` program itself: the
//! crate has no dependencies.
use std::env;
use std::process::Command;

fn pkg_config(args: &[&str]) -> String {
    let program = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(&program)
        .args(args)
        .arg("alphamoe-router")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {} (install pkg-config)", program, e));
    if !output.status.success() {
        panic!(
            "{} {} alphamoe-router failed: {}\nInstall libalphamoe-router-dev (see README, Install), \
             or point PKG_CONFIG_PATH at the folder holding alphamoe-router.pc.",
            program,
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    String::from_utf8(output.stdout).expect("pkg-config printed non-UTF-8")
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");
    let version = pkg_config(&["--modversion"]);
    let version = version.trim();
    println!("cargo:version={}", version);
    // The crate mirrors the headers of its own version: an older library
    // would not know the fields and statuses it passes and expects.
    let number = |v: &str| -> Vec<u32> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    let crate_version = env!("CARGO_PKG_VERSION");
    if number(version) < number(crate_version) {
        panic!(
            "pkg-config finds libalphamoe-router {}, this crate needs {} or newer: install the \
             libalphamoe-router-dev of that version, or point PKG_CONFIG_PATH at it.",
            version, crate_version
        );
    }
    for flag in pkg_config(&["--libs"]).split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={}", lib);
        }
    }
}
