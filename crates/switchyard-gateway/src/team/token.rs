//! The management token in team mode: one token for every replica. The database
//! keeps only its SHA-256 (settings key [`TOKEN_KEY`]); each replica checks
//! presented tokens against that hash, so a token given to any replica works on
//! all of them.
//!
//! At start: the first replica stores the hash of its own token; a later one adopts
//! the stored hash, unless it was given a token explicitly (`--management-token`),
//! which then replaces the team's (rotation, announced to the others).

use arc_swap::ArcSwap;
use subtle::ConstantTimeEq;
use switchyard_types::UnixMillis;

use crate::secrets::{KeyHash, hash_key, parse_hash_hex};
use crate::store::{Store, StoreError, StoreResult};

/// Settings key of the team's token hash (hex).
pub const TOKEN_KEY: &str = "team.managementTokenSha256";

/// The hash presented management tokens are checked against.
pub struct TokenCheck {
    hash: ArcSwap<KeyHash>,
}

impl TokenCheck {
    /// Checks against `token`'s hash.
    pub fn new(token: &str) -> TokenCheck {
        TokenCheck { hash: ArcSwap::from_pointee(hash_key(token)) }
    }

    /// Whether `presented` is the management token (constant time).
    pub fn matches(&self, presented: &str) -> bool {
        hash_key(presented).ct_eq(self.hash.load().as_ref()).into()
    }

    fn set(&self, hash: KeyHash) {
        self.hash.store(std::sync::Arc::new(hash));
    }

    /// Re-reads the team's hash (another replica rotated it).
    pub async fn reload(&self, store: &Store) -> StoreResult<()> {
        if let Some(hash) = store.get_setting::<String>(TOKEN_KEY).await?.as_deref().and_then(parse_hash_hex)
        {
            self.set(hash);
        }
        Ok(())
    }
}

/// Whose token this replica checks against after [`share`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shared {
    /// Its own (it stored it first, or it matched the team's).
    Own,
    /// Its own, given explicitly, replacing the team's (announce a reload).
    Rotated,
    /// The team's, set by another replica: this replica's own token does not work.
    Adopted,
}

/// Makes `check` follow the team's token (see the module docs).
pub async fn share(
    store: &Store,
    check: &TokenCheck,
    local: &str,
    explicit: bool,
    now: UnixMillis,
) -> StoreResult<Shared> {
    let mine = hex::encode(hash_key(local));
    for _ in 0..3 {
        match store.get_setting_versioned::<String>(TOKEN_KEY).await? {
            None => match store.put_setting(TOKEN_KEY, &mine, now, Some(0)).await {
                Ok(()) => return Ok(Shared::Own),
                // Another replica stored its hash first: read it.
                Err(StoreError::Stale { .. }) => continue,
                Err(e) => return Err(e),
            },
            Some((stored, _)) if stored == mine => return Ok(Shared::Own),
            Some((_, version)) if explicit => {
                store.put_setting(TOKEN_KEY, &mine, now, Some(version)).await?;
                return Ok(Shared::Rotated);
            }
            Some((stored, _)) => {
                if let Some(hash) = parse_hash_hex(&stored) {
                    check.set(hash);
                    return Ok(Shared::Adopted);
                }
                // Unreadable: replace it with ours.
                store.put_setting(TOKEN_KEY, &mine, now, None).await?;
                return Ok(Shared::Own);
            }
        }
    }
    Ok(Shared::Own)
}
