import { act, renderHook } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { ApiError } from "../api/ApiError";
import { mapIssues, useFieldErrors } from "./useFieldErrors";

const FIELDS = ["/modelLockout/baseCooldownMs", "/modelLockout/maxCooldownMs", "/modelLockout/errorCodes", "/models"];

describe("mapIssues", () => {
  it("puts an issue on the field with the same JSON pointer", () => {
    const m = mapIssues([{ path: "/modelLockout/baseCooldownMs", message: "must be a whole number from 5,000 to 600,000 ms (got 1)" }], FIELDS);
    expect(m.byField["/modelLockout/baseCooldownMs"]).toEqual(["must be a whole number from 5,000 to 600,000 ms (got 1)"]);
    expect(m.unmatched).toEqual([]);
  });

  it("puts list-item issues on the list field (longest segment prefix)", () => {
    const m = mapIssues(
      [
        { path: "/modelLockout/errorCodes/2", message: "must be a whole number from 100 to 599" },
        { path: "/models/0", message: "must be 1–200 characters" },
      ],
      FIELDS,
    );
    expect(m.byField["/modelLockout/errorCodes"]).toEqual(["must be a whole number from 100 to 599"]);
    expect(m.byField["/models"]).toEqual(["must be 1–200 characters"]);
  });

  it("does not match on a partial segment", () => {
    const m = mapIssues([{ path: "/modelLockout/baseCooldownMsX", message: "x" }], FIELDS);
    expect(m.unmatched).toHaveLength(1);
  });

  it("keeps unknown paths and the document root form-level", () => {
    const issues = [
      { path: "/providerSpecific", message: "must be a JSON object" },
      { path: "", message: "maxCooldownMs must be ≥ baseCooldownMs" },
    ];
    const m = mapIssues(issues, FIELDS);
    expect(m.unmatched).toEqual(issues);
    expect(m.byField).toEqual({});
  });

  it("accepts paths relative to a base document", () => {
    const m = mapIssues([{ path: "/maxCooldownMs", message: "too big" }], FIELDS, "/modelLockout");
    expect(m.byField["/modelLockout/maxCooldownMs"]).toEqual(["too big"]);
  });
});

describe("useFieldErrors", () => {
  it("maps an ApiError's issues and clears them", () => {
    const { result } = renderHook(() => useFieldErrors(FIELDS));
    act(() =>
      result.current.setError(
        new ApiError("validation_failed", "invalid", [
          { path: "/modelLockout/maxCooldownMs", message: "must be ≥ baseCooldownMs" },
          { path: "/elsewhere", message: "unknown field" },
        ]),
      ),
    );
    expect(result.current.fieldError("/modelLockout/maxCooldownMs")).toBe("must be ≥ baseCooldownMs");
    expect(result.current.fieldError("/modelLockout/baseCooldownMs")).toBeUndefined();
    expect(result.current.formIssues).toEqual([{ path: "/elsewhere", message: "unknown field" }]);
    act(() => result.current.clear());
    expect(result.current.hasErrors).toBe(false);
    expect(result.current.fieldError("/modelLockout/maxCooldownMs")).toBeUndefined();
  });

  it("wraps a raw IpcError document and shows client-side errors", () => {
    const { result } = renderHook(() => useFieldErrors(FIELDS));
    act(() => result.current.setError({ code: "validation_failed", message: "bad", issues: [{ path: "/models", message: "m" }] }));
    expect(result.current.error?.code).toBe("validation_failed");
    expect(result.current.fieldError("/models")).toBe("m");
    act(() => result.current.setClientErrors({ "/models": "Enter model ids." }));
    expect(result.current.fieldError("/models")).toBe("m Enter model ids.");
  });
});
