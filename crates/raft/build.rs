//! Compiles the internal cluster service (`proto/cluster.proto`) with tonic.
//!
//! A fresh machine has no system `protoc`, so the one shipped by the
//! `protoc-bin-vendored` crate is used unless `PROTOC` is already set.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os("PROTOC").is_none() {
        let protoc = protoc_bin_vendored::protoc_bin_path()?;
        // SAFETY: build scripts are single-threaded; nothing else reads the
        // environment concurrently.
        unsafe { std::env::set_var("PROTOC", protoc) };
    }
    println!("cargo:rerun-if-changed=../../proto/cluster.proto");
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_protos(&["../../proto/cluster.proto"], &["../../proto"])?;
    Ok(())
}
