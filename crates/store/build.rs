// Migrations are embedded by `sqlx::migrate!`; rebuild when one changes.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
