//! With the `python` feature the `alcc` binary links libpython: record the directory of the
//! libpython it was linked against as its run-time search path, so that it loads that same
//! library (a pyenv or /usr/local Python's as well as Debian's) without LD_LIBRARY_PATH.

fn main() {
    #[cfg(feature = "python")]
    if let Some(dir) = pyo3_build_config::get().lib_dir() {
        println!("cargo:rustc-link-arg-bins=-Wl,-rpath,{dir}");
    }
}
