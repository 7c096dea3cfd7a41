// "Import Claude Code login": adds (or refreshes) a Claude subscription connection
// from the login Claude Code keeps on the gateway's machine
// (`~/.claude/.credentials.json`). The outcome, or why the file would not do, is
// reported in words through `onResult`.
import { errorText } from "../../../api/ApiError";
import type { ClaudeLoginImportResult } from "../../../ipc/bindings";
import { formatInstant } from "../../../shared/format";
import { useImportClaudeLogin } from "../api";

export type ImportOutcome = { ok: true; text: string; result: ClaudeLoginImportResult } | { ok: false; text: string };

const CHANGE_WORDS: Record<string, string> = {
  created: "Imported your Claude Code login as",
  updated: "Refreshed",
  unchanged: "Already up to date:",
};

/** What an import did, in a sentence. */
export function describeImport(r: ClaudeLoginImportResult): string {
  const c = r.connection;
  const plan = r.subscription ? ` (${r.subscription} subscription)` : "";
  const expiry = c.tokenExpiresAt !== null ? ` Its access token expires ${formatInstant(c.tokenExpiresAt)}.` : "";
  const from = r.change === "updated" ? " from your Claude Code login" : "";
  return `${CHANGE_WORDS[r.change] ?? "Imported"} ${c.name}${plan}${from}.${expiry}`;
}

export function ImportClaudeLoginButton({
  onResult,
  primary = false,
}: {
  onResult: (outcome: ImportOutcome) => void;
  primary?: boolean;
}) {
  const importLogin = useImportClaudeLogin();
  const run = () =>
    importLogin.mutate(
      {},
      {
        onSuccess: (result) => onResult({ ok: true, text: describeImport(result), result }),
        onError: (e) => onResult({ ok: false, text: `Could not import the Claude Code login: ${errorText(e)}` }),
      },
    );
  return (
    <button
      type="button"
      className={`btn${primary ? " btn-primary" : ""}`}
      disabled={importLogin.isPending}
      onClick={run}
    >
      {importLogin.isPending ? "Importing…" : "Import Claude Code login"}
    </button>
  );
}
