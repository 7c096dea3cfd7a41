// The active exclusive leases, oldest first, each with Release (confirmed inline).
// The owner token is never listed; the holder is shown by its client key.
import type { LeaseView } from "../../../ipc/bindings";
import { Ago } from "../../../shared/Ago";
import { ConfirmAction } from "../../../shared/ConfirmAction";
import { ConnectionName } from "../../../shared/ConnectionName";
import { Countdown } from "../../../shared/Countdown";
import { Table } from "../../../shared/Table";

/** The client key holding a lease, by name (its id when it has none). */
export function holderOf(lease: LeaseView): string {
  return lease.keyName ?? lease.keyId;
}

export function LeasesTable({
  leases,
  names,
  onRelease,
}: {
  leases: LeaseView[];
  /** Connection names by id (a connection not known is shown by its id). */
  names: Map<string, string>;
  onRelease: (lease: LeaseView) => Promise<unknown>;
}) {
  return (
    <Table
      caption="Active leases"
      columns={["Client key", "Connection", "Provider", "Generation", "Acquired", "Renewed", "Expires in"]}
      actions
    >
      <tbody>
        {leases.map((l) => {
          const where = names.get(l.connection) ?? l.connection;
          return (
            <tr key={l.id}>
              <th scope="row">{l.keyName ?? <code>{l.keyId}</code>}</th>
              <td>
                <ConnectionName id={l.connection} name={names.get(l.connection)} />
              </td>
              <td>{l.provider}</td>
              <td>{l.generation}</td>
              <td>
                <Ago at={l.acquiredAt} />
              </td>
              <td>
                <Ago at={l.renewedAt} />
              </td>
              <td>
                <Countdown expiresAt={l.expiresAt} expiredLabel="lapsing" />
              </td>
              <td className="actions">
                <ConfirmAction
                  label="Release"
                  accessibleLabel={`Release the lease of ${holderOf(l)} on ${where}`}
                  prompt="Its next request is refused."
                  confirmLabel="Release lease"
                  onConfirm={() => onRelease(l)}
                />
              </td>
            </tr>
          );
        })}
      </tbody>
    </Table>
  );
}
