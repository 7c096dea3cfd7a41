// The one error type every Api method rejects with: the IpcError / management error
// document (`code`, `message`, `issues`), whichever transport produced it.
import type { ValidationIssue } from "../ipc/bindings";

export type Issue = ValidationIssue;

/**
 * The code of a write refused because the document changed since the version it was
 * made to (`If-Match` / `expectedVersion`; HTTP 412): someone else saved first.
 */
export const PRECONDITION_FAILED = "precondition_failed";

/** An error of a management operation, carrying the server's machine code and issues. */
export class ApiError extends Error {
  readonly code: string;
  readonly issues: Issue[];
  /** HTTP status, when the error came over HTTP. */
  readonly status: number | null;

  constructor(code: string, message: string, issues: Issue[] = [], status: number | null = null) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.issues = issues;
    this.status = status;
  }

  /** Whether the server rejected a document field by field. */
  get isValidation(): boolean {
    return this.code === "validation_failed";
  }

  /** Whether the write was refused because the document changed elsewhere (412). */
  get isPreconditionFailed(): boolean {
    return this.code === PRECONDITION_FAILED;
  }

  /**
   * Builds an ApiError from anything a transport may reject with: an error document,
   * a bare string (Tauri reports unknown commands that way), or an Error.
   */
  static from(value: unknown, status: number | null = null): ApiError {
    if (value instanceof ApiError) return value;
    if (isErrorDocument(value)) {
      return new ApiError(value.code, value.message, normalizeIssues(value.issues), status);
    }
    if (typeof value === "string") return new ApiError("ipc_error", value, [], status);
    if (value instanceof Error) return new ApiError("client_error", value.message, [], status);
    return new ApiError("unknown_error", "Unexpected error from the gateway.", [], status);
  }
}

/** Whether `e` is a write refused because the document changed elsewhere (412). */
export function isPreconditionFailed(e: unknown): boolean {
  return e instanceof ApiError && e.isPreconditionFailed;
}

function isErrorDocument(v: unknown): v is { code: string; message: string; issues?: unknown } {
  return (
    typeof v === "object" &&
    v !== null &&
    typeof (v as { code?: unknown }).code === "string" &&
    typeof (v as { message?: unknown }).message === "string"
  );
}

function normalizeIssues(raw: unknown): Issue[] {
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((i): i is Issue => typeof i === "object" && i !== null && typeof i.path === "string")
    .map((i) => ({ path: i.path, message: String(i.message ?? "") }));
}

/**
 * An error in words for a notice: the message, then each issue's own message (the
 * gateway explains a missing or unreadable file there) when it adds something.
 */
export function errorText(e: unknown): string {
  const err = ApiError.from(e);
  const extra = err.issues.map((i) => i.message.trim()).filter((m) => m !== "" && !err.message.includes(m));
  const message = err.message.replace(/\.?\s*$/, ".");
  return extra.length ? `${message} ${extra.map((m) => m.replace(/\.?\s*$/, ".")).join(" ")}` : message;
}
