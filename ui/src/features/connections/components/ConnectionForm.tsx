// Add / edit a connection. Adding starts with a provider preset, which fills the
// provider, format, authentication, base URL and models, so only the key is left to
// type. Secrets are write-only: empty secret fields keep the stored ones. Server
// issues land on the field whose JSON pointer matches, in words; the rest are listed
// at the top of the form by their fields' labels. A field's problem clears as soon
// as it is edited. An edit shows the user's changes on top of the live connection
// and names the version they were made to; a save refused because the connection
// changed elsewhere (412) says so and offers Reload, which keeps the user's changes
// on top of the current connection.
import { useMemo, useState, type FormEvent } from "react";
import type { ApiFormat, AuthKind, ConnectionView, ProviderPresetView } from "../../../ipc/bindings";
import { ChangedElsewhere, reloadedText } from "../../../shared/ChangedElsewhere";
import { FormErrors, NumberField, SelectField, Switch, TextField } from "../../../shared/fields";
import { useFieldErrors } from "../../../shared/useFieldErrors";
import type { Vocabulary } from "../../../shared/issueWords";
import { useUnsavedChangesGuard } from "../../../shared/unsavedChanges";
import { useVersionedEdits } from "../../../shared/versionedEdits";
import {
  useCreateConnection,
  usePresetsQuery,
  useRanges,
  useReloadConnection,
  useResilienceQuery,
  useUpdateConnection,
} from "../api";
import {
  buildCreateRequest,
  buildPatch,
  EMPTY_FORM,
  formFromConnection,
  formFromPreset,
  isClaudeOAuth,
  type ConnectionFormState,
} from "../form";
import { capMapPaths } from "../../../shared/capMap";
import { EXECUTION_PATH, MAX_WAIT_PATH, MODEL_CAPS_PATH, parseModelCaps } from "../overrides";
import { ClaudeSection } from "./ClaudeSection";
import { FlowSection } from "./FlowSection";
import { ImportClaudeLoginButton, type ImportOutcome } from "./ImportClaudeLogin";
import { UsageBars } from "./Usage";
import { EditorActions } from "../../../shared/EditorActions";

const KNOWN_PROVIDERS = ["anthropic", "openai", "openai-compatible", "glm", "openrouter", "ollama", "lmstudio"];

/** The form's fields by JSON pointer: what a problem the gateway names is called on the page. */
export const CONNECTION_LABELS: Record<string, string> = {
  "/provider": "Provider",
  "/id": "ID",
  "/name": "Name",
  "/apiFormat": "API format",
  "/authKind": "Authentication",
  "/apiKey": "API key",
  "/accessToken": "Access token",
  "/refreshToken": "Refresh token",
  "/expiresAt": "Token expiry",
  "/baseUrl": "Base URL",
  "/priority": "Priority",
  "/enabled": "Enabled",
  "/models": "Models",
  "/maxConcurrent": "Max concurrent requests",
  "/rateLimitOverrides": "Flow control",
  "/rateLimitOverrides/maxConcurrent": "Max concurrent requests",
  [MODEL_CAPS_PATH]: "Per-model caps",
  [MAX_WAIT_PATH]: "Queue wait budget",
  [EXECUTION_PATH]: "Execution bound",
  "/rateLimitProtection": "Always protect from rate limits",
  "/providerSpecific": "Provider options",
  "/providerSpecific/lowPriorityMode": "Low-priority lane",
  "/providerSpecific/autoLimitReset": "Automatic limit reset",
  "/providerSpecific/organizationUUID": "Organization UUID",
};

/** The gateway's messages without its internal names. */
const CONNECTION_WORDS: Vocabulary = [
  [/authKind is "api_key"/g, "Authentication is “API key”"],
  [/authKind is "oauth"/g, "Authentication is “OAuth”"],
  [
    /has no implied format: state "anthropic", "openai", "openai-chat" or "openai-responses"/g,
    "needs an API format: choose what its upstream speaks",
  ],
  [/provider '([^']*)'/g, "the provider “$1”"],
  [/\(omit for no cap\)/g, "(leave it empty for no cap)"],
  [/\(omit to use the settings\)/g, "(leave it empty to use the settings)"],
];

/** The fields whose problems an edit of a form value settles (besides `/<key>` itself). */
const AFFECTED_PATHS: Partial<Record<keyof ConnectionFormState, string[]>> = {
  // The format and the base URL are checked against the provider.
  provider: ["/provider", "/apiFormat", "/baseUrl"],
  authKind: ["/authKind", "/apiKey", "/accessToken", "/refreshToken"],
  maxConcurrent: ["/maxConcurrent", "/rateLimitOverrides/maxConcurrent"],
  modelCaps: [MODEL_CAPS_PATH],
  maxWaitMs: [MAX_WAIT_PATH],
  executionMaxWaitMs: [EXECUTION_PATH],
  protectionForced: ["/rateLimitProtection"],
  lowPriorityMode: ["/providerSpecific/lowPriorityMode"],
  autoLimitReset: ["/providerSpecific/autoLimitReset"],
  organizationUUID: ["/providerSpecific/organizationUUID"],
};

function pathsOf(change: Partial<ConnectionFormState>): string[] {
  return Object.keys(change).flatMap((k) => AFFECTED_PATHS[k as keyof ConnectionFormState] ?? [`/${k}`]);
}

const AUTH_OPTIONS: { value: AuthKind; label: string }[] = [
  { value: "api_key", label: "API key" },
  { value: "oauth", label: "OAuth (subscription account)" },
  { value: "none", label: "None (local server)" },
];

/**
 * The preset picker at the top of the add form. A Claude subscription account is
 * added by importing Claude Code's login on the gateway's machine: its preset offers
 * the import button, and leaves the token fields to paste into otherwise.
 */
function PresetPicker({
  presets,
  loading,
  value,
  onChange,
  preset,
  onImported,
}: {
  presets: ProviderPresetView[] | undefined;
  loading: boolean;
  value: string;
  onChange: (id: string) => void;
  preset: ProviderPresetView | undefined;
  onImported: (outcome: ImportOutcome) => void;
}) {
  const help = preset
    ? preset.claudeLogin
      ? undefined
      : preset.authKind === "none"
        ? "Filled in below; this local server needs no key. Check the base URL, then save."
        : "Filled in below: type the API key, then save. The connection is tested once it is saved."
    : loading
      ? "Loading the presets…"
      : "Fills in the provider, format, base URL and models of a well-known service.";
  return (
    <div className="preset-picker">
      <SelectField
        id="conn-preset"
        label="Preset"
        value={value}
        onChange={onChange}
        options={[
          { value: "", label: "Custom: fill in every field" },
          ...(presets ?? []).map((p) => ({ value: p.id, label: p.label })),
        ]}
        help={help}
      />
      {preset?.claudeLogin && (
        <div className="banner banner-info" role="note" aria-label="Import your Claude Code login">
          <div>
            <strong>Import your Claude Code login.</strong> {preset.keyHint[0].toUpperCase()}
            {preset.keyHint.slice(1)}. The gateway reads it from <code>~/.claude/.credentials.json</code> of the user
            it runs as. Or paste the access and refresh tokens below.
          </div>
          <ImportClaudeLoginButton primary onResult={onImported} />
        </div>
      )}
    </div>
  );
}

export function ConnectionForm({
  connection,
  onDone,
  onCancel,
  onImported,
}: {
  /** The connection being edited (live from the list); absent when adding. */
  connection?: ConnectionView;
  /** The Claude account preset's login import ran (adding only). */
  onImported?: (outcome: ImportOutcome) => void;
  onDone: (saved: ConnectionView) => void;
  onCancel: () => void;
}) {
  const editing = connection !== undefined;
  const live = useMemo(() => (connection ? formFromConnection(connection) : EMPTY_FORM), [connection]);
  const edits = useVersionedEdits<ConnectionFormState>(live, connection?.version ?? 0);
  const state = edits.values;
  const create = useCreateConnection();
  const update = useUpdateConnection();
  const reloadConnection = useReloadConnection();
  const [reloading, setReloading] = useState(false);
  const [status, setStatus] = useState<string | null>(null);
  const busy = create.isPending || update.isPending || reloading;
  const claude = isClaudeOAuth(state.provider, state.authKind);
  const settings = useResilienceQuery();
  const ranges = useRanges();
  const capModels = useMemo(() => Object.keys(parseModelCaps(state.modelCaps).caps), [state.modelCaps]);

  const visiblePaths = useMemo(() => {
    const paths = ["/name", "/apiFormat", "/authKind", "/baseUrl", "/priority", "/maxConcurrent", "/enabled", "/models"];
    paths.push(MAX_WAIT_PATH, EXECUTION_PATH, ...capMapPaths(MODEL_CAPS_PATH, capModels));
    if (!editing) paths.push("/provider", "/id");
    if (state.authKind === "api_key") paths.push("/apiKey");
    if (state.authKind === "oauth") paths.push("/accessToken", "/refreshToken");
    if (claude) {
      paths.push("/providerSpecific/lowPriorityMode", "/providerSpecific/autoLimitReset", "/providerSpecific/organizationUUID");
    }
    return paths;
  }, [editing, state.authKind, claude, capModels]);
  const errors = useFieldErrors(visiblePaths, { vocabulary: CONNECTION_WORDS });
  const presets = usePresetsQuery(!editing);
  const [presetId, setPresetId] = useState("");
  const preset = presets.data?.find((p) => p.id === presetId);
  useUnsavedChangesGuard(edits.dirty, editing ? `your changes to ${connection.name}` : "the new connection");

  const set = (change: Partial<ConnectionFormState>) => {
    setStatus(null);
    errors.clearPaths(pathsOf(change));
    edits.set(change);
  };
  /** A top-level field's pointer, value, change and problem: every field of the form
   *  is wired the same way, so it is written once. */
  const bind = <K extends keyof ConnectionFormState>(key: K) => ({
    path: `/${key}`,
    value: state[key],
    onChange: (value: ConnectionFormState[K]) => set({ [key]: value } as Partial<ConnectionFormState>),
    error: errors.fieldError(`/${key}`),
  });

  // "Custom" keeps what is filled in; a preset fills its fields, and the name follows
  // the preset until the user types one of their own.
  const choosePreset = (id: string) => {
    setPresetId(id);
    const chosen = presets.data?.find((p) => p.id === id);
    if (!chosen) return;
    const previous = presets.data?.find((p) => p.id === presetId);
    const ownName = state.name.trim() !== "" && state.name !== previous?.label;
    set(formFromPreset(chosen, ownName ? state.name : undefined));
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setStatus(null);
    try {
      if (connection) {
        const built = buildPatch(connection, state);
        if (Object.keys(built.errors).length) return errors.setClientErrors(built.errors);
        onDone(
          await update.mutateAsync({ id: connection.id, patch: built.value, expectedVersion: edits.expectedVersion }),
        );
      } else {
        const built = buildCreateRequest(state);
        if (Object.keys(built.errors).length) return errors.setClientErrors(built.errors);
        onDone(await create.mutateAsync(built.value));
      }
      errors.clear();
    } catch (err) {
      errors.setError(err);
    }
  };

  const reload = async () => {
    if (!connection) return;
    setReloading(true);
    setStatus(null);
    try {
      const fresh = await reloadConnection(connection.id);
      const kept = edits.rebase(formFromConnection(fresh), fresh.version);
      errors.clear();
      setStatus(reloadedText(kept));
    } catch (err) {
      errors.setError(err);
    } finally {
      setReloading(false);
    }
  };
  const changedElsewhere = errors.error?.isPreconditionFailed === true;

  const title = editing ? `Edit ${connection.name}` : "Add connection";
  const secretHelp = (stored: boolean) => (editing && stored ? "A secret is stored; leave empty to keep it." : undefined);

  return (
    <section className="card form-card" aria-labelledby="conn-form-title">
      <header className="card-header">
        <h2 id="conn-form-title">{title}</h2>
      </header>
      <form noValidate onSubmit={submit}>
        {!changedElsewhere && <FormErrors error={errors.error} issues={errors.formIssues} labels={CONNECTION_LABELS} />}
        {!editing && (
          <PresetPicker
            presets={presets.data}
            loading={presets.isPending}
            value={presetId}
            onChange={choosePreset}
            preset={preset}
            onImported={onImported ?? (() => {})}
          />
        )}
        <div className="field-grid">
          {editing ? (
            <div className="field">
              <span className="field-label">Provider / id</span>
              <p className="field-static">
                {connection.provider} / <code>{connection.id}</code>
              </p>
            </div>
          ) : (
            <>
              <TextField
                id="conn-provider"
                label="Provider"
                {...bind("provider")}
                list="conn-provider-list"
                required
                help="Provider id: anthropic, openai, openai-compatible, glm, …"
              />
              <datalist id="conn-provider-list">
                {KNOWN_PROVIDERS.map((p) => (
                  <option key={p} value={p} />
                ))}
              </datalist>
              <TextField
                id="conn-id"
                label="ID"
                {...bind("id")}
                placeholder="generated when empty"
                help="Letters, digits, '.', '_' or '-' (1–64)."
              />
            </>
          )}
          <TextField
            id="conn-name"
            label="Name"
            {...bind("name")}
            placeholder={editing ? undefined : "defaults to the id"}
          />
          <SelectField<"" | ApiFormat>
            id="conn-api-format"
            label="API format"
            {...bind("apiFormat")}
            options={[
              ...(editing ? [] : [{ value: "" as const, label: "Implied by the provider" }]),
              { value: "anthropic", label: "Anthropic Messages" },
              { value: "openai", label: "OpenAI (Chat Completions and Responses)" },
              { value: "openai-chat", label: "Chat Completions only (GLM, DeepSeek, OpenRouter, Ollama, LM Studio)" },
              { value: "openai-responses", label: "Responses only" },
            ]}
          />
          <SelectField<AuthKind>
            id="conn-auth-kind"
            label="Authentication"
            {...bind("authKind")}
            options={AUTH_OPTIONS}
          />
          {state.authKind === "api_key" && (
            <TextField
              id="conn-api-key"
              label="API key"
              {...bind("apiKey")}
              type="password"
              placeholder={editing && connection.hasSecret ? "•••••••• (unchanged)" : undefined}
              help={preset?.keyHint ? `Get a key: ${preset.keyHint}.` : secretHelp(connection?.hasSecret ?? false)}
            />
          )}
          {state.authKind === "oauth" && (
            <>
              <TextField
                id="conn-access-token"
                label="Access token"
                {...bind("accessToken")}
                type="password"
                placeholder={editing && connection.hasSecret ? "•••••••• (unchanged)" : undefined}
                help={secretHelp(connection?.hasSecret ?? false)}
              />
              <TextField
                id="conn-refresh-token"
                label="Refresh token"
                {...bind("refreshToken")}
                type="password"
                placeholder={editing && connection.hasRefreshToken ? "•••••••• (unchanged)" : "optional"}
                help={secretHelp(connection?.hasRefreshToken ?? false)}
              />
            </>
          )}
          <TextField
            id="conn-base-url"
            label="Base URL"
            {...bind("baseUrl")}
            type="url"
            placeholder={editing ? connection.effectiveBaseUrl : "provider default"}
            help="Override for self-hosted or compatible services; empty uses the provider's default. Credentials in it show as ***@ and are kept unless you type new ones."
          />
          <NumberField
            id="conn-priority"
            label="Priority"
            {...bind("priority")}
            showRange={false}
            help="Lower numbers are tried first."
          />
          <Switch
            id="conn-enabled"
            label="Enabled"
            path="/enabled"
            checked={state.enabled}
            onChange={(v) => set({ enabled: v })}
            help="Disabled connections are never routed to."
            error={errors.fieldError("/enabled")}
          />
          <TextField
            id="conn-models"
            label="Models"
            {...bind("models")}
            multiline
            help="Model ids this connection serves, separated by commas or lines."
          />
        </div>
        <FlowSection
          state={state}
          onChange={set}
          fieldError={errors.fieldError}
          capModels={capModels}
          settings={settings.data}
          ranges={ranges}
          kept={connection?.rateLimitOverrides}
        />
        {claude && (
          <ClaudeSection
            lowPriorityMode={state.lowPriorityMode}
            autoLimitReset={state.autoLimitReset}
            organizationUUID={state.organizationUUID}
            onChange={set}
            fieldError={errors.fieldError}
            wall={editing ? connection.claudeWall : undefined}
            usage={editing ? connection.usage : undefined}
          />
        )}
        {!claude && editing && connection.usage !== null && (
          <section className="subsection" aria-label="Usage">
            <h3>Usage</h3>
            <UsageBars usage={connection.usage} />
          </section>
        )}
        {changedElsewhere && (
          <ChangedElsewhere what="This connection" title={title} busy={busy} onReload={() => void reload()} />
        )}
        <EditorActions busy={busy} reloading={reloading} status={status} onCancel={onCancel} />
      </form>
    </section>
  );
}
