// What a form shows when the gateway refused a save with 412 `precondition_failed`:
// the document changed elsewhere (another window, the desktop app, a script) after
// the form loaded it. Nothing was saved and nothing was overwritten; Reload refetches
// the document and keeps the user's edits on top of it, to review and save again.
import type { ReactNode } from "react";

export const CHANGED_ELSEWHERE_TITLE = "Changed elsewhere — reload";

export function ChangedElsewhere({
  what,
  title,
  busy,
  onReload,
}: {
  /** What changed, as the sentence's subject: "These settings", "This connection". */
  what: string;
  /** The form's title, for the Reload button's accessible name ("Reload Request queue"). */
  title: ReactNode;
  busy?: boolean;
  onReload: () => void;
}) {
  return (
    <div className="form-errors changed-elsewhere" role="alert">
      <p className="form-errors-title">{CHANGED_ELSEWHERE_TITLE}</p>
      <p className="changed-elsewhere-body">
        {what} changed somewhere else (another window, the desktop app or a script) after this form was loaded, so
        your change was <strong>not saved</strong> and nothing was overwritten. Reload loads the current values and
        keeps your edits on top of them, for you to review and save again.
      </p>
      <button type="button" className="btn btn-small" disabled={busy} onClick={onReload}>
        Reload <span className="sr-only">{title}</span>
      </button>
    </div>
  );
}

/** The status line after a reload that followed a refused save. */
export function reloadedText(editsKept: boolean): string {
  return editsKept
    ? "Reloaded the current values. Your edits are kept on top of them: review and save again."
    : "Reloaded the current values. Your change was not saved.";
}
