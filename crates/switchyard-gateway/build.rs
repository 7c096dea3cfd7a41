fn main() {
    // `sqlx::migrate!` embeds the migrations at compile time; without this line cargo
    // would not rebuild the crate when a new migration file appears.
    println!("cargo:rerun-if-changed=../../migrations");
    // The `switchyard` binary's code segment starts on a 2 MB boundary in the file
    // and (the kernel honours the segment alignment when it places the executable)
    // in memory, so its first 2 MB chunk, where a profile-guided build's hot code
    // lies, can be moved onto one huge page at start (switchyard-huge-text). Costs
    // up to 2 MB of zero padding in the file per segment, nothing in memory.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=switchyard=-Wl,-z,max-page-size=0x200000");
        println!("cargo:rustc-link-arg-bin=switchyard=-Wl,-z,separate-code");
        // A post-link layout pass (BOLT, scripts/pgo-build.sh) moves whole functions
        // only when the link kept its relocations; the plain build has no use for them.
        println!("cargo:rerun-if-env-changed=SWITCHYARD_EMIT_RELOCS");
        if std::env::var_os("SWITCHYARD_EMIT_RELOCS").is_some_and(|v| v == "1") {
            println!("cargo:rustc-link-arg-bin=switchyard=-Wl,--emit-relocs");
        }
    }
}
