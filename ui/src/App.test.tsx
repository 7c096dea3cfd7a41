import { act, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { App } from "./App";
import { Bootstrap } from "./api/Bootstrap";
import { TOKEN_STORAGE_KEY, takeTokenFromLocation } from "./api/connect";
import { hrefFor, paramFromHash, routeFromHash } from "./router";
import { defaultHandlers, fails, renderWithIpc, testQueryClient } from "./test/harness";

describe("router", () => {
  it("maps hashes to pages, defaulting to the overview", () => {
    expect(routeFromHash("#/cooldowns")).toBe("cooldowns");
    expect(routeFromHash("#/model-lockout")).toBe("model-lockout");
    expect(routeFromHash("#/combos")).toBe("combos");
    expect(routeFromHash("#/leases")).toBe("leases");
    expect(routeFromHash("#/requests/req-1")).toBe("requests");
    expect(paramFromHash("#/requests/req%2F1")).toBe("req/1");
    expect(paramFromHash("#/requests")).toBeNull();
    expect(hrefFor("requests", "a/b")).toBe("#/requests/a%2Fb");
    expect(routeFromHash("")).toBe("overview");
    expect(routeFromHash("#/nope")).toBe("overview");
  });
});

describe("App", () => {
  it("navigates between pages from the sidebar", async () => {
    const user = userEvent.setup();
    renderWithIpc(<App />);
    expect(await screen.findByRole("heading", { level: 1, name: "Overview" })).toBeInTheDocument();
    const nav = screen.getByRole("navigation", { name: "Pages" });
    expect(screen.getByRole("link", { name: "Overview" })).toHaveAttribute("aria-current", "page");
    for (const [link, heading] of [
      ["Connections", "Connections"],
      ["Requests", "Requests"],
      ["Combos", "Combos"],
      ["Resilience", "Resilience"],
      ["Model Lockout", "Model Lockout"],
      ["Cooldown Manager", "Cooldown Manager"],
      ["Leases", "Leases"],
      ["Preferences", "Preferences"],
    ]) {
      await user.click(screen.getByRole("link", { name: link }));
      expect(await screen.findByRole("heading", { level: 1, name: heading })).toBeInTheDocument();
      expect(nav.querySelector("[aria-current=page]")).toHaveTextContent(link);
    }
  });

  it("shows a banner when the desktop gateway is not running", async () => {
    renderWithIpc(<App />, {
      desktop_status: () => ({ running: false, listen: null, error: "port 7821 in use" }),
    });
    const banner = await screen.findByText(/Gateway not running/);
    expect(banner.closest("[role=alert]")).toHaveTextContent("Gateway not running: port 7821 in use");
  });

  it("links the Gateway not running banner to Preferences, and every page shows its error instead of crashing", async () => {
    const user = userEvent.setup();
    const down = fails("gateway_unavailable", "the gateway is not running: port 7821 is already in use");
    const gatewayDown = Object.fromEntries(
      Object.keys(defaultHandlers())
        .filter((cmd) => !cmd.startsWith("desktop_"))
        .map((cmd) => [cmd, down]),
    );
    renderWithIpc(<App />, {
      ...gatewayDown,
      desktop_status: () => ({
        running: false,
        listen: null,
        error: "port 7821 is already in use; choose another port in Preferences",
        port: 7821,
        portSource: "preferences",
      }),
    });
    const nav = screen.getByRole("navigation", { name: "Pages" });
    for (const link of ["Connections", "Requests", "Combos", "Resilience", "Model Lockout", "Cooldown Manager", "Leases", "Overview"]) {
      await user.click(within(nav).getByRole("link", { name: link }));
      expect(await screen.findByRole("heading", { level: 1, name: link })).toBeInTheDocument();
      await waitFor(() => expect(within(screen.getByRole("main")).getAllByRole("alert").length).toBeGreaterThan(0));
    }
    const banner = (await screen.findByText("Gateway not running")).closest("[role=alert]") as HTMLElement;
    await user.click(within(banner).getByRole("link", { name: "Open Preferences" }));
    expect(await screen.findByRole("heading", { level: 1, name: "Preferences" })).toBeInTheDocument();
    expect(await screen.findByLabelText("Port")).toHaveValue(7821);
    window.location.hash = "";
  });

  it("lists Preferences only in the desktop app", async () => {
    const { createHttpApi } = await import("./api/httpApi");
    const { ApiProvider } = await import("./api/ApiProvider");
    const api = createHttpApi("http://127.0.0.1:1", "t", { fetchImpl: () => new Promise<Response>(() => {}) });
    render(
      <ApiProvider api={api} queryClient={testQueryClient()}>
        <App />
      </ApiProvider>,
    );
    const nav = screen.getByRole("navigation", { name: "Pages" });
    expect(within(nav).getByRole("link", { name: "Leases" })).toBeInTheDocument();
    expect(within(nav).queryByRole("link", { name: "Preferences" })).not.toBeInTheDocument();
  });

  it("applies the desktop theme preference", async () => {
    renderWithIpc(<App />, {
      desktop_prefs_get: () => ({ port: 7821, launchAtLogin: false, startHidden: false, theme: "dark" }),
    });
    await waitFor(() => expect(document.documentElement).toHaveAttribute("data-theme", "dark"));
    act(() => document.documentElement.removeAttribute("data-theme"));
  });
});

describe("browser transport", () => {
  it("takes the token from the URL fragment and strips it", () => {
    window.history.replaceState(null, "", "/ui/#token=abc%20123");
    expect(takeTokenFromLocation()).toBe("abc 123");
    expect(window.location.hash).toBe("#/overview");
    window.history.replaceState(null, "", "/ui/#/cooldowns?token=xyz");
    expect(takeTokenFromLocation()).toBe("xyz");
    expect(window.location.hash).toBe("#/cooldowns");
    expect(takeTokenFromLocation()).toBeNull();
    window.history.replaceState(null, "", "/");
  });

  it("asks for the management token when none is known", async () => {
    const user = userEvent.setup();
    // The app then subscribes to /api/events: never touch the network in tests.
    const fetchMock = vi.fn(() => new Promise<Response>(() => {}));
    vi.stubGlobal("fetch", fetchMock);
    render(
      <Bootstrap initial={{ transport: "http", baseUrl: "http://127.0.0.1:7821", token: null }}>
        <p>app</p>
      </Bootstrap>,
    );
    expect(screen.getByText(/Enter the management token/)).toHaveTextContent("switchyard serve");
    await user.type(screen.getByLabelText("Management token"), "tok-1");
    await user.click(screen.getByRole("button", { name: "Connect" }));
    expect(sessionStorage.getItem(TOKEN_STORAGE_KEY)).toBe("tok-1");
    expect(screen.getByText("app")).toBeInTheDocument();
    await waitFor(() => expect(fetchMock).toHaveBeenCalledWith("http://127.0.0.1:7821/api/events", expect.anything()));
  });
});
