// A connection in a table cell: its name over its id. One not known (deleted since,
// or the list still loading) shows its id only.
export function ConnectionName({ id, name }: { id: string; name: string | undefined }) {
  return (
    <div className="cell-name">
      {name !== undefined && <span>{name}</span>}
      <code className="muted small">{id}</code>
    </div>
  );
}
