// The Cooldown Manager's settings: stream stall cooldown and the OAuth / API-key
// connection cooldown base and backoff steps (saved through resilience_patch).
import type { Versioned } from "../../../api/versions";
import type { ResilienceSettings } from "../../../ipc/bindings";
import type { RangeLookup } from "../../../shared/ranges";
import { SettingsCard } from "../../../shared/SettingsCard";
import type { FieldSection } from "../../../shared/settingsForm";
import { usePatchResilience, useReloadResilience } from "../api";

const SECTIONS: FieldSection[] = [
  {
    fields: [
      {
        kind: "bool",
        path: "/streamStallCooldown/enabled",
        label: "Cool down after a stream stall",
        help: "A stalled stream always records the error; with this on it also cools the connection.",
      },
    ],
  },
  {
    title: "OAuth connections",
    fields: [
      { kind: "int", path: "/connectionCooldown/oauth/baseCooldownMs", label: "Base cooldown (ms)" },
      { kind: "int", path: "/connectionCooldown/oauth/maxBackoffSteps", label: "Max backoff steps" },
    ],
  },
  {
    title: "API-key connections",
    fields: [
      { kind: "int", path: "/connectionCooldown/apikey/baseCooldownMs", label: "Base cooldown (ms)" },
      { kind: "int", path: "/connectionCooldown/apikey/maxBackoffSteps", label: "Max backoff steps" },
    ],
  },
];

export function CooldownSettingsCard({
  settings,
  defaults,
  ranges,
}: {
  settings: Versioned<ResilienceSettings>;
  defaults?: ResilienceSettings;
  ranges: RangeLookup;
}) {
  const patch = usePatchResilience();
  const reload = useReloadResilience();
  return (
    <SettingsCard
      id="cooldown-settings"
      title="Cooldown settings"
      description="A failing connection cools for base × 2^level; each further failure raises the level up to the max backoff steps."
      sections={SECTIONS}
      doc={settings}
      version={settings.version}
      defaults={defaults}
      ranges={ranges}
      onSave={(groups, expectedVersion) => patch.mutateAsync({ groups, expectedVersion })}
      onReload={async () => {
        const fresh = await reload();
        return { doc: fresh, version: fresh.version };
      }}
    />
  );
}
