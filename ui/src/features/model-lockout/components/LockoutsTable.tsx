// Active model lockouts with a per-row re-enable.
import type { ModelLockoutView } from "../../../ipc/bindings";
import { Countdown } from "../../../shared/Countdown";
import { humanize } from "../../../shared/format";
import { Table } from "../../../shared/Table";

const SCOPE_LABEL: Record<ModelLockoutView["scope"], string> = {
  quota_family: "quota family",
  model: "model",
  exact: "exact",
};

export function LockoutsTable({
  lockouts,
  busyKey,
  onReEnable,
}: {
  lockouts: ModelLockoutView[];
  busyKey: string | null;
  onReEnable: (l: ModelLockoutView) => void;
}) {
  return (
    <Table
      caption="Active model lockouts"
      columns={["Provider", "Connection", "Model", "Scope", "Reason", "Expires in", "Failures"]}
      actions
    >
      <tbody>
        {lockouts.map((l) => {
          const key = lockoutKey(l);
          return (
            <tr key={key}>
              <td>{l.provider}</td>
              <td>{l.connection}</td>
              <th scope="row">
                <code>{l.model}</code>
              </th>
              <td>{SCOPE_LABEL[l.scope]}</td>
              <td>{humanize(l.reason)}</td>
              <td>
                <Countdown expiresAt={l.expiresAt} expiredLabel="ending" />
              </td>
              <td>{l.failureCount}</td>
              <td className="actions">
                <button
                  type="button"
                  className="btn btn-small"
                  aria-label={`Re-enable ${l.model} on ${l.connection}`}
                  disabled={busyKey === key}
                  onClick={() => onReEnable(l)}
                >
                  Re-enable
                </button>
              </td>
            </tr>
          );
        })}
      </tbody>
    </Table>
  );
}

export function lockoutKey(l: Pick<ModelLockoutView, "provider" | "connection" | "model">): string {
  return `${l.provider}\u0000${l.connection}\u0000${l.model}`;
}
