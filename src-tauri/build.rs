fn main() {
    tauri_build::build();
    // As for `switchyard` (crates/switchyard-gateway/build.rs): the code segment
    // starts on a 2 MB boundary, so the chunk holding the hosted gateway's hot code
    // can be moved onto a huge page at start (switchyard_gateway::hot_text). Up to
    // 2 MB of zero padding in the file per segment, nothing in memory.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=switchyard-desktop=-Wl,-z,max-page-size=0x200000");
        println!("cargo:rustc-link-arg-bin=switchyard-desktop=-Wl,-z,separate-code");
    }
}
