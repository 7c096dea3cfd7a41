//! The gateway's hot code moved onto huge pages at start (ADR 0016), for both
//! binaries that host the gateway: `switchyard serve` and the desktop app.
//!
//! The chunks moved (switchyard-huge-text) are the one holding the request path
//! (a profile-guided build's hot Rust code, gathered by the linker's sort, jemalloc's
//! fast paths among it) and the one holding jemalloc's `mallctl`, an entry point of
//! the object with its slow paths (thread-cache refills and collection), which run
//! on most requests at an agent's pace and, being C, lie after the Rust code where
//! the linker's sort cannot move them. After BOLT, which moves all of that into a
//! segment of its own, `mallctl` stays behind as cold code and the mover leaves its
//! chunk alone. A binary's build script aligns its code segment to 2 MB for this
//! (`-z max-page-size=0x200000`, `-z separate-code`); without that the mover
//! moves nothing and says why.

/// The environment variable that turns the move off (`false`), read by both
/// binaries (`switchyard serve --huge-text` reads it through its flag).
pub const ENV: &str = "SWITCHYARD_HUGE_TEXT";

/// The setting in [`ENV`]: `true` (also when unset) or `false`, as the CLI's flag
/// takes it; any other value is an error naming it.
pub fn enabled_from_env() -> Result<bool, String> {
    parse_enabled(std::env::var_os(ENV).as_deref())
}

fn parse_enabled(value: Option<&std::ffi::OsStr>) -> Result<bool, String> {
    match value.map(|v| v.to_str()) {
        None => Ok(true),
        Some(Some("true")) => Ok(true),
        Some(Some("false")) => Ok(false),
        Some(_) => Err(format!("{ENV}={:?} is not true or false", value.unwrap_or_default())),
    }
}

/// Moves the hot code onto huge pages when `enabled`, and says what happened (the
/// CLI's banner, the desktop app's log). Call it before the lanes start, so nothing
/// else runs the moved code while it moves (it would be safe anyway: the bytes
/// stay the same).
pub fn move_hot_text(enabled: bool) -> String {
    use switchyard_huge_text::Anchor;
    if !enabled {
        return format!("hot code left on 4 KB pages: turned off (--huge-text false, {ENV}=false)");
    }
    let request_path = Anchor { name: "the request path", address: crate::proxy::hot_path_anchor() };
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    let anchors = {
        let mallctl: unsafe extern "C" fn(_, _, _, _, _) -> _ = tikv_jemalloc_sys::mallctl;
        [request_path, Anchor { name: "jemalloc", address: mallctl as usize }]
    };
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let anchors = [request_path];
    switchyard_huge_text::move_hot_text(&anchors).to_string()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;

    #[test]
    fn the_setting_is_on_unless_it_says_false_and_a_typo_is_named() {
        assert_eq!(parse_enabled(None), Ok(true));
        assert_eq!(parse_enabled(Some(OsStr::new("true"))), Ok(true));
        assert_eq!(parse_enabled(Some(OsStr::new("false"))), Ok(false));
        let typo = parse_enabled(Some(OsStr::new("off")));
        assert_eq!(typo, Err("SWITCHYARD_HUGE_TEXT=\"off\" is not true or false".to_owned()));
    }

    #[test]
    fn turned_off_it_moves_nothing_and_says_so() {
        let said = move_hot_text(false);
        assert!(said.starts_with("hot code left on 4 KB pages: turned off"), "{said}");
    }
}
