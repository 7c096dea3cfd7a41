// Client API keys: names only (never secrets), create (the plaintext is shown once),
// delete with confirmation.
import { useState, type FormEvent } from "react";
import { ConfirmAction } from "../../../shared/ConfirmAction";
import { CopyButton } from "../../../shared/CopyButton";
import { FormErrors, TextField } from "../../../shared/fields";
import { formatInstant } from "../../../shared/format";
import { EmptyState, ErrorState, Loading } from "../../../shared/states";
import { Table } from "../../../shared/Table";
import { useFieldErrors } from "../../../shared/useFieldErrors";
import { useCreateKey, useDeleteKey, useKeysQuery } from "../api";

export type CreatedKey = { name: string; secret: string };

const KEY_FIELDS = ["/name", "/key", "/scopes", "/allowedConnections"] as const;

export function ClientKeysCard({
  created,
  onCreated,
  onDismiss,
}: {
  created: CreatedKey | null;
  onCreated: (key: CreatedKey) => void;
  onDismiss: () => void;
}) {
  const keys = useKeysQuery();
  const createKey = useCreateKey();
  const deleteKey = useDeleteKey();
  const [name, setName] = useState("");
  const errors = useFieldErrors(KEY_FIELDS);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    errors.clear();
    if (name.trim() === "") {
      errors.setClientErrors({ "/name": "Give the key a name, e.g. the agent or machine using it." });
      return;
    }
    try {
      const result = await createKey.mutateAsync({ name: name.trim(), key: null, scopes: [], allowedConnections: [] });
      setName("");
      if (result.secret) onCreated({ name: result.key.name, secret: result.secret });
    } catch (err) {
      errors.setError(err);
    }
  };

  return (
    <section className="card" aria-labelledby="keys-title">
      <header className="card-header">
        <h2 id="keys-title">Client keys</h2>
      </header>
      <p className="card-description">
        Agents authenticate to the gateway with a client key. Keys are stored only as a hash: the key itself is
        shown once, when it is created.
      </p>
      {created && (
        <div className="secret-box" role="region" aria-label="New client key">
          <p>
            <strong>New key “{created.name}”.</strong> Copy it now: it will not be shown again.
          </p>
          <div className="kv-with-action">
            <code className="secret" data-testid="new-key-secret">
              {created.secret}
            </code>
            <CopyButton text={created.secret} label="Copy new client key" />
          </div>
          <p className="field-help">The setup commands below now contain this key.</p>
          <button type="button" className="btn btn-small btn-ghost" onClick={onDismiss}>
            I have saved it
          </button>
        </div>
      )}
      {keys.isPending ? (
        <Loading label="Loading client keys…" />
      ) : keys.isError ? (
        <ErrorState title="Could not load client keys" error={keys.error} onRetry={() => void keys.refetch()} />
      ) : keys.data.length === 0 ? (
        <EmptyState title="No client keys yet">
          Create one below and paste it into your agent’s setup. Without a key, agents are refused unless the
          gateway allows unauthenticated loopback clients.
        </EmptyState>
      ) : (
        <Table caption="Client keys" columns={["Name", "Scopes", "Created"]} actions>
          <tbody>
            {keys.data.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>{k.scopes.length ? k.scopes.join(", ") : <span className="muted">none</span>}</td>
                <td>{k.createdAt === null ? <span className="muted">—</span> : formatInstant(k.createdAt)}</td>
                <td className="actions">
                  <ConfirmAction
                    label="Delete"
                    accessibleLabel={`Delete client key ${k.name}`}
                    prompt={`Agents using “${k.name}” will be refused.`}
                    confirmLabel="Delete key"
                    onConfirm={() => deleteKey.mutateAsync(k.id).catch(() => undefined)}
                  />
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      {deleteKey.error ? (
        <p className="inline-error" role="alert">
          {deleteKey.error.message}
        </p>
      ) : null}
      <form className="inline-form" noValidate onSubmit={submit}>
        <TextField
          id="new-key-name"
          label="Key name"
          path="/name"
          value={name}
          onChange={setName}
          placeholder="e.g. laptop-claude-code"
          error={errors.fieldError("/name")}
        />
        <button type="submit" className="btn btn-primary" disabled={createKey.isPending}>
          Create client key
        </button>
      </form>
      <FormErrors error={errors.error} issues={errors.formIssues} />
    </section>
  );
}
