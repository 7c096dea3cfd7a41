// A validation issue in words: its field by the label the form shows (not its JSON
// pointer), and its message without the API's internal names.

/** "rateLimitOverrides" → "rate limit overrides"; "3" → "entry 4". */
function segmentWords(segment: string): string {
  const s = segment.replace(/~1/g, "/").replace(/~0/g, "~");
  if (/^\d+$/.test(s)) return `entry ${Number(s) + 1}`;
  return s
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .toLowerCase();
}

/**
 * The field an issue is about, in words: the label of the longest `labels` path that
 * is a segment-wise prefix of `path` (with the rest in words after it), else the
 * pointer's segments in words ("/rateLimitOverrides/maxWaitMs" → "Rate limit
 * overrides › max wait ms"). "" for a document-wide issue.
 */
export function issueField(path: string, labels: Record<string, string> = {}): string {
  const segs = path.split("/").slice(1).filter((s) => s !== "");
  if (segs.length === 0) return "";
  for (let n = segs.length; n > 0; n--) {
    const label = labels[`/${segs.slice(0, n).join("/")}`];
    if (label !== undefined) return [label, ...segs.slice(n).map(segmentWords)].join(" › ");
  }
  const words = segs.map(segmentWords).join(" › ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Rewrites of the API's internal names in issue messages (field and value names). */
export type Vocabulary = [RegExp, string][];

/** Applies `vocabulary` to a message. */
export function inWords(message: string, vocabulary: Vocabulary): string {
  return vocabulary.reduce((m, [pattern, words]) => m.replace(pattern, words), message);
}
