// `sqlx::migrate!` embeds the migrations at compile time; without this line cargo
// would not rebuild the crate when a new migration file appears.
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
