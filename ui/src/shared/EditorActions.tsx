// The end of a document editor (a connection, a combo): Save, Cancel and the save
// status, which says "Reloading…" while a refused stale save refetches the document.
import type { ReactNode } from "react";

export function EditorActions({
  busy,
  reloading,
  status,
  onCancel,
}: {
  busy: boolean;
  reloading: boolean;
  status: ReactNode;
  onCancel: () => void;
}) {
  return (
    <div className="card-actions">
      <button type="submit" className="btn btn-primary" disabled={busy}>
        Save
      </button>
      <button type="button" className="btn btn-ghost" onClick={onCancel}>
        Cancel
      </button>
      <span className="card-status" role="status">
        {reloading ? "Reloading…" : busy ? "Saving…" : status}
      </span>
    </div>
  );
}
