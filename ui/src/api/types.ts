// The one management interface the UI talks to. Two adapters implement it: `ipcApi`
// (Tauri commands through the generated bindings) and `httpApi` (the REST twins).
// Every method resolves with the typed result or rejects with `ApiError`.
import type {
  AgentSetupResult,
  AgentSetupView,
  AgentUndoResult,
  AliasView,
  ApiKeyCreatedResult,
  ApiKeyCreateRequest,
  ApiKeyView,
  BreakerResetRequest,
  BreakerResetResult,
  ClaudeLoginImportRequest,
  ClaudeLoginImportResult,
  ComboView,
  ConnectionCooldownView,
  ConnectionCreateRequest,
  ConnectionPatch,
  ConnectionTestResult,
  ConnectionView,
  CooldownsClearRequest,
  CooldownsClearResult,
  DesktopPrefs,
  DesktopStatusView,
  GatewayStatusView,
  HealthView,
  LeaseReleased,
  LeasesView,
  LockoutClearRequest,
  LockoutClearResult,
  LogsQuery,
  ModelLockoutPatch,
  ModelLockoutSettings,
  ModelLockoutView,
  MonitoringSummaryView,
  ProviderBreakerView,
  ProviderPresetView,
  RateLimitsView,
  RequestDetailView,
  RequestEntryView,
  RequestLogEntryView,
  RequestsQuery,
  ResilienceSettings,
  ResilienceSettingsPatch,
  SessionPinsClear,
  SessionPinsCleared,
  SessionPinsView,
  SettingsRanges,
  Versioned,
} from "../ipc/bindings";
import type { ExpectedVersion } from "./versions";

/** Change events pushed by the gateway (tauri-specta names; identical SSE event names). */
export const EVENT_NAMES = [
  "breakersChanged",
  "cooldownsChanged",
  "lockoutsChanged",
  "lanesChanged",
  "connectionsChanged",
  "settingsChanged",
  "routingChanged",
  "leasesChanged",
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

export function isEventName(name: string): name is EventName {
  return (EVENT_NAMES as readonly string[]).includes(name);
}

/** How live updates currently arrive. */
export type LiveMode = "push" | "polling";

/**
 * Writes of a versioned document take `expectedVersion`, the version the change was
 * made to (the one the page loaded); a document changed since rejects the write with
 * ApiError `precondition_failed` (HTTP 412) instead of overwriting that change.
 */
export interface Api {
  /** Which transport this adapter uses. */
  readonly transport: "ipc" | "http";

  connectionsList(): Promise<ConnectionView[]>;
  connectionsGet(id: string): Promise<ConnectionView>;
  connectionsCreate(request: ConnectionCreateRequest): Promise<ConnectionView>;
  connectionsUpdate(id: string, patch: ConnectionPatch, expectedVersion: ExpectedVersion): Promise<ConnectionView>;
  connectionsDelete(id: string, expectedVersion: ExpectedVersion): Promise<null>;
  connectionsTest(id: string): Promise<ConnectionTestResult>;
  /**
   * Adds (or refreshes) a Claude subscription connection from Claude Code's own login
   * on the gateway's machine; `validation_failed` (issue path `/path`) when the file is
   * missing or not a Claude Code login.
   */
  connectionsImportClaudeLogin(request: ClaudeLoginImportRequest): Promise<ClaudeLoginImportResult>;

  keysList(): Promise<ApiKeyView[]>;
  keysCreate(request: ApiKeyCreateRequest): Promise<ApiKeyCreatedResult>;
  keysDelete(id: string): Promise<null>;

  combosList(): Promise<Versioned<ComboView>[]>;
  /** Creates (a combo that does not exist yet is at version 0) or replaces a combo. */
  combosPut(combo: ComboView, expectedVersion: ExpectedVersion): Promise<Versioned<ComboView>>;
  combosDelete(name: string, expectedVersion: ExpectedVersion): Promise<null>;

  aliasesList(): Promise<Versioned<AliasView>[]>;
  /** Creates (an alias that does not exist yet is at version 0) or replaces an alias. */
  aliasesPut(alias: AliasView, expectedVersion: ExpectedVersion): Promise<Versioned<AliasView>>;
  aliasesDelete(from: string, expectedVersion: ExpectedVersion): Promise<null>;

  monitoringHealth(): Promise<HealthView>;
  monitoringSummary(): Promise<MonitoringSummaryView>;
  logsList(query: LogsQuery): Promise<RequestLogEntryView[]>;

  /** Client requests, newest first, filtered (one row per agent request, not per attempt). */
  requestsList(query: RequestsQuery): Promise<RequestEntryView[]>;
  /** One client request: its attempts and why it went where it went (`not_found` when unknown). */
  requestGet(requestId: string): Promise<RequestDetailView>;

  /** The provider presets the add-connection form offers, with the base URLs in force. */
  presetsList(): Promise<ProviderPresetView[]>;

  /** Every connection's flow control, live: in flight, queued, gates, budgets in force. */
  rateLimitsGet(): Promise<RateLimitsView>;

  /** The live session-affinity pins (session hash prefixes only) and the TTL in force. */
  sessionsList(): Promise<SessionPinsView>;
  /** Forgets the pins on one connection, or every pin when `connection` is absent. */
  sessionsClear(request: SessionPinsClear): Promise<SessionPinsCleared>;

  /** The active exclusive session leases, oldest first (owner tokens are never listed). */
  leasesList(): Promise<LeasesView>;
  /** Ends an active lease: its owner's next request is refused as stale. */
  leasesRelease(id: number): Promise<LeaseReleased>;

  resilienceGet(): Promise<Versioned<ResilienceSettings>>;
  resiliencePatch(patch: ResilienceSettingsPatch, expectedVersion: ExpectedVersion): Promise<Versioned<ResilienceSettings>>;
  resilienceDefaults(): Promise<ResilienceSettings>;
  resilienceRanges(): Promise<SettingsRanges>;

  breakersList(): Promise<ProviderBreakerView[]>;
  breakersReset(request: BreakerResetRequest): Promise<BreakerResetResult>;

  cooldownsList(provider: string | null): Promise<ConnectionCooldownView[]>;
  cooldownsClear(request: CooldownsClearRequest): Promise<CooldownsClearResult>;

  lockoutsList(): Promise<ModelLockoutView[]>;
  lockoutsClear(request: LockoutClearRequest): Promise<LockoutClearResult>;

  /** The model-lockout group, with the version of the settings document it belongs to. */
  modelLockoutGet(): Promise<Versioned<ModelLockoutSettings>>;
  /** `expectedVersion` is the settings document's version (as for `resiliencePatch`). */
  modelLockoutPatch(patch: ModelLockoutPatch, expectedVersion: ExpectedVersion): Promise<Versioned<ModelLockoutSettings>>;

  /** Whether Claude Code and Codex are set up to use this gateway. */
  setupList(): Promise<AgentSetupView[]>;
  /** Points an agent at this gateway (`conflict` when its file cannot be parsed). */
  setupApply(agent: string): Promise<AgentSetupResult>;
  /**
   * Puts an agent's file back as it was before setup: `conflict` when it was edited
   * since (unless `force`), `not_found` when there is nothing to undo.
   */
  setupUndo(agent: string, force: boolean): Promise<AgentUndoResult>;

  gatewayStatus(): Promise<GatewayStatusView>;
  gatewaySetPaused(request: { paused: boolean }): Promise<GatewayStatusView>;

  /** Desktop only (absent over HTTP). */
  desktopPrefsGet?(): Promise<DesktopPrefs>;
  /** Desktop only (absent over HTTP). */
  desktopPrefsSet?(prefs: DesktopPrefs): Promise<DesktopPrefs>;
  /** Desktop only (absent over HTTP). */
  desktopStatus?(): Promise<DesktopStatusView>;
  /**
   * Desktop only (absent over HTTP): whether a page has unsaved edits. Closing the
   * window keeps it (hidden) while it has them, and destroys it otherwise.
   */
  desktopSetUnsavedEdits?(unsaved: boolean): Promise<void>;
  /** Desktop only (absent over HTTP): closes the window as its close button does. */
  desktopCloseWindow?(): Promise<void>;

  /**
   * Subscribes to change events. `onEvent` receives each event name; `onMode` learns
   * whether events are pushed or synthesised by polling. Returns the unsubscribe.
   */
  subscribe(onEvent: (name: EventName) => void, onMode?: (mode: LiveMode) => void): () => void;
}
