import { render, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { RoutabilityState } from "../ipc/bindings";
import * as f from "../test/fixtures";
import { StatusBadge } from "./StatusBadge";

describe("StatusBadge", () => {
  it("shows the gateway's label in a tone by state, the sentence why as its tooltip", () => {
    const tones: [RoutabilityState, string][] = [
      ["routable", "badge-ok"],
      ["breaker-open", "badge-danger"],
      ["terminal", "badge-danger"],
      ["test-failed", "badge-danger"],
      ["cooling", "badge-warning"],
      ["models-locked", "badge-warning"],
      ["paused", "badge-warning"],
      ["breaker-half-open", "badge-info"],
      ["usage-wall", "badge-info"],
      ["disabled", "badge-muted"],
    ];
    for (const [state, tone] of tones) {
      const { unmount } = render(<StatusBadge status={f.routability({ state, label: `L-${state}`, detail: `why ${state}` })} />);
      const badge = screen.getByText(`L-${state}`);
      expect(badge).toHaveClass("badge", tone);
      expect(badge).toHaveAttribute("title", `why ${state}`);
      unmount();
    }
  });

  it("counts down to the status's end, and shows the sentence under it only when asked and not plainly routable", () => {
    const { rerender } = render(<StatusBadge status={f.breakerOpen()} showDetail />);
    expect(screen.getByText("Breaker open").parentElement).toHaveTextContent(/^Breaker openends in (59|60|1m 00)s$/);
    expect(screen.getByText(/^Provider 'glm' failed 2 times in a row/)).toHaveClass("status-detail");
    rerender(<StatusBadge status={f.breakerOpen()} />);
    expect(screen.queryByText(/^Provider 'glm' failed/)).not.toBeInTheDocument();
    rerender(<StatusBadge status={f.routability()} showDetail />);
    expect(screen.getByText("Active")).toBeInTheDocument();
    expect(screen.queryByText("In rotation.")).not.toBeInTheDocument();
    expect(document.querySelector("time")).toBeNull();
  });
});
