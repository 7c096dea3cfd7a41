import { describe, expect, it } from "vitest";
import * as f from "../test/fixtures";
import { databasePoll } from "./sharedQueries";

describe("databasePoll", () => {
  it("does not poll with SQLite (or before the health document has loaded)", () => {
    expect(databasePoll(f.health())).toBe(false);
    expect(databasePoll(undefined)).toBe(false);
  });

  it("polls in team mode, sooner while the shared database is unavailable", () => {
    const ok = databasePoll(f.health({ databaseBackend: "postgres", replica: "r-1" }));
    const lost = databasePoll(f.health({ databaseBackend: "postgres", database: "unavailable", replica: "r-1" }));
    expect(ok).toBe(15_000);
    expect(lost).toBe(5_000);
  });
});
