// The desktop adapter: every Api method calls the tauri-specta generated command and
// unwraps its `Result`, turning the IpcError into an ApiError. Writes of versioned
// documents pass `expectedVersion` (the REST adapter's `If-Match`).
import type { UnlistenFn } from "@tauri-apps/api/event";
import { commands, events } from "../ipc/bindings";
import { ApiError } from "./ApiError";
import { EVENT_NAMES, type Api, type EventName } from "./types";
import { withoutVersion, type ExpectedVersion } from "./versions";

/** The command argument: absent means "no precondition", as null does. */
const expected = (v: ExpectedVersion | undefined): number | null => v ?? null;

/** What every generated command resolves with (tauri-specta's typed-error wrapper). */
type Result<T, E> = { status: "ok"; data: T } | { status: "error"; error: E };

async function unwrap<T>(call: Promise<Result<T, unknown>>): Promise<T> {
  let result: Result<T, unknown>;
  try {
    result = await call;
  } catch (e) {
    throw ApiError.from(e);
  }
  if (result.status === "ok") return result.data;
  throw ApiError.from(result.error);
}

/** Whether the page runs inside the Tauri webview. */
export function isTauri(): boolean {
  return typeof window !== "undefined" && "__TAURI_INTERNALS__" in window;
}

export function createIpcApi(): Api {
  return {
    transport: "ipc",
    connectionsList: () => unwrap(commands.connectionsList()),
    connectionsGet: (id) => unwrap(commands.connectionsGet(id)),
    connectionsCreate: (request) => unwrap(commands.connectionsCreate(request)),
    connectionsUpdate: (id, patch, v) => unwrap(commands.connectionsUpdate(id, patch, expected(v))),
    connectionsDelete: (id, v) => unwrap(commands.connectionsDelete(id, expected(v))).then(() => null),
    connectionsTest: (id) => unwrap(commands.connectionsTest(id)),
    connectionsImportClaudeLogin: (request) => unwrap(commands.connectionsImportClaudeLogin(request)),
    keysList: () => unwrap(commands.keysList()),
    keysCreate: (request) => unwrap(commands.keysCreate(request)),
    keysDelete: (id) => unwrap(commands.keysDelete(id)).then(() => null),
    combosList: () => unwrap(commands.combosList()),
    combosPut: (combo, v) => unwrap(commands.combosPut(withoutVersion(combo), expected(v))),
    combosDelete: (name, v) => unwrap(commands.combosDelete(name, expected(v))).then(() => null),
    aliasesList: () => unwrap(commands.aliasesList()),
    aliasesPut: (alias, v) => unwrap(commands.aliasesPut(withoutVersion(alias), expected(v))),
    aliasesDelete: (from, v) => unwrap(commands.aliasesDelete(from, expected(v))).then(() => null),
    monitoringHealth: () => unwrap(commands.monitoringHealth()),
    monitoringSummary: () => unwrap(commands.monitoringSummary()),
    logsList: (query) => unwrap(commands.logsList(query)),
    requestsList: (query) => unwrap(commands.requestsList(query)),
    requestGet: (requestId) => unwrap(commands.requestGet(requestId)),
    presetsList: () => unwrap(commands.presetsList()),
    rateLimitsGet: () => unwrap(commands.rateLimitsGet()),
    sessionsList: () => unwrap(commands.sessionsList()),
    sessionsClear: (request) => unwrap(commands.sessionsClear(request)),
    leasesList: () => unwrap(commands.leasesList()),
    leasesRelease: (id) => unwrap(commands.leasesRelease(id)),
    resilienceGet: () => unwrap(commands.resilienceGet()),
    resiliencePatch: (patch, v) => unwrap(commands.resiliencePatch(patch, expected(v))),
    resilienceDefaults: () => unwrap(commands.resilienceDefaults()),
    resilienceRanges: () => unwrap(commands.resilienceRanges()),
    breakersList: () => unwrap(commands.breakersList()),
    breakersReset: (request) => unwrap(commands.breakersReset(request)),
    cooldownsList: (provider) => unwrap(commands.cooldownsList(provider)),
    cooldownsClear: (request) => unwrap(commands.cooldownsClear(request)),
    lockoutsList: () => unwrap(commands.lockoutsList()),
    lockoutsClear: (request) => unwrap(commands.lockoutsClear(request)),
    modelLockoutGet: () => unwrap(commands.modelLockoutGet()),
    modelLockoutPatch: (patch, v) => unwrap(commands.modelLockoutPatch(patch, expected(v))),
    setupList: () => unwrap(commands.setupList()),
    setupApply: (agent) => unwrap(commands.setupApply(agent)),
    setupUndo: (agent, force) => unwrap(commands.setupUndo(agent, force)),
    gatewayStatus: () => unwrap(commands.gatewayStatus()),
    gatewaySetPaused: (request) => unwrap(commands.gatewaySetPaused(request)),
    desktopPrefsGet: () => unwrap(commands.desktopPrefsGet()),
    desktopPrefsSet: (prefs) => unwrap(commands.desktopPrefsSet(prefs)),
    desktopStatus: () => unwrap(commands.desktopStatus()),
    desktopSetUnsavedEdits: (unsaved) => unwrap(commands.desktopSetUnsavedEdits(unsaved)).then(() => undefined),
    desktopCloseWindow: () => unwrap(commands.desktopCloseWindow()).then(() => undefined),
    subscribe(onEvent, onMode) {
      let stopped = false;
      const unlisteners: UnlistenFn[] = [];
      onMode?.("push");
      for (const name of EVENT_NAMES) {
        listenTo(name, () => onEvent(name))
          .then((unlisten) => {
            if (stopped) unlisten();
            else unlisteners.push(unlisten);
          })
          .catch(() => {
            // Event plugin unavailable: the pages still work, they just refresh on demand.
          });
      }
      return () => {
        stopped = true;
        for (const u of unlisteners.splice(0)) u();
      };
    },
  };
}

function listenTo(name: EventName, cb: () => void): Promise<UnlistenFn> {
  return events[name].listen(cb);
}
