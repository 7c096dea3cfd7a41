// Maps `issues[].path` (JSON pointers such as `/modelLockout/baseCooldownMs`) of an
// ApiError onto form fields; issues no field claims stay form-level. A field's
// problems clear as soon as the user edits it (`clearPaths`); messages can be put in
// the form's words (`vocabulary`).
import { useCallback, useMemo, useState } from "react";
import { ApiError, type Issue } from "../api/ApiError";
import { inWords, type Vocabulary } from "./issueWords";

function segments(path: string): string[] {
  return path.split("/").slice(1);
}

function isPrefix(prefix: string[], of: string[]): boolean {
  return prefix.length <= of.length && prefix.every((s, i) => s === of[i]);
}

/** Whether `path` is one of `paths` or lies under one (segment-wise). */
function isUnder(path: string, paths: readonly string[]): boolean {
  const segs = segments(path);
  return paths.some((p) => isPrefix(segments(p), segs));
}

/**
 * The error without the issues under `paths`: null when it was a validation error
 * and none remains (every problem it named has been edited since).
 */
export function withoutIssues(error: ApiError | null, paths: readonly string[]): ApiError | null {
  if (error === null || error.issues.length === 0) return error;
  const remaining = error.issues.filter((i) => !isUnder(i.path, paths));
  if (remaining.length === error.issues.length) return error;
  if (remaining.length === 0 && error.isValidation) return null;
  return new ApiError(error.code, error.message, remaining, error.status);
}

export type MappedIssues = {
  /** Messages per field path. */
  byField: Record<string, string[]>;
  /** Issues that belong to no field. */
  unmatched: Issue[];
};

/**
 * Assigns every issue to the field whose path is the longest segment-wise prefix of
 * the issue's path (so `/models/3` lands on `/models`). With `basePath`, issue paths
 * relative to that document (`/baseCooldownMs` under `/modelLockout`) match too.
 */
export function mapIssues(issues: Issue[], fieldPaths: readonly string[], basePath = ""): MappedIssues {
  const byField: Record<string, string[]> = {};
  const unmatched: Issue[] = [];
  const fields = fieldPaths.map((p) => ({ path: p, segs: segments(p) }));
  for (const issue of issues) {
    const candidates = [issue.path];
    if (basePath && !issue.path.startsWith(`${basePath}/`) && issue.path !== basePath) {
      candidates.unshift(`${basePath}${issue.path}`);
    }
    let best: string | null = null;
    let bestLen = -1;
    for (const candidate of candidates) {
      const segs = segments(candidate);
      for (const f of fields) {
        if (f.segs.length > bestLen && f.segs.length > 0 && isPrefix(f.segs, segs)) {
          best = f.path;
          bestLen = f.segs.length;
        }
      }
      if (best !== null) break;
    }
    if (best === null) unmatched.push(issue);
    else (byField[best] ??= []).push(issue.message);
  }
  return { byField, unmatched };
}

export type FieldErrors = {
  /** The last server error (null after a success or `clear`). */
  error: ApiError | null;
  /** The error text of one field: server issues and client-side checks. */
  fieldError: (path: string) => string | undefined;
  /** Issues no field claims. */
  formIssues: Issue[];
  /** Whether anything is wrong. */
  hasErrors: boolean;
  /** Records a failed save (non-ApiErrors are wrapped). */
  setError: (e: unknown) => void;
  /** Client-side problems found before sending (path → message). */
  setClientErrors: (errors: Record<string, string>) => void;
  /** Forgets the problems of these fields (and of fields under them): the user edited them. */
  clearPaths: (paths: readonly string[]) => void;
  clear: () => void;
};

export function useFieldErrors(
  fieldPaths: readonly string[],
  options: { basePath?: string; vocabulary?: Vocabulary } = {},
): FieldErrors {
  const [error, setErrorState] = useState<ApiError | null>(null);
  const [clientErrors, setClientErrors] = useState<Record<string, string>>({});
  const key = fieldPaths.join("\n");
  const { vocabulary } = options;
  const mapped = useMemo(() => {
    const issues = (error?.issues ?? []).map((i) => (vocabulary ? { ...i, message: inWords(i.message, vocabulary) } : i));
    return mapIssues(issues, key === "" ? [] : key.split("\n"), options.basePath);
  }, [error, key, options.basePath, vocabulary]);
  const fieldError = useCallback(
    (path: string) => {
      const parts = [...(mapped.byField[path] ?? [])];
      if (clientErrors[path]) parts.push(clientErrors[path]);
      return parts.length ? parts.join(" ") : undefined;
    },
    [mapped, clientErrors],
  );
  const setError = useCallback((e: unknown) => {
    setClientErrors({});
    setErrorState(ApiError.from(e));
  }, []);
  const clearPaths = useCallback((paths: readonly string[]) => {
    setErrorState((e) => withoutIssues(e, paths));
    setClientErrors((c) => {
      const kept = Object.fromEntries(Object.entries(c).filter(([p]) => !isUnder(p, paths)));
      return Object.keys(kept).length === Object.keys(c).length ? c : kept;
    });
  }, []);
  const clear = useCallback(() => {
    setErrorState(null);
    setClientErrors({});
  }, []);
  return {
    error,
    fieldError,
    formIssues: mapped.unmatched,
    hasErrors: error !== null || Object.keys(clientErrors).length > 0,
    setError,
    setClientErrors,
    clearPaths,
    clear,
  };
}
