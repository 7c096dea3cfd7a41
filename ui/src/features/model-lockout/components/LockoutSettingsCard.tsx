// The model lockout settings card, saved through model_lockout_patch with the version
// of the settings document the group belongs to.
import { useMemo } from "react";
import { withoutVersion, type Versioned } from "../../../api/versions";
import type { ModelLockoutPatch, ModelLockoutSettings } from "../../../ipc/bindings";
import type { RangeLookup } from "../../../shared/ranges";
import { SettingsCard } from "../../../shared/SettingsCard";
import type { FieldSection } from "../../../shared/settingsForm";
import { usePatchModelLockout, useReloadModelLockout } from "../api";

/** The card's root-shaped document (the version stays out of the group and its patch). */
const rootDoc = (settings: Versioned<ModelLockoutSettings>) => ({ modelLockout: withoutVersion(settings) });

const SECTIONS: FieldSection[] = [
  {
    fields: [
      { kind: "bool", path: "/modelLockout/enabled", label: "Enabled", help: "Master switch; off by default." },
      {
        kind: "intList",
        path: "/modelLockout/errorCodes",
        label: "Error codes",
        help: "Upstream statuses that lock a model, separated by commas.",
      },
      { kind: "int", path: "/modelLockout/baseCooldownMs", label: "Base cooldown (ms)", help: "First lockout." },
      {
        kind: "int",
        path: "/modelLockout/maxCooldownMs",
        label: "Max cooldown (ms)",
        help: "Lockout cap; at least the base cooldown.",
      },
      { kind: "int", path: "/modelLockout/maxBackoffSteps", label: "Max backoff steps", help: "Highest escalation step." },
      {
        kind: "bool",
        path: "/modelLockout/useExponentialBackoff",
        label: "Exponential backoff",
        help: "Double the lockout per repeated failure; otherwise every lockout lasts the base cooldown.",
      },
    ],
  },
];

export function LockoutSettingsCard({
  settings,
  defaults,
  ranges,
}: {
  settings: Versioned<ModelLockoutSettings>;
  defaults?: ModelLockoutSettings;
  ranges: RangeLookup;
}) {
  const patch = usePatchModelLockout();
  const reload = useReloadModelLockout();
  const doc = useMemo(() => rootDoc(settings), [settings]);
  const defaultsDoc = useMemo(() => (defaults ? { modelLockout: defaults } : undefined), [defaults]);
  return (
    <SettingsCard
      id="lockout"
      title="Model lockout settings"
      description="A model that fails with one of these statuses is locked on that connection (quota family for 429/402/403, the model for 404, the exact triple otherwise). A good response halves the failure count; at zero the lockout ends early."
      sections={SECTIONS}
      doc={doc}
      version={settings.version}
      defaults={defaultsDoc}
      ranges={ranges}
      basePath="/modelLockout"
      onSave={(groups, expectedVersion) =>
        patch.mutateAsync({ patch: groups.modelLockout as ModelLockoutPatch, expectedVersion })
      }
      onReload={async () => {
        const fresh = await reload();
        return { doc: rootDoc(fresh), version: fresh.version };
      }}
    />
  );
}
