import { act, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { App } from "../App";
import * as f from "../test/fixtures";
import { renderWithIpc } from "../test/harness";
import { hasUnsavedChanges } from "./unsavedChanges";

/** The App on the Connections page, with GLM main's edit form open and its name changed. */
async function editingConnection() {
  const user = userEvent.setup();
  window.location.hash = "#/connections";
  renderWithIpc(<App />, { connections_list: () => [f.connection()] });
  await user.click(await screen.findByRole("button", { name: "Edit connection GLM main" }));
  await user.type(screen.getByLabelText("Name"), " two");
  return user;
}

describe("unsaved-changes guard", () => {
  it("asks before a sidebar link leaves a page with unsaved edits; declined, the page and the edits stay", async () => {
    const user = await editingConnection();
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(false);
    await user.click(screen.getByRole("link", { name: "Overview" }));
    expect(confirm).toHaveBeenCalledWith(
      "You have unsaved changes (your changes to GLM main). Leave this page and lose them?",
    );
    expect(window.location.hash).toBe("#/connections");
    expect(screen.getByRole("heading", { level: 1, name: "Connections" })).toBeInTheDocument();
    expect(screen.getByLabelText("Name")).toHaveValue("GLM main two");

    confirm.mockReturnValue(true);
    await user.click(screen.getByRole("link", { name: "Overview" }));
    expect(await screen.findByRole("heading", { level: 1, name: "Overview" })).toBeInTheDocument();
    // Asked once for the link, not again for its hash change.
    expect(confirm).toHaveBeenCalledTimes(2);
    expect(hasUnsavedChanges()).toBe(false);
  });

  it("asks before any other hash change leaves the page; declined, the address goes back", async () => {
    await editingConnection();
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(false);
    await act(async () => {
      window.location.hash = "#/combos";
      await new Promise((r) => setTimeout(r, 20));
    });
    expect(confirm).toHaveBeenCalledTimes(1);
    expect(window.location.hash).toBe("#/connections");
    expect(screen.getByRole("heading", { level: 1, name: "Connections" })).toBeInTheDocument();
    expect(screen.getByLabelText("Name")).toHaveValue("GLM main two");
  });

  it("asks the browser's question on unload while edits are unsaved, and nothing once they are gone", async () => {
    const user = await editingConnection();
    const unload = () => {
      const e = new Event("beforeunload", { cancelable: true });
      window.dispatchEvent(e);
      return e.defaultPrevented;
    };
    expect(unload()).toBe(true);
    await user.click(screen.getByRole("button", { name: "Cancel" }));
    await waitFor(() => expect(hasUnsavedChanges()).toBe(false));
    expect(unload()).toBe(false);
  });

  it("does not ask without unsaved edits, nor between a page's own addresses", async () => {
    const user = userEvent.setup();
    const confirm = vi.spyOn(window, "confirm");
    window.location.hash = "#/connections";
    renderWithIpc(<App />, { connections_list: () => [f.connection()] });
    await user.click(await screen.findByRole("button", { name: "Edit connection GLM main" }));
    await user.click(screen.getByRole("link", { name: "Requests" }));
    expect(await screen.findByRole("heading", { level: 1, name: "Requests" })).toBeInTheDocument();
    await act(async () => {
      window.location.hash = "#/requests/req-1";
      await new Promise((r) => setTimeout(r, 20));
    });
    expect(confirm).not.toHaveBeenCalled();
  });

  it("guards the Resilience page's settings cards", async () => {
    const user = userEvent.setup();
    window.location.hash = "#/resilience";
    renderWithIpc(<App />);
    const input = await waitFor(() => {
      const el = document.querySelector<HTMLInputElement>('[data-path="/sessionAffinityTtlMs"]');
      if (!el) throw new Error("not yet");
      return el;
    });
    await user.clear(input);
    await user.type(input, "120000");
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(false);
    await user.click(screen.getByRole("link", { name: "Leases" }));
    expect(confirm.mock.calls[0][0]).toMatch(/^You have unsaved changes \(Session affinity\)/);
    expect(screen.getByRole("heading", { level: 1, name: "Resilience" })).toBeInTheDocument();
  });
});
