// The live session-affinity pins, grouped by connection: the gateway forgets pins per
// connection (or all), so each group has one Forget spanning its rows. A session is
// shown only as the hash prefix the gateway lists.
import type { SessionPinView } from "../../../ipc/bindings";
import { Ago } from "../../../shared/Ago";
import { ConnectionName } from "../../../shared/ConnectionName";
import { Countdown } from "../../../shared/Countdown";
import { formatInstant } from "../../../shared/format";
import { Table } from "../../../shared/Table";

export type PinGroup = { connection: string; pins: SessionPinView[] };

/** Pins by connection, groups in the order their first pin comes (the list is most recent first). */
export function groupByConnection(pins: SessionPinView[]): PinGroup[] {
  const groups = new Map<string, SessionPinView[]>();
  for (const pin of pins) groups.set(pin.connection, [...(groups.get(pin.connection) ?? []), pin]);
  return [...groups].map(([connection, grouped]) => ({ connection, pins: grouped }));
}

export function PinsTable({
  pins,
  names,
  busy,
  onForget,
}: {
  pins: SessionPinView[];
  /** Connection names by id (a connection deleted since is shown by its id). */
  names: Map<string, string>;
  busy: boolean;
  onForget: (connection: string) => void;
}) {
  return (
    <Table
      caption="Pinned sessions"
      columns={["Session", "Provider", "Connection", "Last seen", "Expires in"]}
      actions
      className="grouped-table"
    >
      {groupByConnection(pins).map((group) => {
        const name = names.get(group.connection);
        return (
          <tbody key={group.connection}>
            {group.pins.map((pin, i) => (
              <tr key={`${pin.provider}\u0000${pin.session}`}>
                <th scope="row">
                  <code title={`Pinned ${formatInstant(pin.pinnedAt)}`}>{pin.session}</code>
                </th>
                <td>{pin.provider}</td>
                <td>
                  <ConnectionName id={pin.connection} name={name} />
                </td>
                <td>
                  <Ago at={pin.lastSeenAt} />
                </td>
                <td>
                  <Countdown expiresAt={pin.expiresAt} expiredLabel="lapsing" />
                </td>
                {i === 0 && (
                  <td className="actions" rowSpan={group.pins.length}>
                    <button
                      type="button"
                      className="btn btn-small"
                      aria-label={`Forget sessions pinned to ${name ?? group.connection}`}
                      disabled={busy}
                      onClick={() => onForget(group.connection)}
                    >
                      Forget
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        );
      })}
    </Table>
  );
}
