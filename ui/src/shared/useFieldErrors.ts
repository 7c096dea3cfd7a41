// Maps `issues[].path` (JSON pointers such as `/modelLockout/baseCooldownMs`) of an
// ApiError onto form fields; issues no field claims stay form-level.
import { useCallback, useMemo, useState } from "react";
import { ApiError, type Issue } from "../api/ApiError";

function segments(path: string): string[] {
  return path.split("/").slice(1);
}

function isPrefix(prefix: string[], of: string[]): boolean {
  return prefix.length <= of.length && prefix.every((s, i) => s === of[i]);
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
  clear: () => void;
};

export function useFieldErrors(fieldPaths: readonly string[], options: { basePath?: string } = {}): FieldErrors {
  const [error, setErrorState] = useState<ApiError | null>(null);
  const [clientErrors, setClientErrors] = useState<Record<string, string>>({});
  const key = fieldPaths.join("\n");
  const mapped = useMemo(
    () => mapIssues(error?.issues ?? [], key === "" ? [] : key.split("\n"), options.basePath),
    [error, key, options.basePath],
  );
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
    clear,
  };
}
