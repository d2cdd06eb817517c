//! Compiles the replicated data's schema (`proto/command.proto`,
//! `proto/snapshot.proto`) with prost.
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
    println!("cargo:rerun-if-changed=../../proto/command.proto");
    println!("cargo:rerun-if-changed=../../proto/snapshot.proto");
    prost_build::Config::new()
        .type_attribute(".", "#[derive(serde::Serialize, serde::Deserialize)]")
        .compile_protos(
            &["../../proto/command.proto", "../../proto/snapshot.proto"],
            &["../../proto"],
        )?;
    Ok(())
}
