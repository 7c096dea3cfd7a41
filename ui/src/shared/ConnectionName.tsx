// A connection in a table cell: its name over its id (and, with `provider`, its
// provider under them). One not known (deleted since, or the list still loading)
// shows its id only.
export function ConnectionName({ id, name, provider }: { id: string; name: string | undefined; provider?: string }) {
  return (
    <div className="cell-name">
      {name !== undefined && <span>{name}</span>}
      <code className="muted small">{id}</code>
      {provider !== undefined && <span className="small muted">{provider}</span>}
    </div>
  );
}
