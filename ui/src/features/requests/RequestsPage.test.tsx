import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it } from "vitest";
import * as f from "../../test/fixtures";
import { callsOf, fails, pending, renderWithIpc } from "../../test/harness";
import { PAGE_SIZE, toQuery, NO_FILTERS } from "./api";
import { RequestsPage } from "./RequestsPage";

const connections = () => [
  f.connection(),
  f.connection({ id: "glm-backup", name: "GLM backup" }),
  f.connection({ id: "glm-old", name: "GLM old" }),
];

const list = () => [
  f.requestEntry({
    requestId: "req-2",
    outcome: "served-after-failover",
    connection: "glm-backup",
    attempts: 2,
    latencyMs: 910,
    at: Date.now() - 1_000,
  }),
  f.requestEntry({
    requestId: "req-1",
    model: "claude-sonnet-4-6",
    route: "/v1/messages",
    status: 503,
    outcome: "refused-by-gateway",
    errorCode: "no-routable-target",
    connection: null,
    attempts: 0,
    latencyMs: 2,
    apiKeyId: null,
    at: Date.now() - 90_000,
  }),
];

const rowOf = (model: string) => screen.getByRole("rowheader", { name: model }).closest("tr")!;
/** The query of the latest `requests_list` call. */
const lastQuery = (calls: { cmd: string; args: Record<string, unknown> }[]) =>
  callsOf(calls, "requests_list").at(-1)!.args.query as Record<string, unknown>;

describe("RequestsPage", () => {
  it("shows a loading state", async () => {
    renderWithIpc(<RequestsPage />, { requests_list: pending });
    expect(screen.getByText("Loading requests…")).toBeInTheDocument();
  });

  it("explains the empty log", async () => {
    renderWithIpc(<RequestsPage />);
    expect(await screen.findByText("No requests yet")).toBeInTheDocument();
    expect(screen.getByRole("link", { name: "Overview" })).toHaveAttribute("href", "#/overview");
  });

  it("shows the error with Retry", async () => {
    renderWithIpc(<RequestsPage />, { requests_list: fails("internal_error", "log unavailable") });
    const alert = await screen.findByRole("alert");
    expect(alert).toHaveTextContent("Could not load requests");
    expect(alert).toHaveTextContent("log unavailable");
  });

  it("lists client requests newest first: outcome as the agent saw it, key and connection by name", async () => {
    renderWithIpc(<RequestsPage />, {
      requests_list: list,
      connections_list: connections,
      keys_list: () => [f.apiKey({ id: "key-1", name: "laptop" })],
    });
    const table = await screen.findByRole("table", { name: "Client requests, newest first" });
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows.map((r) => within(r).getByRole("rowheader").textContent)).toEqual(["glm-5", "claude-sonnet-4-6"]);
    const failover = rowOf("glm-5");
    expect(within(failover).getByText("Served after failover")).toHaveClass("badge-info");
    expect(failover).toHaveTextContent("200");
    await waitFor(() => expect(failover).toHaveTextContent("laptop"));
    expect(failover).toHaveTextContent("GLM backup");
    expect(failover).toHaveTextContent("910 ms");
    const refused = rowOf("claude-sonnet-4-6");
    expect(within(refused).getByText("Refused by gateway")).toHaveClass("badge-danger");
    expect(refused).toHaveTextContent("503");
    expect(refused).toHaveTextContent("no-routable-target");
    expect(refused).toHaveTextContent("1m ago");
    expect(screen.getByText("2 requests shown")).toBeInTheDocument();
  });

  it("is live: the list is refetched every 2 seconds", async () => {
    let n = 0;
    renderWithIpc(<RequestsPage />, {
      requests_list: () => (++n === 1 ? list().slice(1) : list()),
    });
    await screen.findByRole("rowheader", { name: "claude-sonnet-4-6" });
    expect(screen.queryByRole("rowheader", { name: "glm-5" })).not.toBeInTheDocument();
    expect(await screen.findByRole("rowheader", { name: "glm-5" }, { timeout: 4_000 })).toBeInTheDocument();
  });

  it("filters by status, status code, connection, model, client key and time range", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<RequestsPage />, {
      requests_list: list,
      connections_list: connections,
      keys_list: () => [f.apiKey({ id: "key-1", name: "laptop" })],
    });
    await screen.findByRole("table", { name: "Client requests, newest first" });
    expect(lastQuery(calls)).toEqual({
      limit: PAGE_SIZE,
      before: null,
      status: null,
      connection: null,
      model: null,
      key: null,
      since: null,
      until: null,
    });
    await user.selectOptions(screen.getByLabelText("Status"), "error");
    await waitFor(() => expect(lastQuery(calls).status).toBe("error"));
    await user.selectOptions(screen.getByLabelText("Status"), "code");
    await user.type(screen.getByLabelText("Status code"), "42");
    expect(screen.getByLabelText("Status code")).toHaveAccessibleDescription("Enter a status code from 100 to 599.");
    await user.type(screen.getByLabelText("Status code"), "9");
    await waitFor(() => expect(lastQuery(calls).status).toBe("429"));
    await user.selectOptions(await screen.findByLabelText("Connection"), "glm-backup");
    await user.type(screen.getByLabelText("Model"), "glm-5");
    await user.selectOptions(screen.getByLabelText("Client key"), "key-1");
    const before = Date.now();
    await user.selectOptions(screen.getByLabelText("Time"), "15m");
    await waitFor(() => expect(lastQuery(calls).since).not.toBeNull());
    const q = lastQuery(calls);
    expect(q).toMatchObject({ status: "429", connection: "glm-backup", model: "glm-5", key: "key-1", before: null });
    expect(q.since as number).toBeGreaterThanOrEqual(before - 15 * 60_000 - 50);
    expect(q.since as number).toBeLessThanOrEqual(Date.now() - 15 * 60_000);
  });

  it("says when no request matches the filters", async () => {
    const user = userEvent.setup();
    renderWithIpc(<RequestsPage />, { requests_list: (a) => ((a.query as { status: unknown }).status ? [] : list()) });
    await screen.findByRole("table", { name: "Client requests, newest first" });
    await user.selectOptions(screen.getByLabelText("Status"), "ok");
    expect(await screen.findByText("No request matches these filters")).toBeInTheDocument();
  });

  it("loads older requests with Load more (before = the last one shown)", async () => {
    const user = userEvent.setup();
    const page = (from: number, n: number) =>
      Array.from({ length: n }, (_, i) => f.requestEntry({ requestId: `req-${from - i}`, model: `m-${from - i}` }));
    const { calls } = renderWithIpc(<RequestsPage />, {
      requests_list: (a) => ((a.query as { before: unknown }).before === null ? page(100, PAGE_SIZE) : page(50, 3)),
    });
    await screen.findByRole("rowheader", { name: "m-100" });
    expect(screen.queryByRole("rowheader", { name: "m-50" })).not.toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Load more" }));
    expect(await screen.findByRole("rowheader", { name: "m-48" })).toBeInTheDocument();
    expect(callsOf(calls, "requests_list").some((c) => (c.args.query as { before: unknown }).before === "req-51")).toBe(true);
    // A short page is the last one.
    expect(screen.queryByRole("button", { name: "Load more" })).not.toBeInTheDocument();
    expect(screen.getByText(`${PAGE_SIZE + 3} requests shown`)).toBeInTheDocument();
  });

  it("opens a request's detail: every attempt, and why it went where it went", async () => {
    const user = userEvent.setup();
    const { calls } = renderWithIpc(<RequestsPage />, {
      requests_list: list,
      connections_list: connections,
      request_get: () => f.failedOverDetail(),
    });
    await user.click(await screen.findByRole("button", { name: "Details of request req-2" }));
    expect(window.location.hash).toBe("#/requests/req-2");
    const detail = await screen.findByRole("region", { name: "Request detail" });
    await within(detail).findByText("Served after failover");
    expect(callsOf(calls, "request_get")[0].args).toEqual({ requestId: "req-2" });
    expect(detail).toHaveTextContent("the agent received HTTP 200");
    const attempts = within(detail).getByRole("table", { name: "Upstream attempts, in order" });
    const [first, second] = within(attempts).getAllByRole("row").slice(1);
    expect(first).toHaveTextContent(/^1GLM mainglm-mainglmglm-5503300 ms87 Bnot reportedthe upstream failed \(5xx\)$/);
    expect(second).toHaveTextContent(/^2GLM backupglm-backupglmglm-5200600 ms2\.0 KB1,020 in \(900 cached\) · 40 out—$/);
    expect(detail).toHaveTextContent("Model matched ascatalogue");
    expect(detail).toHaveTextContent("Strategypriority");
    const candidates = within(detail).getByRole("table", { name: "Candidates, in plan order" });
    const [c1, c2, c3] = within(candidates).getAllByRole("row").slice(1);
    expect(within(c1).getByText("Failed")).toHaveClass("badge-danger");
    expect(c1).toHaveTextContent(/^1GLM main.*the upstream failed \(5xx\) \(HTTP 503\)$/);
    expect(within(c2).getByText("Served")).toHaveClass("badge-ok");
    expect(c2).toHaveTextContent(/^2GLM backup/);
    expect(within(c3).getByText("Excluded")).toHaveClass("badge-warning");
    expect(c3).toHaveTextContent(/^—GLM old.*cooling down: rate limited by the upstream$/);
    expect(within(detail).getByRole("list", { name: "Further decisions" })).toHaveTextContent("Session pinned to glm-main.");
    expect(rowOf("glm-5")).toHaveClass("row-selected");
    expect(within(detail).getByRole("heading", { name: "Request detail" })).toHaveFocus();
  });

  it("opens the detail named in the address, and says when that request is not in the log", async () => {
    window.location.hash = "#/requests/nope";
    renderWithIpc(<RequestsPage />, {
      request_get: fails("not_found", "request 'nope' is not in the log"),
    });
    const detail = await screen.findByRole("region", { name: "Request detail" });
    expect(await within(detail).findByText("This request is not in the log")).toBeInTheDocument();
    expect(within(detail).getByRole("link", { name: "Close" })).toHaveAttribute("href", "#/requests");
  });

  it("says a request refused by the gateway made no upstream attempt", async () => {
    window.location.hash = "#/requests/req-1";
    renderWithIpc(<RequestsPage />, {
      request_get: () => ({
        request: list()[1],
        attempts: [],
        route: { resolvedAs: "catalogue", strategy: "priority", candidates: [], notes: [] },
      }),
    });
    const detail = await screen.findByRole("region", { name: "Request detail" });
    expect(await within(detail).findByText(/No upstream attempt: the gateway answered the agent itself/)).toHaveTextContent(
      "no-routable-target",
    );
    expect(detail).toHaveTextContent("No connection serves this model name");
  });
});

describe("toQuery", () => {
  it("leaves unset filters out and ignores an invalid status code", () => {
    expect(toQuery({ ...NO_FILTERS, status: "code", code: "4x9" }, "req-9", 1_000_000)).toMatchObject({
      status: null,
      before: "req-9",
      since: null,
    });
    expect(toQuery({ ...NO_FILTERS, range: "1h", model: "  glm-5 " }, null, 10_000_000)).toMatchObject({
      model: "glm-5",
      since: 10_000_000 - 3_600_000,
    });
  });
});
