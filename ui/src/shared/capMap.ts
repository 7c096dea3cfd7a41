// A map of concurrency caps by id (`{ "glm-5": 2 }`) edited as text, one `id=cap` per
// line: a connection's per-model caps and the settings' provider caps. Caps are sent
// as typed (the gateway checks their range); only text that is no `id=cap` at all is
// refused here. The gateway names a bad entry by its id (`/providerConcurrency/glm`),
// so an entry's issues are shown under the text, prefixed by that id.

/** What the entries are (`model`, `provider`) and an example line, for the messages. */
export type CapMapNoun = { noun: string; example: string };

export type ParsedCapMap = {
  /** The caps of the entries that parsed, by id. */
  caps: Record<string, number>;
  /** One message per entry that did not. */
  errors: string[];
};

/** One JSON-pointer segment (RFC 6901): `~` → `~0`, `/` → `~1`. */
export function pointerSegment(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** The issue path of one entry of the map at `path`. */
export function capPath(path: string, key: string): string {
  return `${path}/${pointerSegment(key)}`;
}

/** The text showing a map, one `id=cap` per line. */
export function formatCapMap(caps: Record<string, number> | null | undefined): string {
  return Object.entries(caps ?? {})
    .map(([key, cap]) => `${key}=${cap}`)
    .join("\n");
}

/** Parses `id=cap` entries, one per line or separated by commas; blank ones are skipped. */
export function parseCapMap(text: string, { noun, example }: CapMapNoun): ParsedCapMap {
  const caps = new Map<string, number>();
  const errors: string[] = [];
  text.split(/\r?\n/).forEach((line, index) => {
    for (const entry of line.split(",")) {
      const t = entry.trim();
      if (t === "") continue;
      const where = `Line ${index + 1}`;
      const m = /^([^=\s]+)\s*=\s*(\S*)$/.exec(t);
      if (!m) {
        errors.push(`${where}: write ${noun}=cap, e.g. ${example} (“${t}”).`);
      } else if (!/^\d+$/.test(m[2])) {
        errors.push(`${where}: the cap of ${m[1]} must be a whole number.`);
      } else if (caps.has(m[1])) {
        errors.push(`${where}: ${m[1]} is listed twice.`);
      } else {
        caps.set(m[1], Number(m[2]));
      }
    }
  });
  return { caps: Object.fromEntries(caps), errors };
}

/** The ids a map's text names (the entries whose issues the form shows under it). */
export function capMapKeys(text: string, noun: CapMapNoun): string[] {
  return Object.keys(parseCapMap(text, noun).caps);
}

/** The paths a form claims for a map's issues: the map itself and each entry it names. */
export function capMapPaths(path: string, keys: readonly string[]): string[] {
  return [path, ...keys.map((k) => capPath(path, k))];
}

/**
 * The error text of a map field: the map's own issues, then each entry's, named by
 * its id ("glm: must be 1–100,000 (got 0)"). Undefined when there is none.
 */
export function capMapError(
  fieldError: (path: string) => string | undefined,
  path: string,
  keys: readonly string[],
): string | undefined {
  const parts = [
    fieldError(path),
    ...keys.map((k) => {
      const e = fieldError(capPath(path, k));
      return e ? `${k}: ${e}` : undefined;
    }),
  ].filter(Boolean);
  return parts.length ? parts.join(" ") : undefined;
}
