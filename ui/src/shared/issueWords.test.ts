import { describe, expect, it } from "vitest";
import { ApiError } from "../api/ApiError";
import { errorTitle } from "./fields";
import { inWords, issueField } from "./issueWords";
import { withoutIssues } from "./useFieldErrors";

describe("issue words", () => {
  it("names a field by its label (the rest of the pointer in words), never by its pointer", () => {
    const labels = { "/baseUrl": "Base URL", "/providerSpecific": "Provider options" };
    expect(issueField("/baseUrl", labels)).toBe("Base URL");
    expect(issueField("/providerSpecific/quotaFamilies", labels)).toBe("Provider options › quota families");
    expect(issueField("/models/3", labels)).toBe("Models › entry 4");
    expect(issueField("/rateLimitOverrides/modelConcurrency/a~1b")).toBe("Rate limit overrides › model concurrency › a/b");
    expect(issueField("")).toBe("");
  });

  it("rewrites internal names in messages", () => {
    expect(inWords('required when authKind is "api_key"', [[/authKind is "api_key"/g, "Authentication is “API key”"]])).toBe(
      "required when Authentication is “API key”",
    );
  });

  it("titles a validation error by how many values need a fix, any other by its message", () => {
    const issue = { path: "/a", message: "x" };
    expect(errorTitle(new ApiError("validation_failed", "invalid document: /a: x", [issue]))).toBe(
      "One value needs a fix before this can be saved.",
    );
    expect(errorTitle(new ApiError("validation_failed", "…", [issue, issue]))).toBe(
      "2 values need a fix before this can be saved.",
    );
    expect(errorTitle(new ApiError("conflict", "connection 'a' already exists"))).toBe("connection 'a' already exists");
  });

  it("drops the issues of edited fields; a validation error with none left is gone", () => {
    const e = new ApiError("validation_failed", "…", [
      { path: "/models/2", message: "bad" },
      { path: "/apiKey", message: "required" },
    ]);
    const left = withoutIssues(e, ["/models"]);
    expect(left?.issues).toEqual([{ path: "/apiKey", message: "required" }]);
    expect(withoutIssues(left, ["/apiKey"])).toBeNull();
    expect(withoutIssues(e, ["/name"])).toBe(e);
  });
});
