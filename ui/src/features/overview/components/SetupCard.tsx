// Agent setup: one click per agent (the gateway writes the agent's config file, and
// can undo it), or ready-to-paste commands for Claude Code and Codex CLI.
import { CopyButton } from "../../../shared/CopyButton";
import { AgentSetupList } from "./AgentSetup";
import { claudeCodeCommand, codexCommand, codexConfigToml, KEY_PLACEHOLDER } from "../setup";

function Snippet({ id, title, text, copyLabel }: { id: string; title: string; text: string; copyLabel: string }) {
  return (
    <div className="snippet">
      <div className="snippet-header">
        <span id={id} className="snippet-title">
          {title}
        </span>
        <CopyButton text={text} label={copyLabel} />
      </div>
      <pre aria-labelledby={id}>
        <code>{text}</code>
      </pre>
    </div>
  );
}

export function SetupCard({ baseUrl, secret }: { baseUrl: string; secret: string | null }) {
  const key = secret ?? KEY_PLACEHOLDER;
  return (
    <section className="card card-wide" aria-labelledby="setup-title">
      <header className="card-header">
        <h2 id="setup-title">Connect your agents</h2>
      </header>
      <p className="card-description">
        One click points an agent at this gateway: it gets a client key of its own, written into its config file
        (the file as it was is kept, and Undo puts it back).
      </p>
      <AgentSetupList />
      <h3>Or by hand</h3>
      <p className="card-description">
        {secret ? (
          "These commands contain the key you just created."
        ) : (
          <>
            Replace <code>{KEY_PLACEHOLDER}</code> with a client key (create one above).
          </>
        )}
      </p>
      <h4>Claude Code</h4>
      <Snippet id="setup-claude" title="Shell" text={claudeCodeCommand(baseUrl, key)} copyLabel="Copy Claude Code command" />
      <h4>Codex CLI</h4>
      <Snippet
        id="setup-codex-config"
        title="~/.codex/config.toml"
        text={codexConfigToml(baseUrl)}
        copyLabel="Copy Codex config.toml"
      />
      <Snippet id="setup-codex-run" title="Shell" text={codexCommand(key)} copyLabel="Copy Codex command" />
    </section>
  );
}
