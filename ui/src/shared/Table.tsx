// The frame every list table shares: the scroll wrapper (a wide table scrolls inside
// its card, never the page), a caption for screen readers, and the header row.
// `actions` adds a last column, named for screen readers only, for the row buttons.
// The children are the table's bodies (`<tbody>`: one, or one per group).
import type { ReactNode } from "react";

export function Table({
  caption,
  columns,
  actions = false,
  className,
  children,
}: {
  caption: string;
  /** Column headings; `false` leaves a column out. */
  columns: (ReactNode | false)[];
  actions?: boolean;
  className?: string;
  children: ReactNode;
}) {
  return (
    <div className="table-wrap">
      <table className={className}>
        <caption className="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns
              .filter((c) => c !== false)
              .map((c, i) => (
                <th key={i} scope="col">
                  {c}
                </th>
              ))}
            {actions && (
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        {children}
      </table>
    </div>
  );
}
