// The connection form's state and how it becomes a create request or a patch.
import {
  buildOverrides,
  overridesFormFrom,
  sameOverrides,
  EMPTY_OVERRIDES_FORM,
  type OverridesForm,
} from "./overrides";
import type {
  ApiFormat,
  AuthKind,
  ConnectionCreateRequest,
  ConnectionPatch,
  ConnectionView,
  ProviderPresetView,
  Value,
} from "../../ipc/bindings";

export type ConnectionFormState = {
  provider: string;
  id: string;
  name: string;
  apiFormat: "" | ApiFormat;
  authKind: AuthKind;
  apiKey: string;
  accessToken: string;
  refreshToken: string;
  baseUrl: string;
  priority: string;
  maxConcurrent: string;
  /** Rate-limit protection forced on for this connection. */
  protectionForced: boolean;
  enabled: boolean;
  models: string;
  lowPriorityMode: boolean;
  autoLimitReset: boolean;
  organizationUUID: string;
} & OverridesForm;

export const EMPTY_FORM: ConnectionFormState = {
  provider: "",
  id: "",
  name: "",
  apiFormat: "",
  authKind: "api_key",
  apiKey: "",
  accessToken: "",
  refreshToken: "",
  baseUrl: "",
  priority: "0",
  maxConcurrent: "",
  protectionForced: false,
  enabled: true,
  models: "",
  lowPriorityMode: false,
  autoLimitReset: false,
  organizationUUID: "",
  ...EMPTY_OVERRIDES_FORM,
};

/** Claude subscription accounts get the Claude section (SPEC 4.3). */
export function isClaudeOAuth(provider: string, authKind: AuthKind): boolean {
  const p = provider.trim().toLowerCase();
  return (p === "anthropic" || p === "claude") && authKind === "oauth";
}

function specific(c: ConnectionView): Record<string, Value> {
  const ps = c.providerSpecific;
  return ps !== null && typeof ps === "object" && !Array.isArray(ps) ? (ps as Record<string, Value>) : {};
}

export function formFromConnection(c: ConnectionView): ConnectionFormState {
  const ps = specific(c);
  return {
    provider: c.provider,
    id: c.id,
    name: c.name,
    apiFormat: c.apiFormat,
    authKind: c.authKind,
    apiKey: "",
    accessToken: "",
    refreshToken: "",
    baseUrl: c.baseUrl ?? "",
    priority: String(c.priority),
    maxConcurrent: c.maxConcurrent === null ? "" : String(c.maxConcurrent),
    protectionForced: c.rateLimitProtection === true,
    enabled: c.enabled,
    models: c.models.join("\n"),
    lowPriorityMode: ps.lowPriorityMode === true,
    autoLimitReset: ps.autoLimitReset === true,
    organizationUUID: typeof ps.organizationUUID === "string" ? ps.organizationUUID : "",
    ...overridesFormFrom(c.rateLimitOverrides),
  };
}

/**
 * What a preset fills in: provider, format, authentication, base URL, models, and the
 * name (its label, unless `name` keeps one the user typed). Secrets stay as typed.
 */
export function formFromPreset(p: ProviderPresetView, name?: string): Partial<ConnectionFormState> {
  return {
    provider: p.provider,
    apiFormat: p.apiFormat,
    authKind: p.authKind,
    baseUrl: p.baseUrl,
    models: p.models.join("\n"),
    name: name ?? p.label,
  };
}

/** Model ids separated by commas, spaces or lines. */
export function parseModels(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((m) => m.trim())
    .filter((m) => m !== "");
}

type Built<T> = { value: T; errors: Record<string, string> };

function parseInteger(text: string, path: string, errors: Record<string, string>): number | null {
  const t = text.trim();
  if (t === "") return null;
  if (!/^-?\d+$/.test(t)) {
    errors[path] = "Enter a whole number.";
    return null;
  }
  return Number(t);
}

export function buildCreateRequest(s: ConnectionFormState): Built<ConnectionCreateRequest> {
  const errors: Record<string, string> = {};
  if (s.provider.trim() === "") errors["/provider"] = "Enter the provider id, e.g. anthropic, openai or glm.";
  const priority = parseInteger(s.priority, "/priority", errors);
  const maxConcurrent = parseInteger(s.maxConcurrent, "/maxConcurrent", errors);
  const claude = isClaudeOAuth(s.provider, s.authKind);
  const providerSpecific: Record<string, Value> | null = claude
    ? {
        lowPriorityMode: s.lowPriorityMode,
        autoLimitReset: s.autoLimitReset,
        ...(s.organizationUUID.trim() ? { organizationUUID: s.organizationUUID.trim() } : {}),
      }
    : null;
  const models = parseModels(s.models);
  const overrides = buildOverrides(s, {}, errors);
  return {
    errors,
    value: {
      id: s.id.trim() || null,
      provider: s.provider.trim(),
      apiFormat: s.apiFormat === "" ? null : s.apiFormat,
      name: s.name.trim() || null,
      authKind: s.authKind,
      apiKey: s.authKind === "api_key" ? s.apiKey || null : null,
      accessToken: s.authKind === "oauth" ? s.accessToken || null : null,
      refreshToken: s.authKind === "oauth" ? s.refreshToken || null : null,
      expiresAt: null,
      baseUrl: s.baseUrl.trim() || null,
      priority,
      enabled: s.enabled,
      maxConcurrent,
      rateLimitOverrides: Object.keys(overrides).length ? overrides : null,
      rateLimitProtection: s.protectionForced ? true : null,
      models: models.length ? models : null,
      providerSpecific,
    },
  };
}

/** A patch with only what changed; empty secret fields keep the stored secret. */
export function buildPatch(original: ConnectionView, s: ConnectionFormState): Built<ConnectionPatch> {
  const errors: Record<string, string> = {};
  const before = formFromConnection(original);
  const patch: ConnectionPatch = {};
  if (s.name.trim() !== before.name) patch.name = s.name.trim();
  if (s.apiFormat !== "" && s.apiFormat !== before.apiFormat) patch.apiFormat = s.apiFormat;
  if (s.authKind !== before.authKind) patch.authKind = s.authKind;
  if (s.authKind === "api_key" && s.apiKey !== "") patch.apiKey = s.apiKey;
  if (s.authKind === "oauth" && s.accessToken !== "") patch.accessToken = s.accessToken;
  if (s.authKind === "oauth" && s.refreshToken !== "") patch.refreshToken = s.refreshToken;
  const baseUrl = s.baseUrl.trim();
  if (baseUrl !== before.baseUrl) patch.baseUrl = baseUrl === "" ? null : baseUrl;
  const priority = parseInteger(s.priority, "/priority", errors);
  if (s.priority.trim() === "") errors["/priority"] = "Enter a whole number.";
  else if (priority !== null && priority !== original.priority) patch.priority = priority;
  const maxConcurrent = parseInteger(s.maxConcurrent, "/maxConcurrent", errors);
  if (!errors["/maxConcurrent"] && maxConcurrent !== original.maxConcurrent) patch.maxConcurrent = maxConcurrent;
  if (s.enabled !== before.enabled) patch.enabled = s.enabled;
  // The overrides are replaced as a whole: one the form does not edit (a second
  // connection cap from the config file or the API) is kept as it is.
  const overrides = buildOverrides(s, original.rateLimitOverrides, errors);
  if (!sameOverrides(overrides, original.rateLimitOverrides)) patch.rateLimitOverrides = overrides;
  if (s.protectionForced !== before.protectionForced) patch.rateLimitProtection = s.protectionForced ? true : null;
  const models = parseModels(s.models);
  if (models.join("\n") !== original.models.join("\n")) patch.models = models;
  if (isClaudeOAuth(original.provider, s.authKind)) {
    const changes: Record<string, Value> = {};
    if (s.lowPriorityMode !== before.lowPriorityMode) changes.lowPriorityMode = s.lowPriorityMode;
    if (s.autoLimitReset !== before.autoLimitReset) changes.autoLimitReset = s.autoLimitReset;
    const org = s.organizationUUID.trim();
    if (org !== before.organizationUUID) changes.organizationUUID = org === "" ? null : org;
    if (Object.keys(changes).length) patch.providerSpecific = changes;
  }
  return { value: patch, errors };
}
