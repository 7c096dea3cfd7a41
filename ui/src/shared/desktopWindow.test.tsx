import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import { App } from "../App";
import * as f from "../test/fixtures";
import { callsOf, renderWithIpc } from "../test/harness";

describe("the desktop window", () => {
  it("tells the app when unsaved edits appear and when they go", async () => {
    const user = userEvent.setup();
    window.location.hash = "#/connections";
    const { calls } = renderWithIpc(<App />, { connections_list: () => [f.connection()] });
    await user.click(await screen.findByRole("button", { name: "Edit connection GLM main" }));
    expect(callsOf(calls, "desktop_set_unsaved_edits")).toEqual([]);
    await user.type(screen.getByLabelText("Name"), " two");
    await waitFor(() =>
      expect(callsOf(calls, "desktop_set_unsaved_edits").map((c) => c.args)).toEqual([{ unsaved: true }]),
    );
    await user.click(screen.getByRole("button", { name: "Cancel" }));
    await waitFor(() =>
      expect(callsOf(calls, "desktop_set_unsaved_edits").map((c) => c.args)).toEqual([
        { unsaved: true },
        { unsaved: false },
      ]),
    );
  });

  it("closes on Ctrl+W, and not on W, Ctrl+Shift+W or Alt+W", async () => {
    const user = userEvent.setup();
    window.location.hash = "#/overview";
    const { calls } = renderWithIpc(<App />);
    await screen.findByRole("heading", { level: 1, name: "Overview" });
    await user.keyboard("w");
    await user.keyboard("{Control>}{Shift>}w{/Shift}{/Control}");
    await user.keyboard("{Alt>}w{/Alt}");
    expect(callsOf(calls, "desktop_close_window")).toEqual([]);
    await user.keyboard("{Control>}w{/Control}");
    await waitFor(() => expect(callsOf(calls, "desktop_close_window")).toHaveLength(1));
  });
});
