//! Compiles the Nacos gRPC protocol (`proto/nacos_grpc_service.proto`) with
//! tonic. The replicated data's schema is compiled by `crates/core`, the
//! cluster service by `crates/raft`. Also makes a change under
//! `web-console/` rebuild the binary that embeds it.
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
    println!("cargo:rerun-if-changed=proto/nacos_grpc_service.proto");
    // The console's files are embedded (rust-embed): a file added or
    // renamed (the bundle's names hold its hash) must rebuild the binary.
    println!("cargo:rerun-if-changed=web-console");
    // Smaller per-call buffers than tonic's default: see src/grpc/codec.rs.
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .codec_path("crate::grpc::codec::SmallBufferCodec")
        .compile_protos(&["proto/nacos_grpc_service.proto"], &["proto"])?;
    Ok(())
}
