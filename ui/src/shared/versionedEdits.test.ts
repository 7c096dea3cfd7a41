import { describe, expect, it } from "vitest";
import { addEdits, applyEdits, hasConflict, isDirty, rebaseEdits } from "./versionedEdits";

const same = Object.is;

describe("versioned edits", () => {
  const loaded = { a: "1", b: "2", on: false };

  it("keep the value a field had when the user first changed it, and the version they began at", () => {
    let s = addEdits(null, loaded, 5, { a: "10" });
    s = addEdits(s, { ...loaded, a: "1" }, 6, { a: "11", on: true });
    expect(s).toEqual({ version: 5, edits: { a: { from: "1", to: "11" }, on: { from: false, to: true } } });
    expect(applyEdits(loaded, s)).toEqual({ a: "11", b: "2", on: true });
    expect(applyEdits(loaded, null)).toBe(loaded);
  });

  it("show untouched fields as they are now; a change elsewhere to them is no conflict", () => {
    const s = addEdits(null, loaded, 5, { a: "10" });
    const now = { ...loaded, b: "20" };
    expect(applyEdits(now, s)).toEqual({ a: "10", b: "20", on: false });
    expect(hasConflict(s, now, same)).toBe(false);
    expect(isDirty(s, now, same)).toBe(true);
  });

  it("conflict when a field the user changed was changed elsewhere to another value", () => {
    const s = addEdits(null, loaded, 5, { a: "10" });
    expect(hasConflict(s, { ...loaded, a: "7" }, same)).toBe(true);
    // Changed elsewhere to the user's own value: nothing to lose, nothing left to save.
    expect(hasConflict(s, { ...loaded, a: "10" }, same)).toBe(false);
    expect(isDirty(s, { ...loaded, a: "10" }, same)).toBe(false);
  });

  it("rebase onto a fresh document: changes start from its values, ones it already holds drop", () => {
    const s = addEdits(null, loaded, 5, { a: "10", on: true });
    const fresh = { a: "7", b: "2", on: true };
    expect(rebaseEdits(s, fresh, 8, same)).toEqual({ version: 8, edits: { a: { from: "7", to: "10" } } });
    expect(rebaseEdits(s, { ...fresh, a: "10" }, 8, same)).toBeNull();
    expect(rebaseEdits(null, fresh, 8, same)).toBeNull();
  });
});
