// One combo in the list: its name, strategy (and what it does), and its targets in
// order, each with its pin, its weight (weighted combos) and, live, the connections
// it runs on.
import type { ComboView, ConnectionView, Versioned } from "../../../ipc/bindings";
import { ConfirmAction } from "../../../shared/ConfirmAction";
import { Table } from "../../../shared/Table";
import { DEFAULT_WEIGHT } from "../form";
import { resolveTarget } from "../routing";
import { strategyInfo } from "../strategies";
import { TargetRuns, type LiveMaps } from "./TargetRuns";

/** A DOM id fragment for a combo name (names may hold `/`, `.` and `:`). */
function slug(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, "_");
}

export function ComboCard({
  combo,
  combos,
  connections,
  live,
  onEdit,
  onDelete,
}: {
  combo: Versioned<ComboView>;
  combos: ComboView[];
  /** Undefined while the connections are loading. */
  connections: ConnectionView[] | undefined;
  live: LiveMaps;
  onEdit: () => void;
  onDelete: () => Promise<unknown>;
}) {
  const info = strategyInfo(combo.strategy);
  const weighted = combo.strategy === "weighted";
  const titleId = `combo-${slug(combo.name)}-title`;
  const referrers = combos.filter((c) => c.name !== combo.name && c.targets.some((t) => t.model === combo.name));
  const nameOf = (id: string) => connections?.find((c) => c.id === id)?.name ?? id;
  const resolutions = combo.targets.map((t) => (connections ? resolveTarget(t, connections, combos, combo.name) : null));
  const formats = new Set(
    resolutions.flatMap((r) => (r === null || r.kind === "none" ? [] : r.runs.map((x) => x.connection.apiFormat))),
  );
  return (
    <section className="card card-wide" aria-labelledby={titleId}>
      <header className="card-header">
        <div className="combo-title">
          <h2 id={titleId}>{combo.name}</h2>
          <span className="badge badge-info">{info.label}</span>
        </div>
        <div className="actions">
          <button type="button" className="btn btn-small" aria-label={`Edit combo ${combo.name}`} onClick={onEdit}>
            Edit
          </button>
          <ConfirmAction
            label="Delete"
            accessibleLabel={`Delete combo ${combo.name}`}
            prompt={
              referrers.length > 0
                ? `“${combo.name}” is a target of ${referrers.map((c) => c.name).join(", ")}; remove it there first. Try anyway?`
                : `Delete “${combo.name}”? Clients sending it as the model then get a 404.`
            }
            confirmLabel="Delete combo"
            onConfirm={onDelete}
          />
        </div>
      </header>
      <p className="card-description">{info.explanation}</p>
      {formats.size > 1 && (
        <p className="field-hint">
          This combo mixes API formats: every target serves every client. A target that does not speak the request's
          format gets it translated, and within a priority level the ones that speak it go first.
        </p>
      )}
      <Table
        caption={`Targets of ${combo.name}`}
        columns={["#", "Target", "Pinned to", weighted && "Weight", "Runs on (live)"]}
      >
        <tbody>
          {combo.targets.map((t, i) => {
            const isCombo = combos.some((c) => c.name === t.model);
            const resolution = resolutions[i];
            return (
              <tr key={`${i}:${t.model}`}>
                <td>{i + 1}</td>
                <th scope="row">
                  <code>{t.model}</code>
                  {isCombo && (
                    <>
                      {" "}
                      <span className="badge badge-muted">combo</span>
                    </>
                  )}
                </th>
                <td>{t.connection ? nameOf(t.connection) : <span className="muted">any</span>}</td>
                {weighted && <td>{t.weight ?? DEFAULT_WEIGHT}</td>}
                <td>
                  {resolution === null ? (
                    <span className="muted">—</span>
                  ) : (
                    <TargetRuns resolution={resolution} live={live} showFormat={formats.size > 1} />
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </Table>
    </section>
  );
}
