//! One-click agent setup, reversible (issue 13): point Claude Code or Codex CLI at
//! this gateway by editing the agent's own config file, and undo it exactly.
//!
//! - Claude Code: `~/.claude/settings.json`, its `env` block gets
//!   `ANTHROPIC_BASE_URL` and `ANTHROPIC_AUTH_TOKEN` (a client key made for it);
//!   an `ANTHROPIC_API_KEY` there would be sent instead, so it is removed.
//! - Codex CLI: `$CODEX_HOME/config.toml` (default `~/.codex`): `model_provider =
//!   "switchyard"` and a `[model_providers.switchyard]` table (Responses API, the
//!   key as `experimental_bearer_token`, so the desktop app and IDE extension work
//!   too). The rest of the file, comments included, is kept (`toml_edit`).
//!
//! Before the first change the file's exact bytes (or its absence) are saved next
//! to it in `<file>.switchyard-backup.json`; undo writes them back byte for byte
//! (or removes the file) and deletes the backup. Running setup again keeps the
//! first backup. A file that cannot be parsed is never touched: the error says why.
//! If the file changed after setup wrote it (the user, or the agent itself), undo
//! refuses rather than lose those edits, unless forced. A symlinked file is
//! written through its link, so the link stays.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use switchyard_types::settings::EnvSource;

/// The agents setup knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
}

impl Agent {
    /// The id used in URLs and on the command line.
    pub fn id(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
        }
    }

    /// From its id.
    pub fn parse(id: &str) -> Option<Agent> {
        match id {
            "claude-code" => Some(Agent::ClaudeCode),
            "codex" => Some(Agent::Codex),
            _ => None,
        }
    }

    /// The config file it reads, for the user in `env`.
    pub fn config_path(self, env: &dyn EnvSource) -> PathBuf {
        let home =
            env.var("HOME").map(PathBuf::from).or_else(dirs::home_dir).unwrap_or_else(|| PathBuf::from("."));
        match self {
            Agent::ClaudeCode => home.join(".claude").join("settings.json"),
            Agent::Codex => env
                .var("CODEX_HOME")
                .filter(|v| !v.trim().is_empty())
                .map_or_else(|| home.join(".codex"), PathBuf::from)
                .join("config.toml"),
        }
    }
}

/// Why setup or undo refused.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The agent's file exists but is not what it should be.
    #[error(
        "{path} cannot be parsed ({why}); Switchyard left it untouched: fix or move it, then run setup again"
    )]
    Unparsable {
        /// The file.
        path: String,
        /// The parser's complaint.
        why: String,
    },
    /// Reading or writing failed.
    #[error("cannot {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Undo without a setup to undo.
    #[error("{path} was not set up by Switchyard (no backup next to it), so there is nothing to undo")]
    NothingToUndo {
        /// The file.
        path: String,
    },
    /// Undo of a file edited since setup wrote it.
    #[error(
        "{path} changed after Switchyard set it up; undoing would lose those edits. Remove Switchyard's \
         lines by hand and delete {backup}, or undo anyway (force) to restore the file as it was before setup"
    )]
    ChangedSinceSetup {
        /// The file.
        path: String,
        /// Its backup.
        backup: String,
    },
}

/// What was saved before the first change.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Backup {
    /// The file's exact text before setup; `None`: there was no file.
    pub original: Option<String>,
    /// The client key setup created, to delete on undo.
    pub key_id: Option<String>,
    /// SHA-256 (hex) of the text setup last wrote, to tell whether the file changed since.
    #[serde(default)]
    pub written_sha256: Option<String>,
}

fn sha256_hex(text: &[u8]) -> String {
    crate::secrets::hash_key_hex_bytes(text)
}

/// Where writes to `path` go: through a symlink to its target, so the link stays.
fn resolved(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
        }
        _ => path.to_owned(),
    }
}

/// The backup's path.
pub fn backup_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".switchyard-backup.json");
    file.with_file_name(name)
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> SetupError + 'a {
    move |source| SetupError::Io { what, path: path.display().to_string(), source }
}

fn unparsable(path: &Path, why: impl std::fmt::Display) -> SetupError {
    SetupError::Unparsable { path: path.display().to_string(), why: why.to_string() }
}

fn read_existing(file: &Path) -> Result<Option<String>, SetupError> {
    match std::fs::read(file) {
        Ok(bytes) => String::from_utf8(bytes).map(Some).map_err(|_| unparsable(file, "it is not UTF-8 text")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("read", file)(e)),
    }
}

/// The saved backup of `file`, if setup ran on it.
pub fn read_backup(file: &Path) -> Result<Option<Backup>, SetupError> {
    let path = backup_path(file);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| unparsable(&path, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("read", &path)(e)),
    }
}

/// Writes `text` to `path` through a temporary file and a rename (an agent reading
/// it meanwhile sees the old or the new file, never half of one).
fn write_atomically(path: &Path, text: &[u8]) -> Result<(), SetupError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io("create the folder of", path))?;
    }
    let mut tmp = path.as_os_str().to_os_string();
    tmp.push(".switchyard-tmp");
    let tmp = PathBuf::from(tmp);
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // It holds a client key: private from its first byte.
        options.mode(0o600);
    }
    let mut file = options.open(&tmp).map_err(io("create", &tmp))?;
    std::io::Write::write_all(&mut file, text).map_err(io("write", &tmp))?;
    file.sync_all().map_err(io("write", &tmp))?;
    std::fs::rename(&tmp, path).map_err(io("replace", path))
}

/// Claude Code's settings with the gateway in its `env` block.
fn claude_code(existing: Option<&str>, path: &Path, base_url: &str, key: &str) -> Result<String, SetupError> {
    let mut doc: serde_json::Value = match existing {
        Some(text) if !text.trim().is_empty() => {
            serde_json::from_str(text).map_err(|e| unparsable(path, e))?
        }
        _ => serde_json::json!({}),
    };
    let Some(root) = doc.as_object_mut() else { return Err(unparsable(path, "it is not a JSON object")) };
    let env = root.entry("env").or_insert_with(|| serde_json::json!({}));
    let Some(env) = env.as_object_mut() else { return Err(unparsable(path, "its \"env\" is not an object")) };
    env.insert("ANTHROPIC_BASE_URL".to_owned(), base_url.into());
    env.insert("ANTHROPIC_AUTH_TOKEN".to_owned(), key.into());
    env.remove("ANTHROPIC_API_KEY");
    let mut text = serde_json::to_string_pretty(&doc).map_err(|e| unparsable(path, e))?;
    text.push('\n');
    Ok(text)
}

/// Codex's config with the gateway as its model provider.
fn codex(existing: Option<&str>, path: &Path, base_url: &str, key: &str) -> Result<String, SetupError> {
    let mut doc: toml_edit::DocumentMut = existing
        .unwrap_or_default()
        .parse()
        .map_err(|e: toml_edit::TomlError| unparsable(path, e.message().to_owned()))?;
    doc["model_provider"] = toml_edit::value("switchyard");
    let providers = doc.entry("model_providers").or_insert_with(|| {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        toml_edit::Item::Table(t)
    });
    let Some(providers) = providers.as_table_mut() else {
        return Err(unparsable(path, "its model_providers is not a table"));
    };
    let mut provider = toml_edit::Table::new();
    provider["name"] = toml_edit::value("Switchyard");
    provider["base_url"] = toml_edit::value(format!("{base_url}/v1"));
    provider["wire_api"] = toml_edit::value("responses");
    provider["experimental_bearer_token"] = toml_edit::value(key);
    providers.insert("switchyard", toml_edit::Item::Table(provider));
    Ok(doc.to_string())
}

/// What setup did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The agent's file.
    pub path: PathBuf,
    /// Where its previous state is kept.
    pub backup: PathBuf,
    /// A key was needed: setup had not run on this file before.
    pub first_time: bool,
}

/// Checks that `agent`'s file can be edited, before a key is made for it.
pub fn check(agent: Agent, env: &dyn EnvSource) -> Result<(), SetupError> {
    let path = agent.config_path(env);
    let existing = read_existing(&path)?;
    read_backup(&path)?;
    let _ = edited(agent, existing.as_deref(), &path, "http://127.0.0.1:1", "check")?;
    Ok(())
}

fn edited(
    agent: Agent,
    existing: Option<&str>,
    path: &Path,
    base_url: &str,
    key: &str,
) -> Result<String, SetupError> {
    match agent {
        Agent::ClaudeCode => claude_code(existing, path, base_url, key),
        Agent::Codex => codex(existing, path, base_url, key),
    }
}

/// The client key an earlier setup of this file made, if any (reused by a re-run).
pub fn previous_key(agent: Agent, env: &dyn EnvSource) -> Result<Option<String>, SetupError> {
    Ok(read_backup(&agent.config_path(env))?.and_then(|b| b.key_id))
}

/// Points `agent` at `base_url` with client `key` (whose id is `key_id`).
pub fn apply(
    agent: Agent,
    env: &dyn EnvSource,
    base_url: &str,
    key: &str,
    key_id: &str,
) -> Result<Applied, SetupError> {
    let path = agent.config_path(env);
    let existing = read_existing(&path)?;
    let text = edited(agent, existing.as_deref(), &path, base_url, key)?;
    let backup = backup_path(&path);
    let earlier = read_backup(&path)?;
    let first_time = earlier.is_none();
    // The first backup's original is kept; the key is always the one now in the file.
    let original = match earlier {
        Some(b) => b.original,
        None => existing,
    };
    let saved = Backup {
        original,
        key_id: Some(key_id.to_owned()),
        written_sha256: Some(sha256_hex(text.as_bytes())),
    };
    let json = serde_json::to_vec_pretty(&saved).map_err(|e| unparsable(&backup, e))?;
    write_atomically(&backup, &json)?;
    write_atomically(&resolved(&path), text.as_bytes())?;
    Ok(Applied { path, backup, first_time })
}

/// What undo did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undone {
    /// The agent's file.
    pub path: PathBuf,
    /// The file was put back as it was (`false`: it did not exist and was removed).
    pub restored: bool,
    /// The client key setup had made, to delete.
    pub key_id: Option<String>,
}

/// Puts `agent`'s file back exactly as it was before the first setup; refuses
/// when it changed since setup wrote it, unless `force`.
pub fn undo(agent: Agent, env: &dyn EnvSource, force: bool) -> Result<Undone, SetupError> {
    let path = agent.config_path(env);
    let Some(saved) = read_backup(&path)? else {
        return Err(SetupError::NothingToUndo { path: path.display().to_string() });
    };
    let now = read_existing(&path)?;
    let edited = match (&saved.written_sha256, &now) {
        (Some(written), Some(text)) => *written != sha256_hex(text.as_bytes()),
        (Some(_), None) => true,
        (None, _) => false,
    };
    if edited && !force {
        return Err(SetupError::ChangedSinceSetup {
            path: path.display().to_string(),
            backup: backup_path(&path).display().to_string(),
        });
    }
    let restored = match &saved.original {
        Some(text) => {
            write_atomically(&resolved(&path), text.as_bytes())?;
            true
        }
        None => {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("remove", &path)(e)),
            }
            false
        }
    };
    let backup = backup_path(&path);
    std::fs::remove_file(&backup).map_err(io("remove", &backup))?;
    Ok(Undone { path, restored, key_id: saved.key_id })
}

#[cfg(test)]
mod tests {
    use switchyard_types::settings::MapEnv;

    use super::*;

    fn env(home: &Path) -> MapEnv {
        MapEnv::from_pairs([("HOME", home.to_str().unwrap_or_default())])
    }

    #[test]
    fn claude_code_settings_get_the_env_block_and_undo_restores_the_bytes() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let env = env(dir.path());
        let path = Agent::ClaudeCode.config_path(&env);
        std::fs::create_dir_all(path.parent().unwrap_or(dir.path())).unwrap_or_else(|e| panic!("{e}"));
        let original = "{\n  \"model\": \"opus\",\n  \"env\": {\"ANTHROPIC_API_KEY\": \"sk-ant-mine\", \"FOO\": \"1\"}\n}\n";
        std::fs::write(&path, original).unwrap_or_else(|e| panic!("{e}"));
        let done = apply(Agent::ClaudeCode, &env, "http://127.0.0.1:7821", "sy-key", "k1");
        assert!(done.as_ref().is_ok_and(|d| d.first_time), "{done:?}");
        let now: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap_or_default()).unwrap_or_default();
        assert_eq!(
            now,
            serde_json::json!({"model": "opus", "env": {
                "FOO": "1", "ANTHROPIC_BASE_URL": "http://127.0.0.1:7821", "ANTHROPIC_AUTH_TOKEN": "sy-key"}})
        );
        // Again: the first backup is kept, so undo still goes back to the original.
        let again = apply(Agent::ClaudeCode, &env, "http://127.0.0.1:7900", "sy-key", "k1");
        assert!(again.is_ok_and(|d| !d.first_time));
        assert_eq!(previous_key(Agent::ClaudeCode, &env).ok().flatten().as_deref(), Some("k1"));
        let undone = undo(Agent::ClaudeCode, &env, false);
        assert!(undone.as_ref().is_ok_and(|u| u.restored && u.key_id.as_deref() == Some("k1")), "{undone:?}");
        assert_eq!(std::fs::read_to_string(&path).unwrap_or_default(), original, "byte for byte");
        assert!(!backup_path(&path).exists());
        assert!(matches!(undo(Agent::ClaudeCode, &env, false), Err(SetupError::NothingToUndo { .. })));
    }

    #[test]
    fn codex_config_keeps_its_comments_and_a_missing_file_is_removed_again() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let env = env(dir.path());
        let path = Agent::Codex.config_path(&env);
        assert_eq!(path, dir.path().join(".codex").join("config.toml"));
        assert!(apply(Agent::Codex, &env, "http://127.0.0.1:7821", "sy-key", "k2").is_ok());
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let parsed: toml::Table = toml::from_str(&text).unwrap_or_default();
        assert_eq!(parsed["model_provider"].as_str(), Some("switchyard"));
        let p = &parsed["model_providers"]["switchyard"];
        assert_eq!(p["base_url"].as_str(), Some("http://127.0.0.1:7821/v1"));
        assert_eq!(p["wire_api"].as_str(), Some("responses"));
        assert_eq!(p["experimental_bearer_token"].as_str(), Some("sy-key"));
        assert!(undo(Agent::Codex, &env, false).is_ok_and(|u| !u.restored));
        assert!(!path.exists(), "there was no file before");

        let original = "# my settings\nmodel = \"gpt-5.5\" # favourite\n\n[analytics]\nenabled = false\n";
        std::fs::write(&path, original).unwrap_or_else(|e| panic!("{e}"));
        assert!(apply(Agent::Codex, &env, "http://127.0.0.1:7821", "sy-key", "k2").is_ok());
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(text.starts_with("# my settings\nmodel = \"gpt-5.5\" # favourite\n"), "{text}");
        assert!(undo(Agent::Codex, &env, false).is_ok());
        assert_eq!(std::fs::read_to_string(&path).unwrap_or_default(), original);
    }

    #[test]
    fn undo_refuses_to_lose_edits_made_after_setup_unless_forced_and_keeps_a_symlink() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let env = env(dir.path());
        let path = Agent::ClaudeCode.config_path(&env);
        std::fs::create_dir_all(path.parent().unwrap_or(dir.path())).unwrap_or_else(|e| panic!("{e}"));
        // The settings live elsewhere (a dotfiles repository) behind a symlink.
        let real = dir.path().join("dotfiles-settings.json");
        std::fs::write(&real, "{}\n").unwrap_or_else(|e| panic!("{e}"));
        #[cfg(unix)]
        std::os::unix::fs::symlink(&real, &path).unwrap_or_else(|e| panic!("{e}"));
        assert!(apply(Agent::ClaudeCode, &env, "http://127.0.0.1:7821", "sy-key", "k").is_ok());
        assert!(std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()), "the link stays");
        assert!(std::fs::read_to_string(&real).unwrap_or_default().contains("ANTHROPIC_BASE_URL"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&real).map(|m| m.permissions().mode() & 0o777).unwrap_or_default();
            assert_eq!(mode, 0o600, "it holds a key");
        }
        // The user edits the file after setup.
        let edited = std::fs::read_to_string(&real).unwrap_or_default().replace("{", "{\n  \"hooks\": {},");
        std::fs::write(&real, &edited).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(undo(Agent::ClaudeCode, &env, false), Err(SetupError::ChangedSinceSetup { .. })));
        assert_eq!(std::fs::read_to_string(&real).unwrap_or_default(), edited, "left alone");
        assert!(undo(Agent::ClaudeCode, &env, true).is_ok_and(|u| u.restored));
        assert_eq!(std::fs::read_to_string(&real).unwrap_or_default(), "{}\n");
        assert!(std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()));
    }

    #[test]
    fn an_unparsable_file_is_never_touched() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let env = env(dir.path());
        for (agent, junk) in [(Agent::ClaudeCode, "{ not json"), (Agent::Codex, "model = = 1")] {
            let path = agent.config_path(&env);
            std::fs::create_dir_all(path.parent().unwrap_or(dir.path())).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(&path, junk).unwrap_or_else(|e| panic!("{e}"));
            let refused = check(agent, &env);
            assert!(matches!(refused, Err(SetupError::Unparsable { .. })), "{refused:?}");
            assert!(apply(agent, &env, "http://x", "k", "id").is_err());
            assert_eq!(std::fs::read_to_string(&path).unwrap_or_default(), junk);
            assert!(!backup_path(&path).exists());
        }
        let env = MapEnv::from_pairs([("HOME", "/h"), ("CODEX_HOME", "/c")]);
        assert_eq!(Agent::Codex.config_path(&env), PathBuf::from("/c/config.toml"));
    }
}
