// Ready-to-paste setup for Claude Code and Codex CLI.
import { CopyButton } from "../../../shared/CopyButton";
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
        {secret ? (
          "These commands contain the key you just created."
        ) : (
          <>
            Replace <code>{KEY_PLACEHOLDER}</code> with a client key (create one above).
          </>
        )}
      </p>
      <h3>Claude Code</h3>
      <Snippet id="setup-claude" title="Shell" text={claudeCodeCommand(baseUrl, key)} copyLabel="Copy Claude Code command" />
      <h3>Codex CLI</h3>
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
