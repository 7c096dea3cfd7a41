//! Resilience management operations (SPEC §7): settings, breakers, connection
//! cooldowns and model lockouts. Thin over the engine; terminal connection states are
//! never cleared here (only a credentials change or an operator reset lifts them).

use switchyard_types::ErrorCode;
use switchyard_types::api::Versioned;
use switchyard_types::resilience::{
    BreakerResetRequest, BreakerResetResult, ConnectionCooldownView, CooldownsClearRequest,
    CooldownsClearResult, LockoutClearRequest, LockoutClearResult, ModelLockoutView, ProviderBreakerView,
};
use switchyard_types::settings::{
    ModelLockoutPatch, ModelLockoutSettings, ResilienceSettings, ResilienceSettingsPatch, SettingsRanges,
};
use switchyard_types::status::ChangeTopic;

use super::{ManagementService, MgmtResult};
use crate::errors::GatewayError;

impl ManagementService {
    /// The effective resilience settings and the stored document's version. The
    /// version is read first: a concurrent write can then only make it look older
    /// than the settings (a needless `412`), never newer (a lost change).
    pub fn resilience_get(&self) -> Versioned<ResilienceSettings> {
        let version = self.resilience.version();
        Versioned { doc: (*self.resilience.settings()).clone(), version }
    }

    /// Applies a partial settings document; rejected whole on any issue, and with
    /// `412` when `expected` is not the stored version.
    pub async fn resilience_patch(
        &self,
        patch: ResilienceSettingsPatch,
        expected: Option<u64>,
    ) -> MgmtResult<Versioned<ResilienceSettings>> {
        let _writing = self.writing().await;
        let settings = self.resilience.patch_in(&self.store, patch, expected).await?;
        self.control.notify(ChangeTopic::Settings);
        Ok(Versioned { doc: (*settings).clone(), version: self.resilience.version() })
    }

    /// A dry run of [`ManagementService::resilience_patch`] (the config file checks
    /// before it writes): `Ok(None)` when applying `patch` would change nothing, `Err`
    /// with every issue. Stores nothing.
    pub async fn resilience_patch_preview(
        &self,
        patch: &ResilienceSettingsPatch,
    ) -> MgmtResult<Option<ResilienceSettings>> {
        self.resilience.preview_patch(patch).await
    }

    /// The settings as they would be with no stored document (built-in defaults
    /// under the environment's overrides): what "reset to defaults" restores.
    pub fn resilience_defaults(&self) -> ResilienceSettings {
        self.resilience.defaults()
    }

    /// The validator's ranges table, for forms.
    pub fn resilience_ranges(&self) -> SettingsRanges {
        SettingsRanges::current()
    }

    /// The model-lockout settings, with the version of the settings document they
    /// are part of.
    pub fn model_lockout_get(&self) -> Versioned<ModelLockoutSettings> {
        let version = self.resilience.version();
        Versioned { doc: self.resilience.settings().model_lockout.clone(), version }
    }

    /// Applies a partial model-lockout document (`412` when `expected` is not the
    /// settings document's version).
    pub async fn model_lockout_patch(
        &self,
        patch: ModelLockoutPatch,
        expected: Option<u64>,
    ) -> MgmtResult<Versioned<ModelLockoutSettings>> {
        let whole =
            ResilienceSettingsPatch { model_lockout: Some(patch), ..ResilienceSettingsPatch::default() };
        let _writing = self.writing().await;
        match self.resilience.patch_in(&self.store, whole, expected).await {
            Ok(s) => {
                self.control.notify(ChangeTopic::Settings);
                Ok(Versioned { doc: s.model_lockout.clone(), version: self.resilience.version() })
            }
            Err(mut e) => {
                // Report paths relative to the model-lockout document.
                for issue in &mut e.issues {
                    if let Some(rest) = issue.path.strip_prefix("/modelLockout") {
                        issue.path = rest.to_owned();
                    }
                }
                Err(e)
            }
        }
    }

    /// Every provider breaker.
    pub fn breakers(&self) -> Vec<ProviderBreakerView> {
        self.resilience.engine.breakers()
    }

    /// Resets one provider's breaker, or all.
    pub fn reset_breakers(&self, req: BreakerResetRequest) -> MgmtResult<BreakerResetResult> {
        let result = self.resilience.engine.reset_breakers(req.provider.as_deref());
        self.control.notify(ChangeTopic::Breakers);
        if let Some(p) = req.provider.filter(|_| result.reset_count == 0) {
            let known = self.resilience.engine.breakers().iter().any(|b| b.provider == p)
                || self.routing.load().by_provider.contains_key(&p);
            if !known {
                return Err(GatewayError::new(ErrorCode::NotFound, format!("provider '{p}' has no breaker")));
            }
        }
        Ok(result)
    }

    /// Connection cooldown states (all, or one provider's).
    pub fn cooldowns(&self, provider: Option<&str>) -> Vec<ConnectionCooldownView> {
        self.resilience.engine.cooldowns(provider)
    }

    /// Clears cooldowns by ids, all, or all of a provider; never terminal states.
    pub fn clear_cooldowns(&self, req: CooldownsClearRequest) -> MgmtResult<CooldownsClearResult> {
        if !req.all && req.connection_ids.is_empty() {
            return Err(GatewayError::validation(vec![switchyard_types::api::ValidationIssue {
                path: "/connectionIds".into(),
                message: "name at least one connection, or send {\"all\": true} (optionally with provider)"
                    .into(),
            }]));
        }
        let result = self.resilience.engine.clear_cooldowns(&req);
        self.control.notify(ChangeTopic::Cooldowns);
        if result.lockouts_cleared > 0 {
            self.control.notify(ChangeTopic::Lockouts);
        }
        Ok(result)
    }

    /// Active model lockouts.
    pub fn lockouts(&self) -> Vec<ModelLockoutView> {
        self.resilience.engine.lockouts()
    }

    /// Re-enables one model (on one connection, or every connection of the provider).
    pub fn clear_lockout(&self, req: LockoutClearRequest) -> MgmtResult<LockoutClearResult> {
        let cleared = self.resilience.engine.clear_lockout(&req);
        self.control.notify(ChangeTopic::Lockouts);
        if cleared == 0 {
            return Err(GatewayError::new(
                ErrorCode::NotFound,
                format!("no active lockout for {}/{} matches", req.provider, req.model),
            ));
        }
        Ok(LockoutClearResult { cleared })
    }
}
