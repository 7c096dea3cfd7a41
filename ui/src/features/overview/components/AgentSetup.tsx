// One-click agent setup: per agent (Claude Code, Codex) its config file, a button
// that points it at this gateway (a client key is made for it and written into the
// file, the previous file kept), and once set up an Undo that puts the file back byte
// for byte. An undo refused because the file was edited after setup offers "Undo
// anyway"; every outcome is said in words.
import { useState } from "react";
import { ApiError, errorText } from "../../../api/ApiError";
import type { AgentSetupView } from "../../../ipc/bindings";
import { ErrorState, Loading } from "../../../shared/states";
import { useSetupApply, useSetupQuery, useSetupUndo } from "../api";

const AGENT_NAMES: Record<string, string> = { "claude-code": "Claude Code", codex: "Codex" };

/** `claude-code` → "Claude Code"; unknown agents by their id. */
export function agentName(agent: string): string {
  return AGENT_NAMES[agent] ?? agent;
}

type Outcome = { tone: "ok" | "error"; text: string; offerForce?: boolean };

function AgentRow({ view }: { view: AgentSetupView }) {
  const apply = useSetupApply();
  const undo = useSetupUndo();
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const name = agentName(view.agent);
  const busy = apply.isPending || undo.isPending;

  const runApply = () => {
    setOutcome(null);
    apply.mutate(view.agent, {
      onSuccess: (r) =>
        setOutcome({
          tone: "ok",
          text: `${name} now uses ${r.baseUrl} with the client key “${r.keyName}”. Its previous file is kept in ${r.backupPath}; start a new ${name} session to pick it up.`,
        }),
      onError: (e) => setOutcome({ tone: "error", text: `Could not set up ${name}: ${errorText(e)}` }),
    });
  };

  const runUndo = (force: boolean) => {
    setOutcome(null);
    undo.mutate(
      { agent: view.agent, force },
      {
        onSuccess: (r) =>
          setOutcome({
            tone: "ok",
            text: r.restored
              ? `Put ${r.path} back as it was before setup.`
              : `Removed ${r.path}: it did not exist before setup.`,
          }),
        onError: (e) => {
          const conflict = e instanceof ApiError && e.code === "conflict";
          const nothing = e instanceof ApiError && e.code === "not_found";
          setOutcome({
            tone: "error",
            text: nothing
              ? `Nothing to undo for ${name}: ${errorText(e)}`
              : `Could not undo the setup of ${name}: ${errorText(e)}`,
            offerForce: conflict && !force,
          });
        },
      },
    );
  };

  return (
    <li className="agent-setup">
      <div className="agent-setup-head">
        <div>
          <strong>{name}</strong>{" "}
          <span className={view.configured ? "badge badge-ok" : "muted small"}>
            {view.configured ? "Set up" : "Not set up"}
          </span>
          <div className="small">
            <code>{view.path}</code>
          </div>
        </div>
        <div className="agent-setup-actions">
          <button type="button" className="btn btn-primary btn-small" disabled={busy} onClick={runApply}>
            {apply.isPending ? "Setting up…" : view.configured ? `Set up ${name} again` : `Set up ${name}`}
          </button>
          {view.configured && (
            <button
              type="button"
              className="btn btn-small"
              aria-label={`Undo the setup of ${name}`}
              disabled={busy}
              onClick={() => runUndo(false)}
            >
              Undo
            </button>
          )}
        </div>
      </div>
      <p className={`notice${outcome ? ` notice-${outcome.tone}` : ""}`} role="status">
        {outcome?.text}
        {outcome?.offerForce && (
          <>
            {" "}
            <button
              type="button"
              className="btn btn-small btn-danger-ghost"
              aria-label={`Undo the setup of ${name} anyway`}
              disabled={busy}
              onClick={() => runUndo(true)}
            >
              Undo anyway
            </button>{" "}
            <span className="small">(the edits made after setup are lost)</span>
          </>
        )}
      </p>
    </li>
  );
}

export function AgentSetupList() {
  const setup = useSetupQuery();
  if (setup.isPending) return <Loading label="Checking the agents’ files…" />;
  if (setup.isError)
    return (
      <ErrorState title="Could not check the agents’ setup" error={setup.error} onRetry={() => void setup.refetch()} />
    );
  return (
    <ul className="agent-setup-list" aria-label="Agent setup">
      {setup.data.map((v) => (
        <AgentRow key={v.agent} view={v} />
      ))}
    </ul>
  );
}
