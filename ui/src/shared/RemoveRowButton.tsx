// A list editor's Remove button (error rules, combo targets): named for screen
// readers by the row it removes ("Remove rule 2"), disabled while the list saves.
export function RemoveRowButton({
  what,
  n,
  disabled,
  onClick,
}: {
  /** What a row is ("rule", "target"). */
  what: string;
  /** The row's number as the page shows it (1-based). */
  n: number;
  disabled: boolean;
  onClick: () => void;
}) {
  return (
    <button
      type="button"
      className="btn btn-small btn-danger-ghost"
      aria-label={`Remove ${what} ${n}`}
      disabled={disabled}
      onClick={onClick}
    >
      Remove
    </button>
  );
}
