import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { callsOf, fails, renderWithIpc } from "../../test/harness";
import { PreferencesPage } from "./PreferencesPage";

describe("PreferencesPage", () => {
  it("edits the desktop preferences and maps a rejected port onto its field", async () => {
    const user = userEvent.setup();
    let reject = true;
    const { calls } = renderWithIpc(<PreferencesPage />, {
      desktop_prefs_set: (a) =>
        reject
          ? Promise.reject({
              code: "validation_failed",
              message: "1 invalid field",
              issues: [{ path: "/port", message: "must be between 1024 and 65535 (ports below 1024 need root)" }],
            })
          : a.prefs,
    });
    const card = await screen.findByRole("region", { name: "Desktop app" });
    const port = await within(card).findByLabelText("Port");
    expect(port).toHaveValue(7821);
    await user.clear(port);
    await user.type(port, "80");
    await user.click(within(card).getByRole("switch", { name: "Launch at login" }));
    await user.click(within(card).getByRole("button", { name: "Save desktop preferences" }));
    await waitFor(() => expect(port).toHaveAccessibleDescription(/ports below 1024 need root/));
    expect(callsOf(calls, "desktop_prefs_set")[0].args).toEqual({
      prefs: { port: 80, launchAtLogin: true, startHidden: false, theme: "system" },
    });
    reject = false;
    await user.clear(port);
    await user.type(port, "7900");
    await user.click(within(card).getByRole("button", { name: "Save desktop preferences" }));
    expect(await within(card).findByText("Saved.")).toBeInTheDocument();
  });

  it("works without the gateway and says the port in force comes from SWITCHYARD_PORT", async () => {
    renderWithIpc(<PreferencesPage />, {
      gateway_status: fails("gateway_unavailable", "the gateway is not running"),
      desktop_status: () => ({
        running: false,
        listen: null,
        error: "port 7821 is already in use",
        port: 7821,
        portSource: "SWITCHYARD_PORT",
      }),
      desktop_prefs_get: () => ({ port: 7900, launchAtLogin: false, startHidden: false, theme: "system" }),
    });
    const card = await screen.findByRole("region", { name: "Desktop app" });
    const port = await within(card).findByLabelText("Port");
    expect(port).toHaveValue(7900);
    await waitFor(() =>
      expect(port).toHaveAccessibleDescription(/Tried to start on 7821 \(from SWITCHYARD_PORT, which overrides this setting\)\./),
    );
  });

  it("says nothing more beside the port when the saved one is in force", async () => {
    renderWithIpc(<PreferencesPage />, {
      desktop_status: () => ({ running: true, listen: "127.0.0.1:7821", error: null, port: 7821, portSource: "preferences" }),
    });
    const port = await screen.findByLabelText("Port");
    await waitFor(() => expect(port).toHaveAccessibleDescription(/applies at the next start/));
    expect(port).not.toHaveAccessibleDescription(/Running on/);
  });
});
