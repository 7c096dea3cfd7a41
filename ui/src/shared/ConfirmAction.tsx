// A destructive action that asks for confirmation inline (no modal): the first click
// shows the question with Confirm / Cancel; focus moves to Confirm.
import { useState, type ReactNode } from "react";

export function ConfirmAction({
  label,
  accessibleLabel,
  prompt,
  confirmLabel,
  onConfirm,
  disabled,
  danger = true,
}: {
  /** Visible text of the first button. */
  label: string;
  /** Accessible name of the first button (defaults to `label`). */
  accessibleLabel?: string;
  prompt: ReactNode;
  confirmLabel: string;
  onConfirm: () => void | Promise<unknown>;
  disabled?: boolean;
  danger?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  if (!asking) {
    return (
      <button
        type="button"
        className={`btn btn-small${danger ? " btn-danger-ghost" : ""}`}
        aria-label={accessibleLabel}
        disabled={disabled}
        onClick={() => setAsking(true)}
      >
        {label}
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={accessibleLabel ?? label}>
      <span className="confirm-prompt">{prompt}</span>
      <button
        type="button"
        className={`btn btn-small${danger ? " btn-danger" : " btn-primary"}`}
        autoFocus
        disabled={busy}
        onClick={async () => {
          setBusy(true);
          try {
            await onConfirm();
          } finally {
            setBusy(false);
            setAsking(false);
          }
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" className="btn btn-small btn-ghost" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
