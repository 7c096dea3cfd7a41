// Builds the Api adapter for the detected transport; in a browser without a
// management token it asks for one first.
import { useMemo, useState, type FormEvent, type ReactNode } from "react";
import { ApiProvider } from "./ApiProvider";
import { detectConnection, TOKEN_STORAGE_KEY, type Connection } from "./connect";
import { createHttpApi } from "./httpApi";
import { createIpcApi } from "./ipcApi";

export function Bootstrap({ children, initial }: { children: ReactNode; initial?: Connection }) {
  const [connection, setConnection] = useState<Connection>(() => initial ?? detectConnection());
  const [rejected, setRejected] = useState(false);

  const api = useMemo(() => {
    if (connection.transport === "ipc") return createIpcApi();
    if (connection.token === null) return null;
    return createHttpApi(connection.baseUrl, connection.token, {
      onUnauthorized: () => {
        sessionStorage.removeItem(TOKEN_STORAGE_KEY);
        setRejected(true);
        setConnection({ ...connection, token: null });
      },
    });
  }, [connection]);

  if (api === null) {
    return (
      <TokenForm
        rejected={rejected}
        onSubmit={(token) => {
          sessionStorage.setItem(TOKEN_STORAGE_KEY, token);
          setRejected(false);
          setConnection({ transport: "http", baseUrl: connection.transport === "http" ? connection.baseUrl : window.location.origin, token });
        }}
      />
    );
  }
  return <ApiProvider api={api}>{children}</ApiProvider>;
}

export function TokenForm({ rejected, onSubmit }: { rejected: boolean; onSubmit: (token: string) => void }) {
  const [token, setToken] = useState("");
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (token.trim()) onSubmit(token.trim());
  };
  return (
    <main className="token-gate">
      <form className="card" onSubmit={submit}>
        <h1>Switchyard</h1>
        <p>
          Enter the management token (printed by <code>switchyard serve</code> and stored in{" "}
          <code>&lt;data dir&gt;/management-token</code>).
        </p>
        {rejected && (
          <p className="inline-error" role="alert">
            The gateway rejected that token. Check it and try again.
          </p>
        )}
        <div className="field">
          <label htmlFor="management-token">Management token</label>
          <input
            id="management-token"
            type="password"
            autoComplete="off"
            spellCheck={false}
            value={token}
            onChange={(e) => setToken(e.target.value)}
          />
        </div>
        <div className="card-actions">
          <button type="submit" className="btn btn-primary" disabled={token.trim() === ""}>
            Connect
          </button>
        </div>
      </form>
    </main>
  );
}
